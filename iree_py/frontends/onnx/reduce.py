"""ONNX Reduce* ops -> one normalized `Reduce` (attrs kind, axes sorted non-negative, keepdims).

Axes come from the `axes` attribute (ReduceSum before opset 13, the others before 18) or from a
constant second input. No axes means every axis, unless noop_with_empty_axes=1 (then Identity).
Axes that are not one contiguous run (size-1 dims do not break a run) are first moved to the end
with a Transpose, so the kernel always sees [outer, reduced, inner].

ONNX Reduce* with `axes` given at run time (ReduceSum opset 13+, the others 18+) -> ReduceRuntimeAxes.

The axes tensor's length k is static, so the output rank is known: R (keepdims=1) or R - k
(keepdims=0). Small i64 ops computed at run time turn the axes into
  mask   i64[R]: 1 where an axis is reduced (negative axes wrap; a repeated axis counts once),
  shape  the output dims (d or 1 per axis; or the kept dims in order), read as symbols,
  valid  1 when every axis lies in [-R, R) and, for keepdims=0, no axis repeats: a run-time check
         (a repeated axis would change the output rank, which is fixed at compile time).
onnxruntime accepts a repeated axis and reduces it once; so does keepdims=1 here.
An empty axes tensor (k = 0) is decided at compile time by the caller (convert_reduce): identity
with noop_with_empty_axes=1, else every axis. ReduceMax/ReduceMin of bool are reduced as 0/1 in
f32 and compared > 0 (an empty max is -inf: false; an empty min +inf: true).

ArgMax / ArgMin: one op of the same name.

CumSum and CumProd (26) -> the CumSum / CumProd ops (f32, f64, i32, i64).

The axis is an input. A constant axis (or a rank-1 input, whose only axis it can name) gives one
node. An axis computed at run time gives one node per axis of the input, and the result along the
axis the run-time value names is chosen with Where (negative values count from the end).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.frontends.onnx.compose import Converter, checked_axis, is_contiguous_run, reshape
from iree_py.frontends.onnx.dims import dims_of
from iree_py.frontends.onnx.symbolic import (I64, INDEX_DTYPES, SymbolicConverter, _as_i64, elements, is_known,
                                             known_result, runtime_symbols, smax, smin)
from iree_py.ir.graph import Value
from iree_py.ir.ops.reduce import CUMULATIVE_DTYPES
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


# ONNX op -> (Reduce kind, first opset where axes is an input)
REDUCE_OPS: dict[str, tuple[str, int]] = {
    "ReduceSum": ("sum", 13),
    "ReduceMean": ("mean", 18),
    "ReduceMax": ("max", 18),
    "ReduceMin": ("min", 18),
    "ReduceProd": ("prod", 18),
    "ReduceL1": ("l1", 18),
    "ReduceL2": ("l2", 18),
    "ReduceLogSum": ("logsum", 18),
    "ReduceLogSumExp": ("logsumexp", 18),
    "ReduceSumSquare": ("sumsquare", 18),
}


def _requested_axes(ctx: "OnnxContext", axes_input_from: int) -> list[int] | None:
    if ctx.opset < axes_input_from:
        axes = ctx.attr("axes")
        return [int(a) for a in axes] if axes else None
    if not ctx.has_input(1):
        return None
    axes = [int(a) for a in ctx.const_input(1, "axes").reshape(-1)]
    return axes or None


def _normalized_axes(ctx: "OnnxContext", axes: list[int], rank: int) -> list[int]:
    out = set()
    for a in axes:
        if not -rank <= a < rank:
            raise ctx.bad_attr("axes", axes, f"axis {a} out of range for rank {rank}")
        out.add(a + rank if a < 0 else a)
    return sorted(out)


def convert_reduce(ctx: "OnnxContext", kind: str, axes_input_from: int) -> list[Value]:
    x = ctx.input(0)
    shape = dims_of(x)
    rank = len(shape)
    keepdims = int(ctx.attr("keepdims", 1))
    runtime_axes = runtime_axes_input(ctx, axes_input_from)  # convert_runtime_reduce: axes given at run time
    if runtime_axes is not None and runtime_axes.type.num_elements and rank:
        return convert_runtime_reduce(ctx, kind, x, runtime_axes, keepdims)
    requested = None if runtime_axes is not None else _requested_axes(ctx, axes_input_from)
    if requested is None:
        noop = ctx.opset >= axes_input_from and int(ctx.attr("noop_with_empty_axes", 0))
        if noop:
            return [_each_value(ctx, x, kind)]
        requested = list(range(rank))
    if rank == 0:
        return [_each_value(ctx, x, kind)]
    axes = _normalized_axes(ctx, requested, rank)
    attrs = {"kind": kind, "axes": axes, "keepdims": keepdims}
    if is_contiguous_run(shape, axes):
        return [ctx.emit("Reduce", [x], attrs, out=0)]
    kept = [i for i in range(rank) if i not in axes]
    moved = ctx.emit("Transpose", [x], {"perm": kept + axes})
    tail = list(range(len(kept), rank))
    if not keepdims:
        return [ctx.emit("Reduce", [moved], {**attrs, "axes": tail}, out=0)]
    y = ctx.emit("Reduce", [moved], {**attrs, "axes": tail, "keepdims": 0})
    out_shape = [1 if i in axes else d for i, d in enumerate(shape)]
    return [ctx.emit("Reshape", [y], {"shape": out_shape}, out=0)]


def _each_value(ctx: "OnnxContext", x: Value, kind: str) -> Value:
    """A reduction over no axes (noop_with_empty_axes=1, or a scalar input) still maps each value,
    as onnxruntime does: ReduceL2 -> |x|, ReduceSumSquare -> x*x, ReduceLogSum -> log x."""
    if kind in ("l1", "l2"):
        return ctx.emit("Abs", [x], out=0)
    if kind == "logsum":
        return ctx.emit("Log", [x], out=0)
    if kind == "sumsquare":
        return ctx.emit("Mul", [x, x], out=0)
    return x


def _converter(op: str) -> Callable[["OnnxContext"], list[Value]]:
    kind, axes_input_from = REDUCE_OPS[op]
    return lambda ctx: convert_reduce(ctx, kind, axes_input_from)


def runtime_axes_input(ctx: "OnnxContext", axes_input_from: int) -> Value | None:
    """The `axes` input when it is given at run time (neither a constant nor folded at import)."""
    if ctx.opset < axes_input_from or not ctx.has_input(1):
        return None
    v = ctx.input(1)
    if v.is_const or is_known(ctx, v):
        return None
    if v.type.dtype not in INDEX_DTYPES:
        raise ctx.error(f"axes '{v.name}' is {v.type}; axes given at run time must be int64 or int32")
    if not v.type.is_static or v.type.rank != 1:
        raise ctx.error(f"axes '{v.name}' is {v.type}; axes given at run time must be 1-D with a length known at "
                        f"compile time (the output rank depends on it)")
    return v


def _sum_slices(ctx: "OnnxContext", v: Value, parts: int, width: int, hint: str) -> Value:
    """The sum of the `parts` consecutive slices of length `width` of the 1-D tensor `v`."""
    total: Value | None = None
    for j in range(parts):
        part = ctx.emit("Slice", [v], {"starts": [j * width], "ends": [(j + 1) * width], "steps": [1]})
        total = part if total is None else ctx.emit("Add", [total, part])
    assert total is not None
    return ctx.emit("Reshape", [total], {"shape": [width]}, hint=hint)


def convert_runtime_reduce(ctx: "OnnxContext", kind: str, x: Value, axes: Value, keepdims: int) -> list[Value]:
    """`x` reduced over the run-time `axes` (k >= 1 entries)."""
    if not x.type.is_static:
        raise ctx.error(f"a Reduce of {x.type} (symbolic dims) over axes given at run time ('{axes.name}') is not "
                        f"supported: the output dims are computed from the input dims as constants")
    rank, k = x.type.rank, axes.type.num_elements
    if rank == 0:
        raise ctx.error(f"axes '{axes.name}' has {k} entries but the input is a scalar: no axis is in range")
    if not keepdims and k > rank:
        raise ctx.error(f"keepdims=0 with {k} axes given at run time for rank {rank}: the output rank {rank} - {k} "
                        f"would be negative (a repeated axis would change it at run time)")
    name = ctx.node_name
    zero, one = ctx.const(np.array(0, I64), "zero"), ctx.const(np.array(1, I64), "one")
    rank_c, count_c = ctx.const(np.array(rank, I64), "rank"), ctx.const(np.array([k], I64), "axes_count")
    axes = _as_i64(ctx, axes)
    in_range = ctx.emit("And", [ctx.emit("GreaterOrEqual", [axes, ctx.const(np.array(-rank, I64), "minus_rank")]),
                                ctx.emit("Less", [axes, rank_c])])
    wrapped = ctx.emit("Where", [ctx.emit("Less", [axes, zero]), ctx.emit("Add", [axes, rank_c]), axes])
    hits = ctx.emit("Equal", [ctx.emit("Reshape", [wrapped], {"shape": [k, 1]}),
                              ctx.const(np.arange(rank, dtype=I64), "axis_ids")])
    flat_hits = ctx.emit("Reshape", [_as_i64(ctx, hits)], {"shape": [k * rank]})
    mask = ctx.emit("Min", [_sum_slices(ctx, flat_hits, k, rank, f"{name}_axis_hits"), one], hint=f"{name}_mask")

    ok = ctx.emit("Equal", [_sum_slices(ctx, _as_i64(ctx, in_range), k, 1, f"{name}_in_range"), count_c])
    if not keepdims:
        unique = ctx.emit("Equal", [_sum_slices(ctx, mask, rank, 1, f"{name}_reduced_count"), count_c])
        ok = ctx.emit("And", [ok, unique])
    valid = ctx.emit("Cast", [ok], {"to": DType.i64.value}, hint=f"{name}_axes_valid")

    dims = np.array(dims_of(x), I64)
    valid_dim = runtime_symbols(ctx, valid, "axes check")[0]
    if keepdims:
        shape = ctx.emit("Where", [ctx.emit("Equal", [mask, one]), one, ctx.const(dims, "input_dims")],
                         hint=f"{name}_reduced_shape")
        out_dims = runtime_symbols(ctx, shape, "reduced shape")
    elif k < rank:
        out_dims = runtime_symbols(ctx, _kept_dims(ctx, mask, dims, rank - k, zero, one), "reduced shape")
    else:  # every axis, once each: a scalar, computed as [valid] (1 once checked) so the check runs
        out_dims = [valid_dim]
    attrs = {"kind": kind, "keepdims": keepdims, "shape": out_dims, "valid": valid_dim}
    if keepdims or k < rank:
        return [_emit_reduce(ctx, kind, x, mask, attrs, out=0)]
    return [ctx.emit("Reshape", [_emit_reduce(ctx, kind, x, mask, attrs, out=None)], {"shape": []}, out=0)]


def _emit_reduce(ctx: "OnnxContext", kind: str, x: Value, mask: Value, attrs: dict, out: int | None) -> Value:
    if x.type.dtype == DType.bool and kind in ("max", "min"):  # any / all: reduce 0/1 in f32, then > 0
        as_float = ctx.emit("Cast", [x], {"to": DType.f32.value})
        y = ctx.emit("ReduceRuntimeAxes", [as_float, mask], attrs)
        return ctx.emit("Greater", [y, ctx.const(np.array(0, np.float32), "zero_f32")], out=out)
    return ctx.emit("ReduceRuntimeAxes", [x, mask], attrs, out=out)


def _kept_dims(ctx: "OnnxContext", mask: Value, dims: np.ndarray, out_rank: int, zero: Value, one: Value) -> Value:
    """i64[out_rank]: entry j is the dim of the j-th axis not in `mask` (0 past the kept ones)."""
    rank = len(dims)
    kept = ctx.emit("Sub", [one, mask])
    position = ctx.emit("CumSum", [kept], {"axis": 0, "exclusive": 1, "reverse": 0})
    at_slot = ctx.emit("Equal", [ctx.emit("Reshape", [position], {"shape": [rank, 1]}),
                                 ctx.const(np.arange(out_rank, dtype=I64), "slots")])
    is_kept = ctx.emit("Equal", [ctx.emit("Reshape", [kept], {"shape": [rank, 1]}), one])
    picked = ctx.emit("Where", [ctx.emit("And", [at_slot, is_kept]), ctx.const(dims.reshape(rank, 1), "input_dims"),
                                zero])
    flat = ctx.emit("Reshape", [picked], {"shape": [rank * out_rank]})
    return _sum_slices(ctx, flat, rank, out_rank, f"{ctx.node_name}_reduced_shape")


def _symbolic_reduce(op: str) -> SymbolicConverter:
    """ReduceProd / ReduceSum / ReduceMax / ReduceMin of a known value, folded (tf2onnx's Keras
    Reshape: Shape -> Gather -> ReduceProd -> Concat -> Reshape)."""
    def convert(ctx: "OnnxContext") -> list[Value] | None:
        x = ctx.input(0)
        if not is_known(ctx, x) or any(is_known(ctx, v) for v in ctx.inputs()[1:]):
            return None
        array = elements(ctx, x)
        axes = _requested_axes(ctx, REDUCE_OPS[op][1])
        if axes is None:
            if ctx.opset >= REDUCE_OPS[op][1] and int(ctx.attr("noop_with_empty_axes", 0)):
                return [known_result(ctx, array, x.type.dtype)]
            axes = list(range(array.ndim))
        combine = {"ReduceProd": lambda a, b: a * b, "ReduceSum": lambda a, b: a + b,
                   "ReduceMax": lambda a, b: smax(ctx, a, b), "ReduceMin": lambda a, b: smin(ctx, a, b)}[op]
        ufunc = np.frompyfunc(combine, 2, 1)
        keepdims = bool(int(ctx.attr("keepdims", 1)))
        for axis in sorted(_normalized_axes(ctx, axes, array.ndim), reverse=True):
            if array.shape[axis] == 0:
                return None  # an empty reduction: the static converter knows its start value
            array = ufunc.reduce(array, axis=axis, keepdims=keepdims)
        return [known_result(ctx, np.asarray(array, dtype=object), x.type.dtype)]
    return convert


def _arg(op: str):
    def convert(ctx: "OnnxContext") -> list[Value]:
        x = ctx.input(0)
        attrs = {"axis": checked_axis(ctx, int(ctx.attr("axis", 0)), x.type.rank), "keepdims": int(ctx.attr("keepdims", 1)),
                 "select_last_index": int(ctx.attr("select_last_index", 0)) if ctx.opset >= 12 else 0}
        return [ctx.emit(op, [x], attrs, out=0)]
    return convert


# --- CumSum, CumProd -------------------------------------------------------------------------------

AXIS_DTYPES = (DType.i32, DType.i64)


def _static_axis(ctx: "OnnxContext", x: Value, axis_value: Value) -> int | None:
    rank = x.type.rank
    if not axis_value.is_const:
        return 0 if rank == 1 else None
    axis = int(np.asarray(axis_value.const).reshape(-1)[0])
    if not -rank <= axis < rank:
        raise ctx.error(f"axis {axis} (input 1) out of range for input {x.type}")
    return axis + rank if axis < 0 else axis


def _runtime_axis_select(ctx: "OnnxContext", op: str, x: Value, axis_value: Value, attrs: dict) -> Value:
    """One `op` node per axis; Where picks the one the run-time axis names."""
    rank = x.type.rank
    dtype = axis_value.type.dtype.numpy
    axis = reshape(ctx, axis_value, ())
    negative = ctx.emit("Less", [axis, ctx.const(np.array(0, dtype), "zero")])
    axis = ctx.emit("Where", [negative, ctx.emit("Add", [axis, ctx.const(np.array(rank, dtype), "rank")]), axis])
    chosen = ctx.emit(op, [x], {**attrs, "axis": rank - 1})
    for a in range(rank - 2, -1, -1):
        picked = ctx.emit("Equal", [axis, ctx.const(np.array(a, dtype), f"axis_{a}")])
        chosen = ctx.emit("Where", [picked, ctx.emit(op, [x], {**attrs, "axis": a}), chosen], out=0 if a == 0 else None)
    return chosen


def _cumulative(op: str) -> Callable[["OnnxContext"], list[Value]]:
    def convert(ctx: "OnnxContext") -> list[Value]:
        x, axis_value = ctx.input(0), ctx.input(1)
        if x.type.dtype not in CUMULATIVE_DTYPES:
            raise ctx.error(f"input {x.type} is not supported; only float32, float64, int32 and int64")
        if axis_value.type.dtype not in AXIS_DTYPES or axis_value.type.num_elements != 1:
            raise ctx.error(f"axis (input 1) {axis_value.type} must be one int32 or int64 value")
        if x.type.rank == 0:
            raise ctx.error(f"input {x.type} must have rank >= 1")
        attrs = {"exclusive": int(ctx.attr("exclusive", 0)), "reverse": int(ctx.attr("reverse", 0))}
        for name, value in attrs.items():
            if value not in (0, 1):
                raise ctx.bad_attr(name, value, "expected 0 or 1")
        axis = _static_axis(ctx, x, axis_value)
        if axis is None:
            return [_runtime_axis_select(ctx, op, x, axis_value, attrs)]
        return [ctx.emit(op, [x], {**attrs, "axis": axis}, out=0)]
    return convert


CONVERTERS: dict[str, Converter] = {
    **{op: _converter(op) for op in REDUCE_OPS},
    "ArgMax": _arg("ArgMax"),
    "ArgMin": _arg("ArgMin"),
    "CumSum": _cumulative("CumSum"),
    "CumProd": _cumulative("CumProd"),
}

SYMBOLIC_CONVERTERS: dict[str, SymbolicConverter] = {
    op: _symbolic_reduce(op) for op in ("ReduceProd", "ReduceSum", "ReduceMax", "ReduceMin")}
