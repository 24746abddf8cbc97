"""ONNX CumSum and CumProd (26) -> the CumSum / CumProd ops (f32, f64, i32, i64).

The axis is an input. A constant axis (or a rank-1 input, whose only axis it can name) gives one
node. An axis computed at run time gives one node per axis of the input, and the result along the
axis the run-time value names is chosen with Where (negative values count from the end)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.frontends.onnx_compose import reshape
from iree_py.ir.graph import Value
from iree_py.ir.ops.reduce import CUMULATIVE_DTYPES
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

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


CUMULATIVE_CONVERTERS: dict[str, Callable[["OnnxContext"], list[Value]]] = {
    "CumSum": _cumulative("CumSum"),
    "CumProd": _cumulative("CumProd"),
}
