"""ONNX indexing ops -> normalized ops.

Gather, GatherElements, GatherND, ScatterElements (and opset 9-10 Scatter), ScatterND map one to
one onto the IR ops of the same names (docs/ir.md, "Indexing ops"); the index tensors may be
computed at run time. The rest are compositions, with every shape and every index pattern known
at import:

  Tile             Reshape, Expand (broadcast), Reshape        (constant repeats)
  Expand           Expand                                        (constant shape)
  DepthToSpace     Reshape, Transpose, Reshape                   (DCR and CRD)
  SpaceToDepth     Reshape, Transpose, Reshape                   (DCR and CRD)
  Trilu            Gather of the flattened input followed by one zero, with a constant index map
                   (kept elements read themselves, the others read the zero)   (constant k)
  Compress         Gather with the constant positions of the true conditions
  ReverseSequence  GatherElements along the time axis with constant indices   (constant lengths)
  OneHot           Where(indices' == iota(depth), on, off), indices' the indices with negatives
                   counted from depth: one outside [-depth, depth) gives off values (constant depth)
  EyeLike, Size    constants
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.frontends.onnx_dims import dim_list, dims_of
from iree_py.ir.graph import Value
from iree_py.ir.types import Dim
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

Converter = Callable[["OnnxContext"], list[Value]]


def _shape(v: Value) -> tuple[Dim, ...]:
    return dims_of(v)


def _axis(ctx: "OnnxContext", name: str, default: int, rank: int) -> int:
    axis = int(ctx.attr(name, default))
    if not -rank <= axis < rank:
        raise ctx.bad_attr(name, axis, f"out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _reshape(ctx: "OnnxContext", v: Value, shape: tuple[int, ...], out: int | None = None) -> Value:
    if _shape(v) == tuple(shape) and out is None:
        return v
    return ctx.emit("Reshape", [v], {"shape": dim_list(shape)}, out=out)


def _indices(ctx: "OnnxContext", i: int) -> Value:
    v = ctx.input(i)
    if v.type.dtype.value not in ("i32", "i64"):
        raise ctx.error(f"indices (input {i}, '{v.name}') are {v.type}; only int32 and int64 indices are supported")
    return v


# ------------------------------------------------------------------------------ gather / scatter

def gather(ctx: "OnnxContext") -> list[Value]:
    data = ctx.input(0)
    axis = _axis(ctx, "axis", 0, data.type.rank)
    return [ctx.emit("Gather", [data, _indices(ctx, 1)], {"axis": axis}, out=0)]


def gather_elements(ctx: "OnnxContext") -> list[Value]:
    data = ctx.input(0)
    axis = _axis(ctx, "axis", 0, data.type.rank)
    return [ctx.emit("GatherElements", [data, _indices(ctx, 1)], {"axis": axis}, out=0)]


def gather_nd(ctx: "OnnxContext") -> list[Value]:
    batch_dims = int(ctx.attr("batch_dims", 0))
    return [ctx.emit("GatherND", [ctx.input(0), _indices(ctx, 1)], {"batch_dims": batch_dims}, out=0)]


REDUCTION_DTYPES = ("f32", "f64", "i8", "u8", "i16", "i32", "i64")  # the scatter kernels' arithmetic


def _reduction(ctx: "OnnxContext") -> str:
    reduction = ctx.attr("reduction", "none")
    allowed = ("none",) if ctx.opset < 16 else ("none", "add", "mul") if ctx.opset < 18 else \
        ("none", "add", "mul", "max", "min")
    if reduction not in allowed:
        raise ctx.bad_attr("reduction", reduction, f"expected one of {list(allowed)} at opset {ctx.opset}")
    data = ctx.input(0)
    if reduction != "none" and data.type.dtype.value not in REDUCTION_DTYPES:
        raise ctx.bad_attr("reduction", reduction, f"data {data.type}: only {', '.join(REDUCTION_DTYPES)} data")
    return reduction


def scatter_elements(ctx: "OnnxContext") -> list[Value]:
    data = ctx.input(0)
    attrs = {"axis": _axis(ctx, "axis", 0, data.type.rank), "reduction": _reduction(ctx)}
    return [ctx.emit("ScatterElements", [data, _indices(ctx, 1), ctx.input(2)], attrs, out=0)]


def scatter_nd(ctx: "OnnxContext") -> list[Value]:
    attrs = {"reduction": _reduction(ctx)}
    return [ctx.emit("ScatterND", [ctx.input(0), _indices(ctx, 1), ctx.input(2)], attrs, out=0)]


# ------------------------------------------------------------------------------ broadcast copies

def _expand_to(ctx: "OnnxContext", x: Value, shape: tuple[int, ...], out: int | None = None) -> Value:
    if _shape(x) == shape:
        return x if out is None else _reshape(ctx, x, shape, out=out)
    return ctx.emit("Expand", [x], {"shape": list(shape)}, out=out)


def expand(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    requested = tuple(int(d) for d in ctx.const_input(1, "shape").reshape(-1))
    try:
        shape = tuple(int(d) for d in np.broadcast_shapes(_shape(x), requested))
    except ValueError:
        raise ctx.error(f"input {x.type} does not broadcast to shape {list(requested)}") from None
    if shape == _shape(x):
        return [x]
    return [_expand_to(ctx, x, shape, out=0)]


def tile(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    dims = _shape(x)
    repeats = [int(r) for r in ctx.const_input(1, "repeats").reshape(-1)]
    if len(repeats) != len(dims) or any(r < 0 for r in repeats):
        raise ctx.error(f"repeats {repeats} must be {len(dims)} non-negative counts for input {x.type}")
    if all(r == 1 for r in repeats):
        return [x]
    split, expanded = [], []
    for d, r in zip(dims, repeats):
        if r != 1:
            split.append(1)
            expanded.append(r)
        split.append(d)
        expanded.append(d)
    y = _expand_to(ctx, _reshape(ctx, x, tuple(split)), tuple(expanded))
    return [_reshape(ctx, y, tuple(d * r for d, r in zip(dims, repeats)), out=0)]


# ------------------------------------------------------------------------------- block layouts

def _block(ctx: "OnnxContext") -> tuple[Value, int, tuple[int, int, int, int]]:
    x = ctx.input(0)
    if x.type.rank != 4:
        raise ctx.error(f"input {x.type} must be 4-D [N, C, H, W]")
    block = int(ctx.attr("blocksize", 0))
    if block < 1:
        raise ctx.bad_attr("blocksize", block, "must be >= 1")
    n, c, h, w = _shape(x)
    return x, block, (n, c, h, w)


def depth_to_space(ctx: "OnnxContext") -> list[Value]:
    x, bs, (n, c, h, w) = _block(ctx)
    mode = ctx.attr("mode", "DCR")
    if c % (bs * bs):
        raise ctx.error(f"channels {c} of {x.type} not divisible by blocksize^2 = {bs * bs}")
    if mode == "DCR":
        split, perm = (n, bs, bs, c // (bs * bs), h, w), [0, 3, 4, 1, 5, 2]
    elif mode == "CRD":
        split, perm = (n, c // (bs * bs), bs, bs, h, w), [0, 1, 4, 2, 5, 3]
    else:
        raise ctx.bad_attr("mode", mode, "expected DCR or CRD")
    y = ctx.emit("Transpose", [_reshape(ctx, x, split)], {"perm": perm})
    return [_reshape(ctx, y, (n, c // (bs * bs), h * bs, w * bs), out=0)]


def space_to_depth(ctx: "OnnxContext") -> list[Value]:
    x, bs, (n, c, h, w) = _block(ctx)
    if h % bs or w % bs:
        raise ctx.error(f"spatial dims of {x.type} not divisible by blocksize {bs}")
    mode = ctx.attr("mode", "DCR")  # an attribute from opset 25; DCR before
    if mode not in ("DCR", "CRD"):
        raise ctx.bad_attr("mode", mode, "expected DCR or CRD")
    perm = [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]
    y = ctx.emit("Transpose", [_reshape(ctx, x, (n, c, h // bs, bs, w // bs, bs))], {"perm": perm})
    return [_reshape(ctx, y, (n, c * bs * bs, h // bs, w // bs), out=0)]


# --------------------------------------------------------------------- constant index patterns

def _index_array(values: np.ndarray) -> np.ndarray:
    return values.astype(np.int32 if values.size == 0 or int(values.max()) < 2 ** 31 - 1 else np.int64)


def _select_or_zero(ctx: "OnnxContext", x: Value, source: np.ndarray) -> Value:
    """out[p] = x.flat[source[p]], or 0 where source[p] is -1: a Gather of x flattened and followed by
    one zero element."""
    count = x.type.num_elements
    flat = _reshape(ctx, x, (count,))
    zero = ctx.const(np.zeros(1, x.type.dtype.numpy), "zero")
    padded = ctx.emit("Concat", [flat, zero], {"axis": 0})
    index = ctx.const(_index_array(np.where(source < 0, count, source)), "source_index")
    return ctx.emit("Gather", [padded, index], {"axis": 0}, out=0)


def trilu(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    if x.type.rank < 2:
        raise ctx.error(f"input {x.type} must have rank >= 2")
    rows, cols = _shape(x)[-2:]
    offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    if ctx.has_input(1) and not ctx.input(1).is_const:
        return [_trilu_of_runtime_k(ctx, x, offset)]
    k = int(ctx.const_input(1, "k").reshape(-1)[0]) if ctx.has_input(1) else 0
    keep = offset >= k if int(ctx.attr("upper", 1)) else offset <= k
    keep = np.broadcast_to(keep, _shape(x))
    if keep.all():
        return [x]
    source = np.where(keep, np.arange(x.type.num_elements).reshape(_shape(x)), -1)
    return [_select_or_zero(ctx, x, source)]


def _trilu_of_runtime_k(ctx: "OnnxContext", x: Value, offset: np.ndarray) -> Value:
    """Trilu with k computed at run time: keep = (col - row >= k) for upper, (<= k) for lower,
    compared elementwise with the constant offsets; the shape does not depend on k."""
    k = ctx.input(1)
    if k.type.dtype != DType.i64 or k.type.num_elements != 1:
        raise ctx.error(f"k must be one int64, got {k.type}")
    k = _reshape(ctx, k, ())
    compare = "GreaterOrEqual" if int(ctx.attr("upper", 1)) else "LessOrEqual"
    keep = ctx.emit(compare, [ctx.const(offset.astype(np.int64), "trilu_offsets"), k])
    zero = ctx.const(np.zeros((), x.type.dtype.numpy), "zero")
    return ctx.emit("Where", [keep, x, zero], out=0)


def compress(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    condition = ctx.const_input(1, "condition").reshape(-1).astype(bool)
    if ctx.attr("axis") is None:
        x = _reshape(ctx, x, (x.type.num_elements,))
        axis = 0
    else:
        axis = _axis(ctx, "axis", 0, x.type.rank)
    dim = _shape(x)[axis]
    if condition.size > dim and condition[dim:].any():
        raise ctx.error(f"condition has {condition.size} entries, axis {axis} of {x.type} only {dim}")
    positions = np.nonzero(condition[:dim])[0]
    return [ctx.emit("Gather", [x, ctx.const(_index_array(positions), "positions")], {"axis": axis}, out=0)]


def reverse_sequence(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    shape = _shape(x)
    lengths = ctx.const_input(1, "sequence_lens").reshape(-1).astype(np.int64)
    batch_axis = _axis(ctx, "batch_axis", 1, x.type.rank)
    time_axis = _axis(ctx, "time_axis", 0, x.type.rank)
    if {batch_axis, time_axis} != {0, 1} or lengths.size != shape[batch_axis]:
        raise ctx.error(f"batch_axis {batch_axis} and time_axis {time_axis} must be 0 and 1, and sequence_lens "
                        f"({lengths.size}) one per batch of {x.type}")
    if (lengths < 0).any() or (lengths > shape[time_axis]).any():
        raise ctx.error(f"sequence_lens {lengths.tolist()} must lie in [0, {shape[time_axis]}]")
    time = np.arange(shape[time_axis]).reshape([-1 if k == time_axis else 1 for k in range(len(shape))])
    lens = lengths.reshape([-1 if k == batch_axis else 1 for k in range(len(shape))])
    index = np.broadcast_to(np.where(time < lens, lens - 1 - time, time), shape)
    return [ctx.emit("GatherElements", [x, ctx.const(_index_array(index), "time_index")], {"axis": time_axis},
                     out=0)]


def one_hot(ctx: "OnnxContext") -> list[Value]:
    indices = ctx.input(0)
    depth = int(ctx.const_input(1, "depth").reshape(-1)[0])
    values = ctx.const_input(2, "values").reshape(-1)
    if depth < 1 or values.size != 2:
        raise ctx.error(f"depth {depth} must be >= 1 and values [off, on] two numbers, got {values.tolist()}")
    axis = _axis(ctx, "axis", -1, indices.type.rank + 1)
    off, on = values[0], values[1]
    if indices.is_const:
        idx = indices.const.astype(np.int64)
        idx = np.where(idx < 0, idx + depth, idx)
        hot = np.expand_dims(idx, -1) == np.arange(depth)
        result = np.moveaxis(np.where(hot, on, off).astype(values.dtype), -1, axis)
        return [ctx.const(result, out=0)]
    # Not a Gather of table rows: an index outside [-depth, depth) must give off values (ONNX), where a
    # Gather fails the call (as onnxruntime's does)
    index = _indices(ctx, 0)
    if index.type.dtype != DType.i64:
        index = ctx.emit("Cast", [index], {"to": DType.i64.value})
    zero, size = ctx.const(np.array(0, np.int64), "zero"), ctx.const(np.array(depth, np.int64), "depth")
    index = ctx.emit("Where", [ctx.emit("Less", [index, zero]), ctx.emit("Add", [index, size]), index])
    dims = _shape(indices)
    index = ctx.emit("Reshape", [index], {"shape": dim_list((*dims[:axis], 1, *dims[axis:]))})
    iota = np.arange(depth, dtype=np.int64).reshape([depth if k == axis else 1 for k in range(len(dims) + 1)])
    hot = ctx.emit("Equal", [index, ctx.const(iota, "one_hot_positions")])
    return [ctx.emit("Where", [hot, ctx.const(np.array(on, values.dtype), "on"),
                               ctx.const(np.array(off, values.dtype), "off")], out=0)]


def eye_like(ctx: "OnnxContext") -> list[Value]:
    import onnx.helper
    x = ctx.input(0)
    if x.type.rank != 2:
        raise ctx.error(f"input {x.type} must be 2-D")
    dtype = x.type.dtype.numpy if ctx.attr("dtype") is None else \
        onnx.helper.tensor_dtype_to_np_dtype(int(ctx.attr("dtype")))
    rows, cols = _shape(x)
    return [ctx.const(np.eye(rows, cols, int(ctx.attr("k", 0)), dtype=dtype), out=0)]


def size(ctx: "OnnxContext") -> list[Value]:
    return [ctx.const(np.array(math.prod(_shape(ctx.input(0))), np.int64), out=0)]


INDEXING_CONVERTERS: dict[str, Converter] = {
    "Gather": gather,
    "GatherElements": gather_elements,
    "GatherND": gather_nd,
    "Scatter": scatter_elements,
    "ScatterElements": scatter_elements,
    "ScatterND": scatter_nd,
    "Expand": expand,
    "Tile": tile,
    "DepthToSpace": depth_to_space,
    "SpaceToDepth": space_to_depth,
    "Trilu": trilu,
    "Compress": compress,
    "ReverseSequence": reverse_sequence,
    "OneHot": one_hot,
    "EyeLike": eye_like,
    "Size": size,
}
