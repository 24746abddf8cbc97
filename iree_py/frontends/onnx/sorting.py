"""ONNX TopK and Unique. Each used output of TopK (values, indices) is its own TopK node; k may be
given at run time (a symbol read from it). Unique: UniqueCount of the input along axis (of the
flattened input without axis), a symbol, then one Unique node per used output (values, indices,
inverse_indices, counts), sorted or in order of first occurrence (iree_py/ir/ops/data_dependent.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx.compose import Converter, checked_axis
from iree_py.frontends.onnx.dims import dim_list, dims_of
from iree_py.frontends.onnx.indexing import _count_symbol
from iree_py.frontends.onnx.symbolic import SymbolicConverter, shape_input
from iree_py.ir.graph import Value
from iree_py.ir.ops.data_dependent import DATADEP_DTYPES
from iree_py.ir.ops.data_dependent import unique as unique_reference
from iree_py.ir.types import Dim

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


def topk(ctx: "OnnxContext") -> list[Value]:
    """Each used output (values, indices) is its own TopK node."""
    x = ctx.input(0)
    axis = checked_axis(ctx, int(ctx.attr("axis", -1)), x.type.rank)
    k = int(ctx.attr("k")) if ctx.opset < 10 else int(ctx.const_input(1, "k").reshape(-1)[0])
    # sorted=0 lets the outputs come in any order (ONNX); the sorted order is one of them.
    attrs = {"axis": axis, "k": k, "largest": int(ctx.attr("largest", 1)) if ctx.opset >= 11 else 1}
    if not 0 <= k <= dims_of(x)[axis]:
        raise ctx.error(f"k {k} out of range for axis {axis} of {x.type}")
    results: list[Value] = []
    for i, result in enumerate(("values", "indices")):
        results.append(ctx.emit("TopK", [x], {**attrs, "result": result}, out=i) if ctx.output_used(i) or i == 0
                       else None)
    return results


def _symbolic_topk(ctx: "OnnxContext") -> list[Value] | None:
    x = ctx.input(0)
    if ctx.opset < 10:
        k: Dim = int(ctx.attr("k"))
        runtime = False
    else:
        (k,), runtime = shape_input(ctx, 1, "k")
    if x.type.is_static and isinstance(k, int):
        return None
    rank = x.type.rank
    axis = int(ctx.attr("axis", -1))
    axis = axis + rank if axis < 0 else axis
    if isinstance(k, int) and isinstance(dims_of(x)[axis], int) and not 0 <= k <= dims_of(x)[axis]:
        raise ctx.error(f"k {k} out of range for axis {axis} of {x.type}")
    attrs = {"axis": axis, "k": k, "largest": int(ctx.attr("largest", 1)) if ctx.opset >= 11 else 1}
    results: list[Value | None] = []
    for i, result in enumerate(("values", "indices")):
        results.append(ctx.emit("TopK", [x], {**attrs, "result": result}, out=i) if ctx.output_used(i) or i == 0
                       else None)
    return results  # type: ignore[return-value]


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


CONVERTERS: dict[str, Converter] = {
    "TopK": topk,
    "Unique": unique,
}

SYMBOLIC_CONVERTERS: dict[str, SymbolicConverter] = {"TopK": _symbolic_topk}

SHAPE_INPUTS: dict[str, tuple[int, ...]] = {"TopK": (1,)}
