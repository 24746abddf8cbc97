"""Helpers the dynamic matmul, softmax, reduce and lrn kernels share: dims that must agree (checked
at build time when both are known, else in the kernel body, which then returns STATUS_DISPATCH_REFUSED without
touching memory), products of dims, and row loops whose length is only known at run time.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from llvmlite import ir

from iree_py.codegen.kernel_abi import STATUS_DISPATCH_REFUSED
from iree_py.codegen.llvm.common import (F32, I1, I32, const_i32, const_i64, float_vector, for_range, load_f32,
                                         store_f32)
from iree_py.codegen.llvm.dynamic.common import DynamicKernel
from iree_py.targets import Target
from iree_py.ir.symbols import Expr, dim
from iree_py.ir.types import Dim


def product(dims: Iterable[Dim]) -> Dim:
    """The product of `dims` as a canonical dim (1 for none)."""
    total = Expr.of(1)
    for d in dims:
        total = total * d
    return dim(total)


@dataclass
class Agreements:
    """Dims that must agree, for one kernel. `equal(x, y)` / `one_or_equal(x, y)` raise at build
    time when both sides are known and disagree, drop the check when they are known to agree, and
    otherwise keep it for `emit`, which makes the kernel return STATUS_DISPATCH_REFUSED before it reads or
    writes anything when a check fails at run time (the VM's dim checks normally catch that first)."""

    what: str
    pending: list[tuple[Dim, Dim, bool, str]] = field(default_factory=list)

    def equal(self, x: Dim, y: Dim, which: str) -> None:
        self._add(x, y, False, which)

    def one_or_equal(self, x: Dim, y: Dim, which: str) -> None:
        """x == y, or x == 1 (x broadcasts to y)."""
        self._add(x, y, True, which)

    def _add(self, x: Dim, y: Dim, allow_one: bool, which: str) -> None:
        x, y = dim(x), dim(y)
        if x == y or (allow_one and x == 1):
            return
        if isinstance(x, int) and isinstance(y, int):
            wanted = f"{y} (or 1)" if allow_one else f"{y}"
            raise ValueError(f"{self.what}: {which} is {x}, expected {wanted}")
        self.pending.append((x, y, allow_one, which))

    def emit(self, dk: DynamicKernel) -> None:
        if not self.pending:
            return
        b = dk.builder
        ok: ir.Value = ir.Constant(I1, 1)
        for x, y, allow_one, _ in self.pending:
            xv, yv = dk.dim(x), dk.dim(y)
            holds = b.icmp_signed("==", xv, yv)
            if allow_one:
                holds = b.or_(holds, b.icmp_signed("==", xv, const_i64(1)))
            ok = b.and_(ok, holds)
        fn = b.function
        bad = fn.append_basic_block("dims_disagree")
        good = fn.append_basic_block("dims_agree")
        b.cbranch(ok, good, bad)
        b.position_at_end(bad)
        b.ret(const_i32(STATUS_DISPATCH_REFUSED))
        b.position_at_end(good)


def count_to_f32(b: ir.IRBuilder, count: ir.Value, target: Target) -> ir.Value:
    """An i64 element count (>= 0) as a float. 32-bit targets convert from i32: an i64 conversion
    would need a compiler builtin there."""
    if target.pointer_bits >= 64:
        return b.uitofp(count, F32)
    return b.uitofp(b.trunc(count, I32), F32)


def vector_end(b: ir.IRBuilder, length: ir.Value, lanes: int) -> ir.Value:
    """The largest multiple of `lanes` <= length (length >= 0); 0 without vectors."""
    if lanes <= 1:
        return const_i64(0)
    return b.mul(b.udiv(length, const_i64(lanes)), const_i64(lanes))


def map_row(b: ir.IRBuilder, src: ir.Value, dst: ir.Value, base: ir.Value, length: ir.Value, lanes: int,
            fn) -> None:
    """dst[base + i] = fn(src[base + i]) for i < length; fn gets a vector or, in the tail, a scalar."""
    vec_len = vector_end(b, length, lanes)
    if lanes > 1:
        vty = float_vector(lanes)
        with for_range(b, 0, vec_len, step=lanes, name="n") as j:
            idx = b.add(base, j)
            store_f32(b, fn(load_f32(b, src, idx, vty)), dst, idx)
    with for_range(b, vec_len, length, name="nt") as j:
        idx = b.add(base, j)
        store_f32(b, fn(load_f32(b, src, idx)), dst, idx)


def for_columns(b: ir.IRBuilder, inner: ir.Value, lanes: int, body) -> None:
    """body(ty, col) for vectors of `lanes` inner positions, then for each remaining position."""
    vec_inner = vector_end(b, inner, lanes)
    if lanes > 1:
        with for_range(b, 0, vec_inner, step=lanes, name="c") as col:
            body(float_vector(lanes), col)
    with for_range(b, vec_inner, inner, name="ct") as col:
        body(F32, col)


def static_value(d: Dim) -> int | None:
    d = dim(d)
    return d if isinstance(d, int) else None
