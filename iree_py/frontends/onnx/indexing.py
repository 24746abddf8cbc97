"""ONNX indexing ops -> normalized ops.

Gather, GatherElements, GatherND, ScatterElements (and opset 9-10 Scatter), ScatterND map one to
one onto the IR ops of the same names (docs/ir.md, "Indexing ops"); the index tensors may be
computed at run time. The rest are compositions, with every shape and every index pattern known
at import:

  Trilu            Gather of the flattened input followed by one zero, with a constant index map
                   (kept elements read themselves, the others read the zero)   (constant k)
  Compress         Gather with the constant positions of the true conditions
  ReverseSequence  GatherElements along the time axis with constant indices   (constant lengths)
  OneHot           Where(indices' == iota(depth), on, off), indices' the indices with negatives
                   counted from depth: one outside [-depth, depth) gives off values (constant depth)
  TensorScatter    ScatterElements with run-time indices (linear: a write past the end is skipped,
                   as every scatter does; circular: wraps)

Given at run time instead: ReverseSequence's sequence_lens (the time index lens - 1 - t (t < lens,
else t) computed by elementwise ops, clamped into [0, T - 1], read by GatherElements), OneHot's depth
(Equal(indices, iota(depth)) selects on/off values) and Compress's condition (below).

  NonZero   NonZeroCount, a symbol read from the count (graph.symbol_sources), NonZero
  Compress  (condition given at run time) NonZero of the condition (cut to the axis length),
            then a Gather of the positions along the axis (the flattened input without axis)

Unique is in sorting.py.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.frontends.onnx.compose import Converter, axis_attr, optional_input, reshape, shape_of
from iree_py.frontends.onnx.dims import dim_list, dims_of
from iree_py.frontends.onnx.symbolic import (INDEX_DTYPES, SymbolicConverter, _as_i64, _cast, _from_end, _i64, _iota,
                                             _runtime, elements, is_known, known_result, runtime_symbols, symbol_name)
from iree_py.ir.graph import Value
from iree_py.ir.symbols import Expr, call, dim
from iree_py.ir.types import Dim, DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


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


def compress_constant(ctx: "OnnxContext") -> list[Value]:
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


def _constant_reverse_sequence(ctx: "OnnxContext") -> list[Value]:
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


def tensor_scatter(ctx: "OnnxContext") -> list[Value]:
    """Opset 24: cache[b, ..., w[b] + l (mod S: circular), ...] = update[b, ..., l, ...] along axis:
    one ScatterElements whose indices are write_indices[b] + l, broadcast to the update's shape."""
    cache, update = ctx.input(0), ctx.input(1)
    cs, us = shape_of(cache), shape_of(update)
    axis = axis_attr(ctx, len(cs), -2)
    mode = ctx.attr("mode", "linear")
    if mode not in ("linear", "circular"):
        raise ctx.bad_attr("mode", mode, "expected linear or circular")
    if axis == 0 or len(us) != len(cs) or any(u != c for i, (u, c) in enumerate(zip(us, cs)) if i != axis) \
            or us[axis] > cs[axis]:
        raise ctx.error(f"update {update.type} does not fit cache {cache.type} along axis {axis} (not the batch axis)")
    along = np.arange(us[axis], dtype=np.int64).reshape([us[axis] if i == axis else 1 for i in range(len(us))])
    indices = ctx.const(np.broadcast_to(along, us).copy(), "sequence_index")
    writes = optional_input(ctx, 2)
    if writes is not None:
        if shape_of(writes) != (cs[0],):
            raise ctx.error(f"write_indices {writes.type} must be [{cs[0]}] (one per batch)")
        if writes.type.dtype != DType.i64:
            writes = ctx.emit("Cast", [writes], {"to": "i64"})
        indices = ctx.emit("Add", [indices, reshape(ctx, writes, (cs[0],) + (1,) * (len(cs) - 1))])
    if mode == "circular":
        indices = ctx.emit("FloorMod", [indices, ctx.const(np.array(cs[axis], np.int64), "max_sequence")])
    attrs = {"axis": axis, "reduction": "none"}
    return [ctx.emit("ScatterElements", [cache, indices, update], attrs, out=0)]


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


def _axis_of(ctx: "OnnxContext", name: str, default: int, rank: int) -> int:
    axis = int(ctx.attr(name, default))
    if not -rank <= axis < rank:
        raise ctx.bad_attr(name, axis, f"must name an axis of a rank-{rank} input")
    return axis % rank


