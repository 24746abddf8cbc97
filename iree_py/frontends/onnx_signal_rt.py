"""Signal-area ops whose shape-defining inputs arrive at run time (round 3, area `signal`).

  Range (float)     count = max(ceil((limit - start) / delta), 0) computed by small nodes (float64 for
                    f64 inputs, else float32), read as a symbol; y = start + delta * iota(count),
                    computed in float32 (float64) and cast back, as numpy's arange fills f16/bf16.
  Hann/Hamming/BlackmanWindow with a run-time size: the size is read as a symbol n; the window is
                    sum_k (-1)^k a_k cos(2 pi k i / N) over i = iota(n), N = size (periodic) or
                    size - 1 (symmetric), in float32, cast to output_datatype.
  ReverseSequence with run-time sequence_lens: the time index lens - 1 - t (t < lens, else t) is
                    computed by elementwise ops, clamped into [0, T - 1], and read by GatherElements.
  MaxUnpool with a run-time output_shape: as the ONNX reference, scatter into the inferred shape
                    (the static converter), then zero-pad each axis at its end up to output_shape.

A count that is NaN (delta 0, NaN inputs) or negative gives an empty Range; counts are capped at
RANGE_MAX_COUNT so the cast to int64 is always defined.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np
import onnx.helper

from iree_py.frontends.onnx_dims import dims_of
from iree_py.frontends.onnx_indexing import reverse_sequence
from iree_py.frontends.onnx_misc import MISC_CONVERTERS
from iree_py.frontends.onnx_signal import HAMMING_ALPHA, SIGNAL_CONVERTERS
from iree_py.ir.graph import Value
from iree_py.ir.types import Dim, DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

FLOAT_RANGE_DTYPES = (DType.f32, DType.f64, DType.f16, DType.bf16)
INDEX_DTYPES = (DType.i64, DType.i32)
RANGE_MAX_COUNT = float(1 << 31)


def _scalar(ctx: "OnnxContext", v: Value) -> Value:
    return v if v.type.rank == 0 else ctx.emit("Reshape", [v], {"shape": []})


def _cast(ctx: "OnnxContext", v: Value, dtype: DType, out: int | None = None) -> Value:
    if v.type.dtype == dtype and out is None:
        return v
    return ctx.emit("Cast", [v], {"to": dtype.value}, out=out)


def _const(ctx: "OnnxContext", value: float, dtype: DType, hint: str) -> Value:
    return ctx.const(np.array(value, dtype.numpy), hint)


def iota(ctx: "OnnxContext", n: Dim, dtype: DType) -> Value:
    """[0, 1, ..., n - 1] of `dtype` for a length `n` known only at run time (exclusive CumSum of ones)."""
    one = ctx.const(np.array(1, np.int64), "one")
    ones = ctx.emit("Expand", [one], {"shape": [n]})
    counted = ctx.emit("CumSum", [ones], {"axis": 0, "exclusive": 1, "reverse": 0})
    return _cast(ctx, counted, dtype)


def _length_symbol(ctx: "OnnxContext", count: Value, what: str) -> Dim:
    """The symbol read at run time from the int64 scalar `count` (already non-negative)."""
    from iree_py.frontends.onnx_symbolic import runtime_symbols
    flat = ctx.emit("Reshape", [count], {"shape": [1]}, hint=f"{ctx.node_name}_count")
    return runtime_symbols(ctx, flat, what)[0]


# ------------------------------------------------------------------------------------ float Range

def float_range(ctx: "OnnxContext", values: list[Value]) -> list[Value]:
    """Range of float start/limit/delta, some given at run time."""
    dtype = values[0].type.dtype
    if dtype not in FLOAT_RANGE_DTYPES:
        raise ctx.error(f"Range of {dtype.value} with a start, limit or delta given at run time is not "
                        f"supported; only int64/int32 and float32/float64/float16/bfloat16")
    if any(v.type.dtype != dtype for v in values) or any(v.type.num_elements != 1 for v in values):
        raise ctx.error(f"start, limit and delta must be scalars of one dtype, got "
                        f"{', '.join(str(v.type) for v in values)}")
    compute = DType.f64 if dtype == DType.f64 else DType.f32
    start, limit, delta = (_cast(ctx, _scalar(ctx, v), compute) for v in values)
    steps = ctx.emit("Ceil", [ctx.emit("Div", [ctx.emit("Sub", [limit, start]), delta])])
    zero, cap = _const(ctx, 0.0, compute, "zero"), _const(ctx, RANGE_MAX_COUNT, compute, "max_count")
    capped = ctx.emit("Where", [ctx.emit("Less", [steps, cap]), steps, cap])
    positive = ctx.emit("Greater", [capped, zero])  # false for NaN
    count = _cast(ctx, ctx.emit("Where", [positive, capped, zero]), DType.i64)
    n = _length_symbol(ctx, count, "Range length")
    y = ctx.emit("Add", [ctx.emit("Mul", [iota(ctx, n, compute), delta]), start])
    return [_cast(ctx, y, dtype, out=0)]


# ---------------------------------------------------------------------------------------- windows

def _runtime_window(ctx: "OnnxContext", coefficients: tuple[float, ...]) -> Value:
    size = ctx.input(0)
    if size.type.dtype not in INDEX_DTYPES or size.type.num_elements != 1:
        raise ctx.error(f"size (input 0) {size.type} must be one int32 or int64 value")
    size = _cast(ctx, _scalar(ctx, size), DType.i64)
    zero = ctx.const(np.array(0, np.int64), "zero")
    n = _length_symbol(ctx, ctx.emit("Max", [size, zero]), "window size")
    periodic = bool(ctx.attr("periodic", 1))
    period = size if periodic else ctx.emit("Sub", [size, ctx.const(np.array(1, np.int64), "one")])
    phase = ctx.emit("Div", [ctx.emit("Mul", [iota(ctx, n, DType.f32), _const(ctx, 2 * np.pi, DType.f32, "two_pi")]),
                             _cast(ctx, period, DType.f32)])
    window: Value | None = None
    for k, a in enumerate(coefficients):
        if k == 0:
            term = ctx.emit("Mul", [ctx.emit("Expand", [_const(ctx, 1.0, DType.f32, "one_f")], {"shape": [n]}),
                                    _const(ctx, a, DType.f32, "a0")])
        else:
            angle = phase if k == 1 else ctx.emit("Mul", [phase, _const(ctx, float(k), DType.f32, f"k{k}")])
            term = ctx.emit("Mul", [ctx.emit("Cos", [angle]), _const(ctx, (-1) ** k * a, DType.f32, f"a{k}")])
        window = term if window is None else ctx.emit("Add", [window, term])
    assert window is not None
    out_type = int(ctx.attr("output_datatype", onnx.TensorProto.FLOAT))
    out_dtype = DType.from_numpy(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(out_type)))
    return _cast(ctx, window, out_dtype, out=0)


def runtime_window(static: Callable[["OnnxContext"], list[Value]],
                   coefficients: tuple[float, ...]) -> Callable[["OnnxContext"], list[Value]]:
    """The window converter: `static` for a constant size, else the window computed at run time."""
    def convert(ctx: "OnnxContext") -> list[Value]:
        if ctx.input(0).is_const:
            return static(ctx)
        return [_runtime_window(ctx, coefficients)]
    return convert


# ------------------------------------------------------------------------------- ReverseSequence

def _axis(ctx: "OnnxContext", name: str, default: int, rank: int) -> int:
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
        batch_axis, time_axis = _axis(ctx, "batch_axis", 1, rank), _axis(ctx, "time_axis", 0, rank)
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


# ------------------------------------------------------------------------------------- MaxUnpool

def runtime_max_unpool(static: Callable[["OnnxContext"], list[Value]]) -> Callable[["OnnxContext"], list[Value]]:
    """MaxUnpool: `static` unless output_shape is given at run time. Then, as the ONNX reference does,
    X is scattered to the flat indices I of the inferred shape (the static path) and the result is
    zero-padded at the end of each axis up to output_shape: per axis a Gather whose index is
    min(o, inferred) of the result with one zero appended to each axis (index `inferred` reads it; a
    Gather fails the call on an index outside its axis). An output_shape below the inferred shape on some
    axis makes that size -1 when read, which the run-time dim checks reject."""
    def convert(ctx: "OnnxContext") -> list[Value]:
        if not ctx.has_input(2) or ctx.input(2).is_const:
            return static(ctx)
        from iree_py.frontends.onnx_symbolic import runtime_symbols
        x, shape = ctx.input(0), ctx.input(2)
        rank = x.type.rank
        if shape.type.dtype not in INDEX_DTYPES or shape.type.shape != (rank,):
            raise ctx.error(f"output_shape (input 2) {shape.type} must be {rank} int64 sizes for X {x.type}")
        inferred = _unpooled(ctx, static)
        dims = [int(d) for d in dims_of(inferred)]
        i64 = np.int64
        sizes = _cast(ctx, shape, DType.i64)
        fits = ctx.emit("Not", [ctx.emit("Less", [sizes, ctx.const(np.array(dims, i64), "inferred_shape")])])
        sizes = ctx.emit("Where", [fits, sizes, ctx.const(np.array(-1, i64), "too_small")])
        out_dims = runtime_symbols(ctx, sizes, "MaxUnpool output_shape")
        y = ctx.emit("Pad", [inferred], {"mode": "constant", "pads": [0] * rank + [1] * rank,
                                         "value": 0 if x.type.dtype.numpy.kind in "iub" else 0.0})
        for axis, (d, n) in enumerate(zip(dims, out_dims)):
            index = ctx.emit("Min", [iota(ctx, n, DType.i64), ctx.const(np.array(d, i64), f"inferred_{axis}")])
            y = ctx.emit("Gather", [y, index], {"axis": axis})
        return [ctx.emit("Reshape", [y], {"shape": list(dims_of(y))}, out=0)]
    return convert


def _unpooled(ctx: "OnnxContext", static: Callable[["OnnxContext"], list[Value]]) -> Value:
    """The static MaxUnpool (inferred output shape) of this node, under a fresh name."""
    assert ctx.node is not None
    node = ctx.node
    unpooled = onnx.helper.make_node("MaxUnpool", list(node.input[:2]), [ctx.names.fresh(f"{node.output[0]}_inferred")],
                                     name=node.name, domain=node.domain)
    unpooled.attribute.extend(node.attribute)
    ctx.node = unpooled
    try:
        return static(ctx)[0]
    finally:
        ctx.node = node


def _signal_rt_converters() -> dict[str, Callable[["OnnxContext"], list[Value]]]:
    windows = {"HannWindow": (0.5, 0.5), "HammingWindow": (HAMMING_ALPHA, 1.0 - HAMMING_ALPHA),
               "BlackmanWindow": (0.42, 0.5, 0.08)}
    converters = {op: runtime_window(SIGNAL_CONVERTERS[op], a) for op, a in windows.items()}
    converters["ReverseSequence"] = runtime_reverse_sequence(reverse_sequence)
    converters["MaxUnpool"] = runtime_max_unpool(MISC_CONVERTERS["MaxUnpool"])
    return converters


SIGNAL_RT_CONVERTERS = _signal_rt_converters()
