"""ONNX Reduce* ops -> one normalized `Reduce` (attrs kind, axes sorted non-negative, keepdims).

Axes come from the `axes` attribute (ReduceSum before opset 13, the others before 18) or from a
constant second input. No axes means every axis, unless noop_with_empty_axes=1 (then Identity).
Axes that are not one contiguous run (size-1 dims do not break a run) are first moved to the end
with a Transpose, so the kernel always sees [outer, reduced, inner].
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from iree_py.frontends.onnx_dims import dims_of
from iree_py.frontends.onnx_rt_reduce import convert_runtime_reduce, runtime_axes_input
from iree_py.ir.graph import Value

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

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


def is_contiguous_run(shape: tuple[int, ...], axes: list[int]) -> bool:
    """True when the reduced axes form one block once size-1 dims are dropped."""
    kept = [i for i, d in enumerate(shape) if d != 1 or i in axes]
    positions = [kept.index(a) for a in axes]
    return positions == list(range(positions[0], positions[0] + len(positions)))


def convert_reduce(ctx: "OnnxContext", kind: str, axes_input_from: int) -> list[Value]:
    x = ctx.input(0)
    shape = dims_of(x)
    rank = len(shape)
    keepdims = int(ctx.attr("keepdims", 1))
    runtime_axes = runtime_axes_input(ctx, axes_input_from)  # onnx_rt_reduce.py: axes given at run time
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


REDUCE_CONVERTERS = {op: _converter(op) for op in REDUCE_OPS}
