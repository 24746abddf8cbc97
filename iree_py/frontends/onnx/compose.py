"""Helpers for ONNX converters that build an op out of several normalized ops : no-op-skipping Reshape/Transpose, Reduce over any axes,
normalization statistics, output naming, axis checks,
optional inputs, and the converter type.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.frontends.onnx.dims import dim_list, dims_of
from iree_py.ir.graph import Value
from iree_py.ir.types import Dim, DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


Converter = Callable[["OnnxContext"], list[Value]]


F32 = np.float32


FLOAT_STASH_TYPE = 1  # TensorProto.FLOAT


def shape_of(v: Value) -> tuple[Dim, ...]:
    return dims_of(v)


def out_index(ctx: "OnnxContext", i: int) -> int | None:
    """`i` when the node has a named output i (so an emitted value can take its name), else None."""
    assert ctx.node is not None
    return i if i < len(ctx.node.output) and ctx.node.output[i] != "" else None


def scalar(ctx: "OnnxContext", value: float, hint: str, like: Value) -> Value:
    """A rank-0 constant of `like`'s element type (so elementwise ops see one dtype)."""
    return ctx.const(np.array(value, like.type.dtype.numpy), hint)


def reshape(ctx: "OnnxContext", v: Value, shape: tuple[int, ...], out: int | None = None) -> Value:
    if shape_of(v) == tuple(shape) and out is None:
        return v
    return ctx.emit("Reshape", [v], {"shape": dim_list(shape)}, out=out)


def transpose(ctx: "OnnxContext", v: Value, perm: list[int], out: int | None = None) -> Value:
    if perm == sorted(perm) and out is None:
        return v
    return ctx.emit("Transpose", [v], {"perm": list(perm)}, out=out)


def reduce_axes(ctx: "OnnxContext", x: Value, kind: str, axes: list[int], keepdims: int,
                out: int | None = None) -> Value:
    """Reduce over any set of axes (sorted, non-negative); moves them to the end first when they do
    not form one contiguous run, as the Reduce op requires."""
    shape = shape_of(x)
    attrs = {"kind": kind, "axes": sorted(axes), "keepdims": keepdims}
    if is_contiguous_run(shape, sorted(axes)):
        return ctx.emit("Reduce", [x], attrs, out=out)
    kept = [i for i in range(len(shape)) if i not in axes]
    moved = ctx.emit("Transpose", [x], {"perm": kept + sorted(axes)})
    tail = list(range(len(kept), len(shape)))
    if not keepdims:
        return ctx.emit("Reduce", [moved], {**attrs, "axes": tail}, out=out)
    y = ctx.emit("Reduce", [moved], {**attrs, "axes": tail, "keepdims": 0})
    return reshape(ctx, y, tuple(1 if i in axes else d for i, d in enumerate(shape)), out=out)


def normalize(ctx: "OnnxContext", x: Value, axes: list[int], epsilon: float,
              mean_out: int | None = None, inv_out: int | None = None) -> tuple[Value, Value, Value]:
    """(x - mean) / sqrt(var + epsilon) over `axes` (keepdims); returns (normalized, mean, 1/std)."""
    mean = reduce_axes(ctx, x, "mean", axes, 1, out=mean_out)
    centered = ctx.emit("Sub", [x, mean])
    var = reduce_axes(ctx, ctx.emit("Mul", [centered, centered]), "mean", axes, 1)
    std = ctx.emit("Sqrt", [ctx.emit("Add", [var, scalar(ctx, epsilon, "epsilon", like=var)])])
    inv_std = ctx.emit("Reciprocal", [std], out=inv_out)
    return ctx.emit("Mul", [centered, inv_std]), mean, inv_std


def affine(ctx: "OnnxContext", y: Value, scale: Value | None, bias: Value | None, out: int | None) -> Value:
    """y * scale + bias; the last op emitted takes the output name."""
    if scale is not None:
        y = ctx.emit("Mul", [y, scale], out=out if bias is None else None)
    if bias is not None:
        y = ctx.emit("Add", [y, bias], out=out)
    if scale is None and bias is None and out is not None:
        y = ctx.emit("Reshape", [y], {"shape": list(shape_of(y))}, out=out)
    return y


def check_float_stash(ctx: "OnnxContext") -> None:
    stash = int(ctx.attr("stash_type", FLOAT_STASH_TYPE))
    if stash != FLOAT_STASH_TYPE:
        raise ctx.bad_attr("stash_type", stash, "only 1 (float32 statistics) is supported")


def axis_attr(ctx: "OnnxContext", rank: int, default: int) -> int:
    axis = int(ctx.attr("axis", default))
    if not -rank <= axis < rank:
        raise ctx.bad_attr("axis", axis, f"out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def optional_input(ctx: "OnnxContext", i: int) -> Value | None:
    return ctx.input(i) if ctx.has_input(i) else None


def is_contiguous_run(shape: tuple[int, ...], axes: list[int]) -> bool:
    """True when the reduced axes form one block once size-1 dims are dropped."""
    kept = [i for i, d in enumerate(shape) if d != 1 or i in axes]
    positions = [kept.index(a) for a in axes]
    return positions == list(range(positions[0], positions[0] + len(positions)))


def checked_axis(ctx: "OnnxContext", axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise ctx.bad_attr(what, axis, f"out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def optional_const(ctx: "OnnxContext", i: int, what: str) -> np.ndarray | None:
    """A constant input, or None when absent or empty (Resize's '' and [] both mean 'not given')."""
    if not ctx.has_input(i):
        return None
    array = ctx.const_input(i, what)
    return None if array.size == 0 else array


FLOAT_DTYPES = (DType.f32, DType.f16)


def require_float(ctx: "OnnxContext", x: Value, what: str) -> None:
    if x.type.dtype not in FLOAT_DTYPES:
        raise ctx.error(f"{what} {x.type} is not supported; only float32 and float16")


def slice_axis(ctx: "OnnxContext", x: Value, axis: int, start: int, end: int, step: int = 1,
               out: int | None = None) -> Value:
    """x[..., start:end:step, ...] on `axis` (start/end already in range, step > 0)."""
    shape = shape_of(x)
    starts, ends, steps = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], ends[axis], steps[axis] = start, end, step
    return ctx.emit("Slice", [x], {"starts": starts, "ends": ends, "steps": steps}, out=out)
