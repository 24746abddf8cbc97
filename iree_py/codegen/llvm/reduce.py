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

The "reduce_rt" kernel (build_runtime_axes): a reduction whose axes arrive at run time as a mask
(op ReduceRuntimeAxes, iree_py/ir/ops/reduce.py), with the same kinds and reducers, f32 or f64
(scalar double precision throughout). Bindings: X (f32 or f64, rank R, dims ints or Exprs), mask
(i64[R], non-zero = reduced), Y. The rank is known at compile time, so the kernel is 2R nested
loops with run-time extents: for each axis, the output loops run over d (kept) or 1 (reduced) and
the reduction loops over 1 or d. Y is written row-major over the kept axes, which is its layout
for keepdims 0 and 1 alike. One workgroup. Before touching memory the kernel checks that the
mask's output element count equals Y's (computed from the push constants, which the guard checked
against the binding lengths); otherwise it returns without writing. An empty reduction gives the
reducer's start value after its finish, as above.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (ALIGN, F32, I32, I64, const_i64, element_ptr, entry_alloca, for_columns,
                                         for_range, has_vectors, horizontal, lanes_f32, load_f32, rows_or_columns,
                                         splat, splat_value, vector_end)
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


# --- reduce_rt: the axes as a run-time mask ------------------------------------------------------


@dataclass
class MaskedAxes:
    """X's run-time strides split by the axes mask: the extents each output element walks over
    (kept: 1 on reduced axes; reduced: 1 on kept axes) and the element counts of both."""

    strides: list[ir.Value]
    kept_extent: list[ir.Value]
    reduced_extent: list[ir.Value]
    out_count: ir.Value
    count: ir.Value


def masked_axes(b: ir.IRBuilder, dims: list[ir.Value], flags: ir.Value) -> MaskedAxes:
    """`flags`: the i64[rank] mask binding (nonzero = reduced)."""
    one, zero, rank = const_i64(1), const_i64(0), len(dims)
    strides: list[ir.Value] = [one] * rank
    for axis in range(rank - 2, -1, -1):
        strides[axis] = b.mul(strides[axis + 1], dims[axis + 1])
    reduced = [b.icmp_signed("!=", b.load(element_ptr(b, flags, axis, I64), typ=I64, align=ALIGN), zero)
               for axis in range(rank)]
    kept_extent = [b.select(r, one, d) for r, d in zip(reduced, dims)]
    reduced_extent = [b.select(r, d, one) for r, d in zip(reduced, dims)]
    out_count, count = one, one
    for k, r in zip(kept_extent, reduced_extent):
        out_count, count = b.mul(out_count, k), b.mul(count, r)
    return MaskedAxes(strides, kept_extent, reduced_extent, out_count, count)


def _nested(b: ir.IRBuilder, extents: list[ir.Value], strides: list[ir.Value], base: ir.Value,
            body: Callable[[ir.Value], None], name: str) -> None:
    """Loops over `extents` (outermost first); body(offset) with offset = base + sum(index * stride)."""
    if not extents:
        body(base)
        return
    with for_range(b, 0, extents[0], name=f"{name}{len(extents)}") as i:
        _nested(b, extents[1:], strides[1:], b.add(base, b.mul(i, strides[0])), body, name)


def build_runtime_axes(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    """The "reduce_rt" kernel (see the module docstring)."""
    what = f"reduce_rt kernel {spec.name}"
    if len(spec.inputs) != 2 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects inputs X, mask and one output")
    x, mask, y = spec.inputs[0], spec.inputs[1], spec.outputs[0]
    fl = FLOATS.get(x.dtype)
    if fl is None or y.dtype != x.dtype:
        raise ValueError(f"{what}: only f32 and f64 are supported, got {x} -> {y}")
    rank = len(x.shape)
    if mask.dtype != DType.i64 or tuple(mask.shape) != (rank,):
        raise ValueError(f"{what}: mask must be i64[{rank}], got {mask}")
    kind = spec.attrs.get("kind")
    if kind not in KINDS:
        raise ValueError(f"{what}: kind {kind!r} is not one of {list(KINDS)}")

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    src, flags, dst = dk.binding(0), dk.binding(1), dk.binding(2)
    one, zero = const_i64(1), const_i64(0)
    m = masked_axes(b, dk.dims(x), flags)
    strides, kept_extent, reduced_extent, out_count, count = (m.strides, m.kept_extent, m.reduced_extent,
                                                              m.out_count, m.count)

    consistent = b.icmp_signed("==", out_count, dk.dim(y.element_count))
    with b.if_then(consistent):
        out_index = entry_alloca(b, I64, name="out_index")
        b.store(zero, out_index)

        def fold(base: ir.Value) -> Fold:
            def run(r: Reducer, value_of: Callable) -> ir.Value:
                acc = entry_alloca(b, fl.scalar)
                b.store(const(r.init, fl.scalar), acc)
                _nested(b, reduced_extent, strides, base,
                        lambda at: b.store(r.combine(b, b.load(acc), value_of(b, fl.load(b, src, at))), acc), "r")
                return b.load(acc)
            return run

        def element(base: ir.Value) -> None:
            o = b.load(out_index)
            value = reduce_value(b, fl, kind, fold(base))
            if kind == "mean":
                value = b.fdiv(value, fl.count(b, count, target))
            fl.store(b, value, dst, o)
            b.store(b.add(o, one), out_index)

        _nested(b, kept_extent, strides, zero, element, "o")
    dk.finish()
    return dk.info(workgroup_count=(1, 1, 1))
