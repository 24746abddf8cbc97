"""ONNX ops whose output size depends on run-time data -> the two-pass ops of
iree_py/ir/ops_datadep.py (registered in onnx_ops.CONVERTERS; constant inputs still fold).

  NonZero   NonZeroCount, a symbol read from the count (graph.symbol_sources), NonZero
  Compress  (condition given at run time) NonZero of the condition (cut to the axis length),
            then a Gather of the positions along the axis (the flattened input without axis)
  Unique    UniqueCount of the input along axis (of the flattened input without axis), a symbol,
            then one Unique node per used output (values, indices, inverse_indices, counts), sorted
            or in order of first occurrence
TopK with a k given at run time is onnx_symbolic._topk (a symbol read from k).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx_dims import dim_list, dims_of
from iree_py.frontends.onnx_indexing import compress as compress_constant
from iree_py.frontends.onnx_symbolic import symbol_name
from iree_py.ir.graph import Value
from iree_py.ir.ops.data_dependent import DATADEP_DTYPES
from iree_py.ir.ops.data_dependent import unique as unique_reference
from iree_py.ir.symbols import Expr, call, dim

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext


def _count_symbol(ctx: "OnnxContext", count: Value) -> Expr:
    """A fresh symbol holding element 0 of the i64[1] `count`, read when `count` is computed."""
    taken = set(ctx.symbol_sources) | set().union(*(v.type.symbols for v in ctx.env.values()))
    name = symbol_name(count.name)
    while name in taken:
        name += "_"
    ctx.symbol_sources[name] = (count, 0)
    return Expr.of(name)


def _nonzero_positions(ctx: "OnnxContext", x: Value, out: int | None = None) -> Value:
    count = ctx.emit("NonZeroCount", [x], hint=f"{ctx.node_name}_count")
    return ctx.emit("NonZero", [x, count], {"count": _count_symbol(ctx, count)}, out=out)


def nonzero(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    if x.is_const:
        return [ctx.const(np.array(np.nonzero(np.asarray(x.const)), dtype=np.int64).reshape(x.type.rank, -1), out=0)]
    return [_nonzero_positions(ctx, x, out=0)]


def compress(ctx: "OnnxContext") -> list[Value]:
    x, condition = ctx.input(0), ctx.input(1)
    if condition.is_const and x.type.is_static:
        return compress_constant(ctx)
    if condition.type.rank != 1:
        raise ctx.error(f"condition {condition.type} must be rank 1")
    if ctx.attr("axis") is None:
        x = ctx.emit("Reshape", [x], {"shape": dim_list((x.type.element_count,))}) if x.type.rank != 1 else x
        axis = 0
    else:
        axis = int(ctx.attr("axis"))
        if not -x.type.rank <= axis < x.type.rank:
            raise ctx.bad_attr("axis", axis, f"out of range for rank {x.type.rank}")
        axis = axis % x.type.rank
    length, size = dims_of(condition)[0], dims_of(x)[axis]
    if dim(length) != dim(size):  # entries past the axis length are ignored
        ends = dim(call("min", length, size)) if not (isinstance(length, int) and isinstance(size, int)) \
            else min(length, size)
        condition = ctx.emit("Slice", [condition], {"starts": [0], "ends": [ends], "steps": [1]},
                             hint=f"{ctx.node_name}_condition")
    positions = _nonzero_positions(ctx, condition)
    flat = ctx.emit("Reshape", [positions], {"shape": dim_list((positions.type.shape[1],))},
                    hint=f"{ctx.node_name}_positions")
    return [ctx.emit("Gather", [x, flat], {"axis": axis}, out=0)]


UNIQUE_OUTPUTS = ("values", "indices", "inverse", "counts")


def unique(ctx: "OnnxContext") -> list[Value | None]:
    x = ctx.input(0)
    is_sorted = int(ctx.attr("sorted", 1))
    if is_sorted not in (0, 1):
        raise ctx.bad_attr("sorted", is_sorted, "must be 0 or 1")
    used = [i for i in range(len(UNIQUE_OUTPUTS)) if i == 0 or ctx.output_used(i)]
    if ctx.attr("axis") is None:  # the flattened input, along its only axis
        axis = 0
        if x.type.rank != 1:
            x = ctx.emit("Reshape", [x], {"shape": dim_list((x.type.element_count,))}, hint=f"{ctx.node_name}_flat")
    else:
        axis = int(ctx.attr("axis"))
        if not -x.type.rank <= axis < x.type.rank:
            raise ctx.bad_attr("axis", axis, f"out of range for rank {x.type.rank}")
        axis %= x.type.rank
    if x.is_const:
        return [ctx.const(unique_reference([np.asarray(x.const)], {"axis": axis, "result": UNIQUE_OUTPUTS[i],
                                                                   "sorted": is_sorted}), out=i)
                if i in used else None for i in range(len(UNIQUE_OUTPUTS))]
    if x.type.dtype not in DATADEP_DTYPES:
        raise ctx.error(f"Unique of {x.type} is not supported (dtype {x.type.dtype.value})")
    count = ctx.emit("UniqueCount", [x], {"axis": axis}, hint=f"{ctx.node_name}_count")
    symbol = _count_symbol(ctx, count)
    attrs = {"axis": axis, "count": symbol, "sorted": is_sorted}
    return [ctx.emit("Unique", [x, count], {**attrs, "result": UNIQUE_OUTPUTS[i]}, out=i)
            if i in used else None for i in range(len(UNIQUE_OUTPUTS))]


DATADEP_CONVERTERS = {
    "NonZero": nonzero,
    "Compress": compress,
    "Unique": unique,
}
