"""Helpers the dynamic matmul, softmax and reduce kernels share: an element count as a float, a row
map whose length is only known at run time, a dim's value when it is known. Dims that must agree
(`Agreements`), products of dims and column loops live in codegen/llvm/dims.py and common.py (one
builder per kernel family takes int or Expr dims); they are re-exported here for the dynamic/
builders not yet merged into theirs.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.llvm.common import (F32, I32, float_vector, for_columns, for_range, load_f32,  # noqa: F401
                                         store_f32, vector_end)
from iree_py.codegen.llvm.dims import Agreements, product  # noqa: F401 (re-exported)
from iree_py.targets import Target
from iree_py.ir.symbols import dim
from iree_py.ir.types import Dim


def count_to_f32(b: ir.IRBuilder, count: ir.Value, target: Target) -> ir.Value:
    """An i64 element count (>= 0) as a float. 32-bit targets convert from i32: an i64 conversion
    would need a compiler builtin there."""
    if target.pointer_bits >= 64:
        return b.uitofp(count, F32)
    return b.uitofp(b.trunc(count, I32), F32)


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


def static_value(d: Dim) -> int | None:
    d = dim(d)
    return d if isinstance(d, int) else None
