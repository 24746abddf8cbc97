"""ONNX Reduce* with `axes` given at run time (ReduceSum opset 13+, the others 18+) -> ReduceRuntimeAxes.

The axes tensor's length k is static, so the output rank is known: R (keepdims=1) or R - k
(keepdims=0). Small i64 ops computed at run time turn the axes into
  mask   i64[R]: 1 where an axis is reduced (negative axes wrap; a repeated axis counts once),
  shape  the output dims (d or 1 per axis; or the kept dims in order), read as symbols,
  valid  1 when every axis lies in [-R, R) and, for keepdims=0, no axis repeats: a run-time check
         (a repeated axis would change the output rank, which is fixed at compile time).
onnxruntime accepts a repeated axis and reduces it once; so does keepdims=1 here.
An empty axes tensor (k = 0) is decided at compile time by the caller (onnx_reduce.py): identity
with noop_with_empty_axes=1, else every axis. ReduceMax/ReduceMin of bool are reduced as 0/1 in
f32 and compared > 0 (an empty max is -inf: false; an empty min +inf: true).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx_dims import dims_of
from iree_py.frontends.onnx_symbolic import INDEX_DTYPES, is_known, runtime_symbols
from iree_py.ir.graph import Value
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

I64 = np.int64


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


def _as_i64(ctx: "OnnxContext", v: Value) -> Value:
    return v if v.type.dtype == DType.i64 else ctx.emit("Cast", [v], {"to": DType.i64.value})


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