def runtime_reverse_sequence(static: Callable[["OnnxContext"], list[Value]]) -> Callable[["OnnxContext"], list[Value]]:
    """ReverseSequence: `static` for constant sequence_lens, else the time index computed at run time."""
    def convert(ctx: "OnnxContext") -> list[Value]:
        lens = ctx.input(1)
        if lens.is_const:
            return static(ctx)
        x = ctx.input(0)
        shape = dims_of(x)
        rank = len(shape)
        batch_axis, time_axis = _axis_of(ctx, "batch_axis", 1, rank), _axis_of(ctx, "time_axis", 0, rank)
        if not x.type.is_static or {batch_axis, time_axis} != {0, 1}:
            raise ctx.error(f"batch_axis {batch_axis} and time_axis {time_axis} must be 0 and 1 of a static "
                            f"input, got {x.type}")
        if lens.type.dtype not in INDEX_DTYPES or lens.type.rank != 1 or lens.type.shape[0] != shape[batch_axis]:
            raise ctx.error(f"sequence_lens {lens.type} must be int64 with one length per batch of {x.type}")
        steps = int(shape[time_axis])
        i64 = np.int64
        time = ctx.const(np.arange(steps, dtype=i64).reshape([-1 if k == time_axis else 1 for k in range(rank)]),
                         "time")
        lengths = ctx.emit("Reshape", [_cast(ctx, lens, DType.i64)],
                           {"shape": [int(shape[batch_axis]) if k == batch_axis else 1 for k in range(rank)]})
        reversed_ = ctx.emit("Sub", [ctx.emit("Sub", [lengths, ctx.const(np.array(1, i64), "one")]), time])
        index = ctx.emit("Where", [ctx.emit("Less", [time, lengths]), reversed_, time])
        index = ctx.emit("Max", [ctx.emit("Min", [index, ctx.const(np.array(steps - 1, i64), "last")]),
                                 ctx.const(np.array(0, i64), "zero")])
        index = ctx.emit("Expand", [index], {"shape": [int(d) for d in shape]})
        return [ctx.emit("GatherElements", [x, index], {"axis": time_axis}, out=0)]
    return convert


def _runtime_one_hot(ctx: "OnnxContext") -> list[Value] | None:
    """OneHot with depth given at run time: Where(indices' == iota(depth), on, off), indices' being
    the indices with negatives counted from depth (out of range rows stay off, as ONNX says)."""
    if not _runtime(ctx, 1):
        return None
    indices, depth_v, values = ctx.input(0), ctx.input(1), ctx.input(2)
    if depth_v.type.dtype == DType.bool or not depth_v.type.is_static or depth_v.type.num_elements != 1:
        raise ctx.error(f"depth '{depth_v.name}' is {depth_v.type}; a numeric scalar or 1-element tensor is required")
    if values.type.shape != (2,):
        raise ctx.error(f"values '{values.name}' is {values.type}; it must hold [off, on]")
    depth_i = ctx.emit("Reshape", [ctx.emit("Cast", [depth_v], {"to": DType.i64.value})], {"shape": [1]})
    depth_i = ctx.emit("Max", [depth_i, _i64(ctx, 0, "zero")], hint=f"{ctx.node_name}_depth")
    depth = runtime_symbols(ctx, depth_i, "depth")[0]
    rank = indices.type.rank + 1
    axis = int(ctx.attr("axis", -1))
    if not -rank <= axis < rank:
        raise ctx.error(f"axis {axis} is out of range for output rank {rank}")
    axis = axis + rank if axis < 0 else axis
    index = _from_end(ctx, _as_i64(ctx, indices), depth_i)  # float indices truncate, as onnxruntime casts
    index = ctx.emit("Reshape", [index], {"shape": [*dims_of(indices)[:axis], 1, *dims_of(indices)[axis:]]})
    iota_shape = [1] * rank
    iota_shape[axis] = depth
    iota = ctx.emit("Reshape", [_iota(ctx, depth)], {"shape": iota_shape})
    off = ctx.emit("Slice", [values], {"starts": [0], "ends": [1], "steps": [1]})
    on = ctx.emit("Slice", [values], {"starts": [1], "ends": [2], "steps": [1]})
    return [ctx.emit("Where", [ctx.emit("Equal", [index, iota]), on, off], out=0)]


def _symbolic_gather(ctx: "OnnxContext") -> list[Value] | None:
    data, indices = ctx.input(0), ctx.input(1)
    if is_known(ctx, indices):
        raise ctx.error(f"indices '{indices.name}' are computed from symbolic dims; only constant indices "
                        f"into shapes are supported")
    if not is_known(ctx, data):
        return None
    if not indices.is_const:
        raise ctx.error(f"gathers from a shape computed from symbolic dims with the run-time indices "
                        f"'{indices.name}'; only constant indices are supported")
    axis = int(ctx.attr("axis", 0))
    known = elements(ctx, data)
    index = np.asarray(indices.const).astype(np.int64)
    if not -known.ndim <= axis < known.ndim:
        raise ctx.bad_attr("axis", axis, f"out of range for '{data.name}' of rank {known.ndim}")
    size = known.shape[axis]
    if ((index < -size) | (index >= size)).any():  # known at import: refused here, not left to run time
        raise ctx.error(f"indices {index.tolist()} into '{data.name}' (computed from symbolic dims) are outside the "
                        f"range [{-size}, {size - 1}] of axis {axis}")
    taken = np.take(known, index, axis=axis)
    return [known_result(ctx, taken, data.type.dtype)]


CONVERTERS: dict[str, Converter] = {
    "Gather": gather,
    "GatherElements": gather_elements,
    "GatherND": gather_nd,
    "Scatter": scatter_elements,
    "ScatterElements": scatter_elements,
    "ScatterND": scatter_nd,
    "TensorScatter": tensor_scatter,
    "Trilu": trilu,
    "NonZero": nonzero,
    "Compress": compress,
    "ReverseSequence": runtime_reverse_sequence(_constant_reverse_sequence),
    "OneHot": one_hot,
}

SYMBOLIC_CONVERTERS: dict[str, SymbolicConverter] = {
    "Gather": _symbolic_gather,
    "OneHot": _runtime_one_hot,
}

SHAPE_INPUTS: dict[str, tuple[int, ...]] = {"OneHot": (1,)}
