"""ONNX Slice and Split -> normalized Slice ops (docs/ir.md, Slice), static, on symbolic dims (bounds
clamped with min/max Exprs) and with parameters given at run time:

  Slice                axes and/or steps at run time (any sign): per axis, start/step/count are
                       normalized by i64 ops, count is a symbol, and the axis is gathered at
                       start + step * iota(count).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx.compose import Converter, checked_axis
from iree_py.frontends.onnx.dims import as_dim, dims_of
from iree_py.frontends.onnx.symbolic import (END_OF_AXIS, INDEX_DTYPES, SymbolicConverter, _clamp, _from_end, _i64,
                                             _index_input, _iota, _runtime, _static_data, _sum_rows, const_ints,
                                             elements, floordiv, is_known, known_result, runtime_symbols, shape_input,
                                             smax, smin)
from iree_py.ir.graph import Value
from iree_py.ir.symbols import call, dim
from iree_py.ir.types import Dim, DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


def normalize_slice(dim: int, start: int, end: int, step: int) -> tuple[int, int]:
    """ONNX Slice clamping for one axis: negative indices count from the end, out-of-range ones
    (INT_MAX included) clamp; an empty range becomes end == start (docs/ir.md, Slice)."""
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        return start, max(end, start)
    start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return start, min(end, start)


def _slice_lists(ctx: "OnnxContext") -> tuple[list[int], list[int], list[int], list[int]]:
    """(starts, ends, axes, steps) as the node gives them: attributes before opset 10, constant inputs after."""
    if ctx.opset < 10:
        starts, ends = ([int(v) for v in ctx.attr(k, [])] for k in ("starts", "ends"))
        axes = ctx.attr("axes")
        axes = list(range(len(starts))) if axes is None else [int(a) for a in axes]
        return starts, ends, axes, [1] * len(starts)
    starts = [int(v) for v in ctx.const_input(1, "starts").reshape(-1)]
    ends = [int(v) for v in ctx.const_input(2, "ends").reshape(-1)]
    axes = [int(v) for v in ctx.const_input(3, "axes").reshape(-1)] if ctx.has_input(3) else list(range(len(starts)))
    steps = [int(v) for v in ctx.const_input(4, "steps").reshape(-1)] if ctx.has_input(4) else [1] * len(starts)
    return starts, ends, axes, steps


def slice_(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    shape = dims_of(x)
    starts, ends, axes, steps = _slice_lists(ctx)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} differ in length")
    axes = [checked_axis(ctx, a, len(shape), "axes") for a in axes]
    if len(set(axes)) != len(axes):
        raise ctx.bad_attr("axes", axes, "an axis is repeated")
    if 0 in steps:
        raise ctx.error(f"steps {steps} contain 0")
    full = {"starts": [0] * len(shape), "ends": list(shape), "steps": [1] * len(shape)}
    for axis, start, end, step in zip(axes, starts, ends, steps):
        full["starts"][axis], full["ends"][axis] = normalize_slice(shape[axis], start, end, step)
        full["steps"][axis] = step
    if full == {"starts": [0] * len(shape), "ends": list(shape), "steps": [1] * len(shape)}:
        return [x]
    return [ctx.emit("Slice", [x], full, out=0)]


def _split_sizes(ctx: "OnnxContext", dim: int) -> list[int]:
    count = len(ctx.node.output)
    if ctx.opset < 13 and ctx.attr("split") is not None:
        return [int(v) for v in ctx.attr("split")]
    if ctx.opset >= 13 and ctx.has_input(1):
        return [int(v) for v in ctx.const_input(1, "split").reshape(-1)]
    if ctx.opset >= 18:
        count = int(ctx.attr("num_outputs", count))
        part = -(-dim // count)
        return [part] * (dim // part) + ([dim % part] if dim % part else [])
    if dim % count:
        raise ctx.error(f"axis size {dim} does not split evenly into {count} outputs")
    return [dim // count] * count


def split(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    shape = dims_of(x)
    axis = checked_axis(ctx, int(ctx.attr("axis", 0)), len(shape))
    sizes = _split_sizes(ctx, shape[axis])
    if sum(sizes) != shape[axis] or any(n < 0 for n in sizes) or len(sizes) != len(ctx.node.output):
        raise ctx.error(f"split sizes {sizes} must be {len(ctx.node.output)} non-negative sizes summing to "
                        f"axis {axis} of {x.type}")
    if len(sizes) == 1:
        return [x]
    results, offset = [], 0
    for i, n in enumerate(sizes):
        attrs = {"starts": [0] * len(shape), "ends": list(shape), "steps": [1] * len(shape)}
        attrs["starts"][axis], attrs["ends"][axis] = offset, offset + n
        results.append(ctx.emit("Slice", [x], attrs, out=i))
        offset += n
    return results


def _slice_bound(ctx: "OnnxContext", index: Dim, size: Dim) -> Dim:
    """A positive-step Slice start or end clamped into [0, size] (negative counts from the end)."""
    if isinstance(index, int):
        if index >= END_OF_AXIS:
            return size
        if index <= -END_OF_AXIS:
            return 0
        return smin(ctx, index, size) if index >= 0 else smax(ctx, as_dim(size + index), 0)
    return smin(ctx, index, size)  # a dim known at import: non-negative


def _symbolic_slice(ctx: "OnnxContext") -> list[Value] | None:
    x = ctx.input(0)
    if is_known(ctx, x):
        return _slice_known(ctx, x)
    if ctx.opset < 10:
        starts, ends, axes, steps = _slice_lists(ctx)
    else:
        count = ctx.input(1).type.num_elements if ctx.input(1).type.is_static else 0
        axes = const_ints(ctx, 3, "axes") if ctx.has_input(3) else list(range(count))
        steps = const_ints(ctx, 4, "steps") if ctx.has_input(4) else [1] * count
        if any(not -x.type.rank <= a < x.type.rank for a in axes):
            raise ctx.bad_attr("axes", axes, f"an axis is out of range for {x.type}")
        runtime = any(elements(ctx, ctx.input(i)) is None for i in (1, 2))
        if runtime and x.type.is_static and all(s > 0 for s in steps) and len(axes) == count:
            begin, end = _clamped_bounds(ctx, x, axes)  # resolved by i64 ops: the symbols are >= 0
            starts, ends = runtime_symbols(ctx, begin, "starts"), runtime_symbols(ctx, end, "ends")
        elif runtime:
            raise ctx.error(f"a Slice of {x.type} with starts/ends given at run time is supported for a static "
                            f"input with positive steps only")
        else:
            starts, ends = shape_input(ctx, 1, "starts")[0], shape_input(ctx, 2, "ends")[0]
            if x.type.is_static and all(isinstance(d, int) for d in starts + ends):
                return None
    shape = list(dims_of(x))
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} differ in length")
    full: dict[str, list[Dim]] = {"starts": [0] * len(shape), "ends": list(shape), "steps": [1] * len(shape)}
    for axis, start, end, step in zip(axes, starts, ends, steps):
        axis = axis + len(shape) if axis < 0 else axis
        size = shape[axis]
        if step <= 0:
            if isinstance(size, int) and isinstance(start, int) and isinstance(end, int):
                full["starts"][axis], full["ends"][axis] = normalize_slice(size, start, end, step)
                full["steps"][axis] = step
                continue
            raise ctx.error(f"Slice with step {step} on the symbolic axis {axis} of {x.type} is not supported")
        begin = _slice_bound(ctx, start, size)
        full["starts"][axis] = begin
        full["ends"][axis] = smax(ctx, _slice_bound(ctx, end, size), begin)
        full["steps"][axis] = step
    if full == {"starts": [0] * len(shape), "ends": list(shape), "steps": [1] * len(shape)}:
        return [x]
    return [ctx.emit("Slice", [x], full, out=0)]


def _clamped_bounds(ctx: "OnnxContext", x: Value, axes: list[int]) -> tuple[Value, Value]:
    """A static input's Slice starts and ends (inputs 1, 2; positive steps) clamped into [0, dim] at
    run time: negative ones count from the end, and end >= start."""
    i64 = DType.i64.numpy
    rank = x.type.rank
    sizes = ctx.const(np.array([dims_of(x)[a + rank if a < 0 else a] for a in axes], i64), "axis_sizes")
    zero = ctx.const(np.array(0, i64), "zero")
    bounds_: list[Value] = []
    for i, what in ((1, "starts"), (2, "ends")):
        v = ctx.input(i)
        if v.type.dtype not in INDEX_DTYPES:
            raise ctx.error(f"{what} '{v.name}' is {v.type}; a {what} given at run time must be int64 or int32")
        if v.type.dtype != DType.i64:
            v = ctx.emit("Cast", [v], {"to": DType.i64.value})
        from_end = ctx.emit("Where", [ctx.emit("Less", [v, zero]), ctx.emit("Add", [v, sizes]), v])
        hint = f"{ctx.node_name}_{what}" if what == "starts" else f"{ctx.node_name}_ends_clamped"
        bounds_.append(ctx.emit("Min", [ctx.emit("Max", [from_end, zero]), sizes], hint=hint))
    begin, end = bounds_
    return begin, ctx.emit("Max", [end, begin], hint=f"{ctx.node_name}_ends")


def _slice_known(ctx: "OnnxContext", x: Value) -> list[Value]:
    array = elements(ctx, x)
    if ctx.opset < 10:
        starts, ends, axes, steps = _slice_lists(ctx)
    else:
        starts, ends = const_ints(ctx, 1, "starts"), const_ints(ctx, 2, "ends")
        axes = const_ints(ctx, 3, "axes") if ctx.has_input(3) else list(range(len(starts)))
        steps = const_ints(ctx, 4, "steps") if ctx.has_input(4) else [1] * len(starts)
    index = [slice(None)] * array.ndim
    for axis, start, end, step in zip(axes, starts, ends, steps):
        index[axis] = slice(start, end, step)
    return [known_result(ctx, array[tuple(index)], x.type.dtype)]


def _symbolic_split(ctx: "OnnxContext") -> list[Value] | None:
    """Split of a symbolic axis, or by sizes given at run time: Slices at the running offsets."""
    x = ctx.input(0)
    rank = x.type.rank
    axis = int(ctx.attr("axis", 0))
    if not -rank <= axis < rank:
        raise ctx.bad_attr("axis", axis, f"out of range for {x.type}")
    axis = axis + rank if axis < 0 else axis
    size = dims_of(x)[axis]
    count = len(ctx.node.output) if ctx.node is not None else 1
    if ctx.opset >= 13 and ctx.has_input(1):
        sizes, runtime = shape_input(ctx, 1, "split")
        if isinstance(size, int) and not runtime and all(isinstance(s, int) for s in sizes):
            return None
    elif ctx.opset < 13 and ctx.attr("split") is not None:
        if isinstance(size, int):
            return None
        sizes = [int(s) for s in ctx.attr("split")]
    elif isinstance(size, int):
        return None
    elif ctx.opset >= 18 and ctx.attr("num_outputs") is not None:
        count = int(ctx.attr("num_outputs"))
        part = dim(call("ceildiv", size, count))
        sizes = [part] * (count - 1) + [as_dim(size - part * (count - 1))]
    else:
        part = floordiv(size, count)  # ONNX wants size % count == 0; the last part takes any rest
        sizes = [part] * (count - 1) + [as_dim(size - part * (count - 1))]
    if len(sizes) != count:
        raise ctx.error(f"split sizes {sizes} must be {count} sizes, one per output")
    shape = list(dims_of(x))
    results, offset = [], 0
    for i, n in enumerate(sizes):
        starts: list[Dim] = [0] * rank
        ends: list[Dim] = list(shape)
        starts[axis], ends[axis] = as_dim(offset), as_dim(offset + n)
        results.append(ctx.emit("Slice", [x], {"starts": starts, "ends": ends, "steps": [1] * rank}, out=i))
        offset = offset + n
    return results


def _slice_params(ctx: "OnnxContext", rank: int, k: int) -> tuple[Value, Value, Value, Value]:
    """Per input axis (i64 [rank] each): raw start, end and step, and whether the axis is sliced."""
    starts, ends = _index_input(ctx, 1, "starts"), _index_input(ctx, 2, "ends")
    axes = _index_input(ctx, 3, "axes") if ctx.has_input(3) else _i64(ctx, np.arange(k), "axes")
    steps = _index_input(ctx, 4, "steps") if ctx.has_input(4) else _i64(ctx, np.ones(k), "steps")
    row = ctx.emit("Reshape", [_from_end(ctx, axes, _i64(ctx, rank, "rank"))], {"shape": [1, k]})
    hit = ctx.emit("Cast", [ctx.emit("Equal", [row, _i64(ctx, np.arange(rank).reshape(rank, 1), "in_axes")])],
                   {"to": DType.i64.value})

    def pick(v: Value) -> Value:
        return _sum_rows(ctx, ctx.emit("Mul", [hit, ctx.emit("Reshape", [v], {"shape": [1, k]})]))
    return pick(starts), pick(ends), pick(steps), _sum_rows(ctx, hit)


def _runtime_slice(ctx: "OnnxContext") -> list[Value] | None:
    """Slice of a static input with axes or steps given at run time (or any negative step): each
    axis is gathered at start + step * iota(count) with ONNX's clamping done by i64 ops."""
    x = ctx.input(0)
    steps_const = not ctx.has_input(4) or not _runtime(ctx, 4)
    positive = steps_const and all(int(s) > 0 for s in np.asarray(
        ctx.input(4).const if ctx.has_input(4) and ctx.input(4).is_const else [1]).reshape(-1))
    if ctx.opset < 10 or is_known(ctx, x) or not any(_runtime(ctx, i) for i in (1, 2, 3, 4)):
        return _symbolic_slice(ctx)
    if not _runtime(ctx, 3) and positive:
        return _symbolic_slice(ctx)
    x = _static_data(ctx, "Slice")
    dims, rank = [int(d) for d in dims_of(x)], x.type.rank
    k = ctx.input(1).type.num_elements if ctx.input(1).type.is_static else -1
    if k < 0 or k > rank:
        raise ctx.error(f"starts '{ctx.input(1).name}' is {ctx.input(1).type}; at most {rank} entries are allowed")
    if k == 0:
        return [ctx.emit("Reshape", [x], {"shape": dims}, out=0)]
    s, e, t, sliced = _slice_params(ctx, rank, k)
    size, zero, one = _i64(ctx, dims, "dims"), _i64(ctx, 0, "zero"), _i64(ctx, 1, "one")
    untouched = ctx.emit("Equal", [sliced, zero])
    s = ctx.emit("Where", [untouched, zero, _from_end(ctx, s, size)])
    e = ctx.emit("Where", [untouched, size, _from_end(ctx, e, size)])
    t = ctx.emit("Where", [untouched, one, t])
    forward = ctx.emit("Less", [zero, t])
    last = ctx.emit("Sub", [size, one])
    s = ctx.emit("Where", [forward, _clamp(ctx, s, zero, size), _clamp(ctx, s, zero, last)])
    e = ctx.emit("Where", [forward, _clamp(ctx, e, zero, size), _clamp(ctx, e, _i64(ctx, -1, "minus_one"), last)])
    span = ctx.emit("Where", [forward, ctx.emit("Sub", [e, s]), ctx.emit("Sub", [s, e])])
    stride = ctx.emit("Max", [ctx.emit("Where", [forward, t, ctx.emit("Neg", [t])]), one])  # step 0 -> 1
    count = ctx.emit("Div", [ctx.emit("Add", [ctx.emit("Max", [span, zero]), ctx.emit("Sub", [stride, one])]),
                             stride], hint=f"{ctx.node_name}_counts")
    counts = runtime_symbols(ctx, count, "Slice length")
    y = x
    for axis in range(rank):
        start = ctx.emit("Slice", [s], {"starts": [axis], "ends": [axis + 1], "steps": [1]})
        step = ctx.emit("Slice", [t], {"starts": [axis], "ends": [axis + 1], "steps": [1]})
        index = ctx.emit("Add", [ctx.emit("Mul", [_iota(ctx, counts[axis]), step]), start])
        y = ctx.emit("Gather", [y, index], {"axis": axis}, out=0 if axis == rank - 1 else None)
    return [y]


CONVERTERS: dict[str, Converter] = {
    "Slice": slice_,
    "Split": split,
}

SYMBOLIC_CONVERTERS: dict[str, SymbolicConverter] = {
    "Slice": _runtime_slice,  # falls back to _symbolic_slice
    "Split": _symbolic_split,
}

SHAPE_INPUTS: dict[str, tuple[int, ...]] = {"Slice": (1, 2, 3, 4), "Split": (1,)}
