"""The "reduce" kernel: sum/mean/max/min/prod/l1/l2/logsum/logsumexp/sumsquare over a contiguous
run of axes, seen as [outer, reduced, inner]. One workgroup per outer index. inner == 1 reduces
along the contiguous reduced axis with vector accumulators (reduce_row); inner > 1 vectorizes
across the inner positions. logsumexp is stable: log(sum(exp(x - m))) + m with m the (finite) max."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (F32, begin_kernel, const_i64, entry_alloca, float_vector, for_range,
                                         lanes_f32, load_f32, splat, splat_value, static_shape, store_f32,
                                         vector_split)
from iree_py.codegen.llvm.math import emit_exp, fmax
from iree_py.codegen.llvm.math_core import emit_log, fabs, fmin, fsqrt
from iree_py.codegen.llvm.reduce import reduce_row
from iree_py.ir.types import DType

Combine = Callable[[ir.IRBuilder, ir.Value, ir.Value], ir.Value]


@dataclass(frozen=True)
class Reducer:
    init: float
    combine: Combine
    value_of: Callable[[ir.IRBuilder, ir.Value], ir.Value]       # applied to each loaded x
    finish: Callable[[ir.IRBuilder, ir.Value, int], ir.Value]    # (acc, reduced count) -> result


def _add(b, x, y):
    return b.fadd(x, y)


def _mul(b, x, y):
    return b.fmul(x, y)


def _same(b, x):
    return x


def _square(b, x):
    return b.fmul(x, x)


def _done(b, acc, n):
    return acc


REDUCERS: dict[str, Reducer] = {
    "sum": Reducer(0.0, _add, _same, _done),
    "mean": Reducer(0.0, _add, _same, lambda b, acc, n: b.fmul(acc, splat(1.0 / n, acc.type))),
    "max": Reducer(float("-inf"), fmax, _same, _done),
    "min": Reducer(float("inf"), fmin, _same, _done),
    "prod": Reducer(1.0, _mul, _same, _done),
    "l1": Reducer(0.0, _add, fabs, _done),
    "l2": Reducer(0.0, _add, _square, lambda b, acc, n: fsqrt(b, acc)),
    "logsum": Reducer(0.0, _add, _same, lambda b, acc, n: emit_log(b, acc)),
    "sumsquare": Reducer(0.0, _add, _square, _done),
}
KINDS = (*REDUCERS, "logsumexp")


def _fold_row(b, src, base, length, lanes, r: Reducer, value_of) -> ir.Value:
    return reduce_row(b, src, base, length, lanes, r.init, r.combine, lambda x, idx: value_of(b, x))


def _fold_columns(b, src, base, length, inner, ty, col, r: Reducer, value_of) -> ir.Value:
    acc = entry_alloca(b, ty)
    b.store(splat(r.init, ty), acc)
    with for_range(b, 0, length, name="r") as j:
        x = load_f32(b, src, b.add(b.add(base, b.mul(j, const_i64(inner))), col), ty)
        b.store(r.combine(b, b.load(acc), value_of(b, x)), acc)
    return b.load(acc)


def _reduce(b, kind: str, fold) -> ir.Value:
    """The result for one output element (or vector of them); fold(reducer, value_of) -> acc."""
    if kind != "logsumexp":
        r = REDUCERS[kind]
        return fold(r, r.value_of)
    mx = fold(REDUCERS["max"], _same)
    finite = b.fcmp_ordered("<", fabs(b, mx), splat(float("inf"), mx.type))
    shift = b.select(finite, mx, splat(0.0, mx.type))

    def shifted_exp(bb, x):
        by = shift if x.type == shift.type else splat_value(bb, shift, x.type)
        return emit_exp(bb, bb.fsub(x, by))

    total = fold(REDUCERS["sum"], shifted_exp)
    return b.fadd(emit_log(b, total), shift)


def collapse(shape: tuple[int, ...], axes: list[int], what: str) -> tuple[int, int, int]:
    """(outer, reduced, inner) of a reduction over a contiguous run of axes."""
    if not axes or axes != sorted(set(axes)) or not all(0 <= a < len(shape) for a in axes):
        raise ValueError(f"{what}: axes {axes} must be sorted, unique, non-empty and within rank {len(shape)}")
    gaps = [i for i in range(axes[0], axes[-1] + 1) if i not in axes and shape[i] != 1]
    if gaps:
        raise ValueError(f"{what}: axes {axes} of shape {list(shape)} are not one contiguous run "
                         f"(dims {gaps} lie between them); transpose first")
    reduced = math.prod(shape[a] for a in axes)
    return math.prod(shape[:axes[0]]), reduced, math.prod(shape[axes[-1] + 1:])


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    what = f"reduce kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    if spec.inputs[0].dtype == DType.f64:  # f64math: scalar double-precision kernel
        from iree_py.codegen.llvm.reduce_f64 import build_static
        return build_static(spec, module, target)
    if spec.inputs[0].dtype != DType.f32 or spec.outputs[0].dtype != DType.f32:
        raise CompileError(f"{what}: only f32 is supported, got {spec.inputs[0]} -> {spec.outputs[0]}")
    kind = spec.attrs.get("kind")
    if kind not in KINDS:
        raise ValueError(f"{what}: kind {kind!r} is not one of {list(KINDS)}")
    shape = static_shape(spec.inputs[0], what)
    outer, reduced, inner = collapse(shape, [int(a) for a in spec.attrs["axes"]], what)
    if reduced == 0 or outer * inner == 0:
        raise ValueError(f"{what}: empty reductions (shape {list(shape)}) are not supported")
    if spec.outputs[0].num_elements != outer * inner:
        raise ValueError(f"{what}: output {spec.outputs[0]} should have {outer * inner} elements")
    lanes = lanes_f32(target)

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    o = kb.workgroup_id_index(0)
    base = b.mul(o, const_i64(reduced * inner))
    if inner == 1:
        result = _reduce(b, kind, lambda r, value_of: _fold_row(b, src, base, reduced, lanes, r, value_of))
        if kind != "logsumexp":
            result = REDUCERS[kind].finish(b, result, reduced)
        store_f32(b, result, dst, o)
    else:
        out_base = b.mul(o, const_i64(inner))

        def columns(ty, col):
            result = _reduce(b, kind, lambda r, value_of: _fold_columns(b, src, base, reduced, inner, ty, col,
                                                                        r, value_of))
            if kind != "logsumexp":
                result = REDUCERS[kind].finish(b, result, reduced)
            store_f32(b, result, dst, b.add(out_base, col))

        vec_inner, _ = vector_split(inner, lanes)
        if vec_inner:
            with for_range(b, 0, vec_inner, step=lanes, name="c") as col:
                columns(float_vector(lanes), col)
        with for_range(b, vec_inner, inner, name="ct") as col:
            columns(F32, col)
    kb.finish()
    return KernelInfo(spec.name, (outer, 1, 1), (), (spec.inputs[0].num_bytes, spec.outputs[0].num_bytes))
