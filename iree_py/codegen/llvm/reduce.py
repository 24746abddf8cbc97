"""The "reduce" kernel: sum mean max min prod l1 l2 logsum logsumexp sumsquare over a contiguous
run of axes, seen as [outer, reduced, inner], f32 or f64, dims ints or Exprs; and the row fold
the softmax and pool kernels share (reduce_row).

One workgroup per outer index (grid x = outer). f32: inner == 1 folds along the contiguous reduced
run with a vector accumulator and a scalar tail (reduce_row); otherwise the inner positions are
vectorized, both paths compiled when inner is symbolic and chosen at run time. f64 folds one inner
position at a time in scalars, with exp/log from math_f64.py and sqrt/fabs as LLVM intrinsics, so
every step is accurate to double precision. logsumexp is stable: log(sum(exp(x - m))) + m with m
the (finite) max. mean: f32 multiplies by the reciprocal of the count, f64 divides by it.

Dims are ints or Exprs (one builder for both, docs/dynamic_shapes.md §3): an int folds to a
constant, so a known size splits into vectors and tail when the kernel is built. An empty
reduction gives the reducer's start value after its finish: sum 0, prod 1, max -inf, min +inf,
logsum and logsumexp -inf, mean NaN (0 / 0), as numpy's with an initial value.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (ALIGN, F32, I32, element_ptr, entry_alloca, for_columns, for_range,
                                         has_vectors, horizontal, lanes_f32, load_f32, rows_or_columns, splat,
                                         splat_value, vector_end)
from iree_py.codegen.llvm.dims import Agreements, begin_dynamic_kernel, product
from iree_py.codegen.llvm.math import emit_exp, fmax
from iree_py.codegen.llvm.math_core import emit_log, fabs, fmin, fsqrt
from iree_py.codegen.llvm.math_f64 import exp_f64, log_f64
from iree_py.codegen.llvm.typed_values import F64, const
from iree_py.ir.symbols import dim
from iree_py.ir.types import Dim, DType
from iree_py.targets import Target

Unary = Callable[[ir.IRBuilder, ir.Value], ir.Value]
Combine = Callable[[ir.IRBuilder, ir.Value, ir.Value], ir.Value]


def reduce_row(b: ir.IRBuilder, src: ir.Value, base: ir.Value, length: int | ir.Value, lanes: int, init: float,
               combine, value_of) -> ir.Value:
    """Fold value_of(loaded x, index) over a contiguous row of `length` floats at `base`: a vector
    accumulator over the whole vectors, then a scalar tail. `length` is a static int or a run-time
    i64: the vector part then ends at the largest multiple of `lanes` <= length."""
    vec_len = vector_end(b, length, lanes)
    acc = entry_alloca(b, F32)
    b.store(splat(init, F32), acc)
    if has_vectors(vec_len, lanes):
        vty = ir.VectorType(F32, lanes)
        vacc = entry_alloca(b, vty)
        b.store(splat(init, vty), vacc)
        with for_range(b, 0, vec_len, step=lanes, name="v") as j:
            idx = b.add(base, j)
            b.store(combine(b, b.load(vacc), value_of(load_f32(b, src, idx, vty), idx)), vacc)
        b.store(horizontal(b, b.load(vacc), combine), acc)
    with for_range(b, vec_len, length, name="t") as j:
        idx = b.add(base, j)
        b.store(combine(b, b.load(acc), value_of(load_f32(b, src, idx), idx)), acc)
    return b.load(acc)


def _intrinsic(name: str) -> Unary:
    """The f64 LLVM intrinsic `llvm.NAME.f64`."""
    def emit(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
        module = b.block.function.module
        full = f"llvm.{name}.f64"
        fn = module.globals.get(full) or ir.Function(module, ir.FunctionType(F64, [F64]), name=full)
        return b.call(fn, [x])
    return emit


@dataclass(frozen=True)
class Floats:
    """A float dtype a reduction computes in: its LLVM scalar type, whether it folds with vectors,
    and the math it needs."""

    scalar: ir.Type
    vectors: bool
    exp: Unary
    log: Unary
    fabs: Unary
    sqrt: Unary

    def load(self, b: ir.IRBuilder, base: ir.Value, index: ir.Value, ty: ir.Type | None = None) -> ir.Value:
        return b.load(element_ptr(b, base, index, self.scalar), typ=ty or self.scalar, align=ALIGN)

    def store(self, b: ir.IRBuilder, value: ir.Value, base: ir.Value, index: ir.Value) -> None:
        b.store(value, element_ptr(b, base, index, self.scalar), align=ALIGN)

    def count(self, b: ir.IRBuilder, count: ir.Value, target: Target) -> ir.Value:
        """An i64 element count (>= 0) as a float. 32-bit targets convert from i32: an i64
        conversion would need a compiler builtin there."""
        if target.pointer_bits >= 64:
            return b.uitofp(count, self.scalar)
        return b.uitofp(b.trunc(count, I32), self.scalar)

    def mean(self, b: ir.IRBuilder, acc: ir.Value, count: int | ir.Value, target: Target) -> ir.Value:
        """acc / count: f32 multiplies by the reciprocal (a constant for a known count), f64 divides."""
        if self.scalar == F64:
            return b.fdiv(acc, const(float(count), F64) if isinstance(count, int) else self.count(b, count, target))
        if isinstance(count, int):
            return b.fmul(acc, const(1.0 / count if count else float("nan"), acc.type))
        return b.fmul(acc, splat_value(b, b.fdiv(const(1.0, F32), self.count(b, count, target)), acc.type))


FLOATS: dict[DType, Floats] = {
    DType.f32: Floats(F32, True, emit_exp, emit_log, fabs, fsqrt),
    DType.f64: Floats(F64, False, exp_f64, log_f64, _intrinsic("fabs"), _intrinsic("sqrt")),
}


@dataclass(frozen=True)
class Reducer:
    init: float
    combine: Combine                                             # (accumulator, value) -> accumulator
    value_of: Callable[[Floats, ir.IRBuilder, ir.Value], ir.Value]   # applied to each loaded x
    finish: Callable[[Floats, ir.IRBuilder, ir.Value], ir.Value]     # the accumulator -> the result (mean: same)


def _add(b, x, y):
    return b.fadd(x, y)


def _mul(b, x, y):
    return b.fmul(x, y)


def _same(fl, b, x):
    return x


def _square(fl, b, x):
    return b.fmul(x, x)


REDUCERS: dict[str, Reducer] = {
    "sum": Reducer(0.0, _add, _same, _same),
    "mean": Reducer(0.0, _add, _same, _same),
    "max": Reducer(float("-inf"), fmax, _same, _same),   # NaN in the accumulator stays
    "min": Reducer(float("inf"), fmin, _same, _same),
    "prod": Reducer(1.0, _mul, _same, _same),
    "l1": Reducer(0.0, _add, lambda fl, b, x: fl.fabs(b, x), _same),
    "l2": Reducer(0.0, _add, _square, lambda fl, b, acc: fl.sqrt(b, acc)),
    "logsum": Reducer(0.0, _add, _same, lambda fl, b, acc: fl.log(b, acc)),
    "sumsquare": Reducer(0.0, _add, _square, _same),
}
KINDS = (*REDUCERS, "logsumexp")

# fold(reducer, value_of) -> the accumulator of one output element (or vector of them)
Fold = Callable[[Reducer, Unary], ir.Value]


def reduce_value(b: ir.IRBuilder, fl: Floats, kind: str, fold: Fold) -> ir.Value:
    """One output element (or vector of them) before the mean's division: the reducer's finish, or
    for logsumexp log(sum(exp(x - m))) + m with m the max where it is finite."""
    if kind != "logsumexp":
        r = REDUCERS[kind]
        return r.finish(fl, b, fold(r, lambda bb, x: r.value_of(fl, bb, x)))
    mx = fold(REDUCERS["max"], lambda bb, x: x)
    finite = b.fcmp_ordered("<", fl.fabs(b, mx), const(float("inf"), mx.type))
    shift = b.select(finite, mx, const(0.0, mx.type))

    def shifted_exp(bb: ir.IRBuilder, x: ir.Value) -> ir.Value:
        by = shift if x.type == shift.type else splat_value(bb, shift, x.type)
        return fl.exp(bb, bb.fsub(x, by))

    total = fold(REDUCERS["sum"], shifted_exp)
    return b.fadd(fl.log(b, total), shift)


def collapse(shape: tuple[Dim, ...], axes: list[int], what: str) -> tuple[Dim, Dim, Dim]:
    """(outer, reduced, inner) of a reduction over a contiguous run of axes; a dim between the axes
    must be a known 1."""
    if not axes or axes != sorted(set(axes)) or not all(0 <= a < len(shape) for a in axes):
        raise ValueError(f"{what}: axes {axes} must be sorted, unique, non-empty and within rank {len(shape)}")
    gaps = [i for i in range(axes[0], axes[-1] + 1) if i not in axes and dim(shape[i]) != 1]
    if gaps:
        raise ValueError(f"{what}: axes {axes} of shape {list(shape)} are not one contiguous run "
                         f"(dims {gaps} lie between them and are not 1); transpose first")
    return product(shape[:axes[0]]), product([shape[a] for a in axes]), product(shape[axes[-1] + 1:])


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"reduce kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    x, y = spec.inputs[0], spec.outputs[0]
    fl = FLOATS.get(x.dtype)
    if fl is None or y.dtype != x.dtype:
        raise CompileError(f"{what}: only f32 and f64 are supported, got {x} -> {y}")
    kind = spec.attrs.get("kind")
    if kind not in KINDS:
        raise ValueError(f"{what}: kind {kind!r} is not one of {list(KINDS)}")
    outer_d, reduced_d, inner_d = collapse(tuple(x.shape), [int(a) for a in spec.attrs["axes"]], what)
    agree = Agreements(what)
    agree.equal(y.element_count, product((outer_d, inner_d)), "the output's element count")
    lanes = lanes_f32(target) if fl.vectors else 1

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    agree.emit(dk)
    src, dst = dk.binding(0), dk.binding(1)
    reduced, inner = dk.dim(reduced_d), dk.dim(inner_d)
    count = reduced_d if isinstance(reduced_d, int) else reduced
    o = dk.workgroup_id_index(0)
    base = b.mul(o, dk.dim(product((reduced_d, inner_d))))

    def result(fold: Fold) -> ir.Value:
        value = reduce_value(b, fl, kind, fold)
        return fl.mean(b, value, count, target) if kind == "mean" else value

    def by_rows() -> None:  # inner == 1: vectors along the reduced run
        value = result(lambda r, value_of: reduce_row(b, src, base, count, lanes, r.init, r.combine,
                                                      lambda v, idx: value_of(b, v)))
        fl.store(b, value, dst, o)

    def by_columns() -> None:  # vectors across the inner positions (f64: one at a time)
        out_base = b.mul(o, inner)

        def columns(ty: ir.Type, col: ir.Value) -> None:
            def fold(r: Reducer, value_of: Unary) -> ir.Value:
                acc = entry_alloca(b, ty)
                b.store(const(r.init, ty), acc)
                with for_range(b, 0, count, name="r") as j:
                    v = fl.load(b, src, b.add(b.add(base, b.mul(j, inner)), col), ty)
                    b.store(r.combine(b, b.load(acc), value_of(b, v)), acc)
                return b.load(acc)
            fl.store(b, result(fold), dst, b.add(out_base, col))

        for_columns(b, inner_d if isinstance(inner_d, int) else inner, lanes, columns, fl.scalar)

    if fl.vectors:
        rows_or_columns(b, inner_d if isinstance(inner_d, int) else inner, by_rows, by_columns)
    else:
        by_columns()
    dk.finish()
    return dk.info(workgroup_count=(outer_d, 1, 1))
