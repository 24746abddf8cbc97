"""ONNX RotaryEmbedding, LpNormalization, Det, Bitwise*, BitCast, SwiGLU, TensorScatter and
CausalConvWithState as compositions of normalized ops (Slice, Concat, Gather, elementwise, Reduce,
Conv, ScatterElements) or as the ops of ops_misc.py.

- RotaryEmbedding (23): x1, x2 = the two halves (or the even/odd elements, interleaved) of the
  first rotary_embedding_dim features; real = cos*x1 - sin*x2, imag = sin*x1 + cos*x2, written back
  in the same places; cos/sin rows are gathered by position_ids when given.
- LpNormalization: x / ||x||_p along axis (p 1 or 2); a zero norm gives 0 (as the ONNX reference).
- Det (22): cofactor expansion along the first row, for matrices up to 4x4.
- BitwiseNot: -x - 1 (two's complement; exact for every integer type, wrapping); BitwiseAnd/Or/Xor:
  the ops of the same names (ops_misc.py).
- SwiGLU (28): a * sigmoid(alpha * a) * b. BitCast (26): the BitCast op (same element size only).
- MaxUnpool: X scattered into zeros at MaxPool's flat indices (ScatterElements).
- TensorScatter (24): a ScatterElements with run-time indices (linear: a write past the end is
  skipped, as every scatter does; circular: wraps).
- CausalConvWithState (27): the depthwise 1-D conv of [past_state, input] (zeros without a past
  state) as a grouped 2-D Conv, optional SiLU; present_state = the last k - 1 positions.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np
import onnx.helper

from iree_py.frontends.onnx_compose import axis_attr, optional_input, out_index, reduce_axes, reshape, scalar, shape_of
from iree_py.ir.graph import Value
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

DET_MAX_SIZE = 4
FLOAT_DTYPES = (DType.f32, DType.f16)


def slice_axis(ctx: "OnnxContext", x: Value, axis: int, start: int, end: int, step: int = 1,
               out: int | None = None) -> Value:
    """x[..., start:end:step, ...] on `axis` (start/end already in range, step > 0)."""
    shape = shape_of(x)
    starts, ends, steps = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], ends[axis], steps[axis] = start, end, step
    return ctx.emit("Slice", [x], {"starts": starts, "ends": ends, "steps": steps}, out=out)


def _require_float(ctx: "OnnxContext", x: Value, what: str) -> None:
    if x.type.dtype not in FLOAT_DTYPES:
        raise ctx.error(f"{what} {x.type} is not supported; only float32 and float16")


# ---------------------------------------------------------------------------------- RotaryEmbedding

def _rotary_layout(ctx: "OnnxContext", x: Value) -> tuple[Value, int]:
    """x as 4-D ([B, H, S, D] for a 4-D input, [B, S, H, D] for a 3-D one) and the heads axis."""
    shape = shape_of(x)
    if len(shape) == 4:
        return x, 1
    if len(shape) != 3:
        raise ctx.error(f"input {x.type} must be [B, H, S, D] or [B, S, hidden]")
    heads = int(ctx.attr("num_heads", 0))
    if heads <= 0 or shape[2] % heads:
        raise ctx.bad_attr("num_heads", heads, f"a 3-D input {x.type} needs num_heads dividing {shape[2]}")
    return reshape(ctx, x, (shape[0], shape[1], heads, shape[2] // heads)), 2


def rotary_embedding(ctx: "OnnxContext") -> list[Value]:
    x, cos, sin = ctx.input(0), ctx.input(1), ctx.input(2)
    _require_float(ctx, x, "input")
    x4, heads_axis = _rotary_layout(ctx, x)
    b, _, _, head_size = shape_of(x4)
    seq = shape_of(x4)[3 - heads_axis]
    dim = int(ctx.attr("rotary_embedding_dim", 0)) or head_size
    if dim % 2 or dim > head_size:
        raise ctx.bad_attr("rotary_embedding_dim", dim, f"must be even and at most the head size {head_size}")
    half = dim // 2
    position_ids = optional_input(ctx, 3)
    if position_ids is not None:
        cos, sin = (ctx.emit("Gather", [c, position_ids], {"axis": 0}) for c in (cos, sin))
    for name, c in (("cos_cache", cos), ("sin_cache", sin)):
        if shape_of(c) != (b, seq, half):
            raise ctx.error(f"{name} gives {list(shape_of(c))} per position, expected {[b, seq, half]} "
                            f"(batch, sequence, rotary_embedding_dim / 2)")
    broadcast = (b, 1, seq, half) if heads_axis == 1 else (b, seq, 1, half)
    cos, sin = reshape(ctx, cos, broadcast), reshape(ctx, sin, broadcast)
    interleaved = bool(ctx.attr("interleaved", 0))
    if interleaved:
        x1, x2 = slice_axis(ctx, x4, 3, 0, dim, 2), slice_axis(ctx, x4, 3, 1, dim, 2)
    else:
        x1, x2 = slice_axis(ctx, x4, 3, 0, half), slice_axis(ctx, x4, 3, half, dim)
    real = ctx.emit("Sub", [ctx.emit("Mul", [cos, x1]), ctx.emit("Mul", [sin, x2])])
    imag = ctx.emit("Add", [ctx.emit("Mul", [sin, x1]), ctx.emit("Mul", [cos, x2])])
    if interleaved:
        pairs = [reshape(ctx, v, (*shape_of(v), 1)) for v in (real, imag)]
        rotated = reshape(ctx, ctx.emit("Concat", pairs, {"axis": 4}), (*shape_of(real)[:3], dim))
    else:
        rotated = ctx.emit("Concat", [real, imag], {"axis": 3})
    if dim < head_size:
        rotated = ctx.emit("Concat", [rotated, slice_axis(ctx, x4, 3, dim, head_size)], {"axis": 3})
    return [reshape(ctx, rotated, shape_of(x), out=0)]


# ---------------------------------------------------------------------------------- LpNormalization

def lp_normalization(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    _require_float(ctx, x, "input")
    axis = axis_attr(ctx, x.type.rank, -1)
    p = int(ctx.attr("p", 2))
    if p not in (1, 2):
        raise ctx.bad_attr("p", p, "only 1 and 2")
    norm = reduce_axes(ctx, x, "l1" if p == 1 else "l2", [axis], 1)
    zero = scalar(ctx, 0.0, "zero", like=x)
    is_zero = ctx.emit("Equal", [norm, zero])
    safe = ctx.emit("Where", [is_zero, scalar(ctx, 1.0, "one", like=x), norm])
    return [ctx.emit("Where", [is_zero, zero, ctx.emit("Div", [x, safe])], out=0)]


# ---------------------------------------------------------------------------------------------- Det

def det(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    _require_float(ctx, x, "input")
    shape = shape_of(x)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ctx.error(f"input {x.type} must be [..., n, n]")
    n = shape[-1]
    if not 1 <= n <= DET_MAX_SIZE:
        raise ctx.error(f"{n}x{n} matrices are not supported (cofactor expansion up to {DET_MAX_SIZE}x{DET_MAX_SIZE})")
    batch = shape[:-2]
    rank = len(shape)
    rows = [slice_axis(ctx, x, rank - 2, i, i + 1) for i in range(n)]
    element = {(i, j): slice_axis(ctx, rows[i], rank - 1, j, j + 1) for i in range(n) for j in range(n)}
    minors: dict[tuple[int, tuple[int, ...]], Value] = {}

    def minor(row: int, cols: tuple[int, ...]) -> Value:
        """Determinant of rows row.. and columns `cols`, as [..., 1, 1]."""
        if len(cols) == 1:
            return element[(row, cols[0])]
        key = (row, cols)
        if key not in minors:
            total = None
            for k, col in enumerate(cols):
                term = ctx.emit("Mul", [element[(row, col)], minor(row + 1, cols[:k] + cols[k + 1:])])
                total = term if total is None else ctx.emit("Sub" if k % 2 else "Add", [total, term])
            minors[key] = total
        return minors[key]

    return [reshape(ctx, minor(0, tuple(range(n))), batch, out=0)]


# ------------------------------------------------------------------------------ BitwiseNot, SwiGLU

def bitwise_not(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    if x.type.dtype.numpy.kind not in "iu":
        raise ctx.error(f"input {x.type} must be an integer tensor")
    one = ctx.const(np.array(1, x.type.dtype.numpy), "one")
    return [ctx.emit("Sub", [ctx.emit("Neg", [x]), one], out=0)]


def _bitwise(op: str) -> Callable[["OnnxContext"], list[Value]]:
    def convert(ctx: "OnnxContext") -> list[Value]:
        a, b = ctx.input(0), ctx.input(1)
        if a.type.dtype.numpy.kind not in "iu" or a.type.dtype != b.type.dtype:
            raise ctx.error(f"operands {a.type} and {b.type} must be integers of one type")
        return [ctx.emit(op, [a, b], out=0)]
    return convert


def bitcast(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    to_code = int(ctx.attr("to"))
    try:
        to = DType.from_numpy(onnx.helper.tensor_dtype_to_np_dtype(to_code))
    except (KeyError, ValueError):
        raise ctx.bad_attr("to", to_code, "not an element type iree-py handles") from None
    if to.itemsize != x.type.dtype.itemsize:
        raise ctx.bad_attr("to", to_code, f"{to.value} differs in size from the input {x.type}")
    if to == DType.bool and x.type.dtype != DType.bool:
        raise ctx.bad_attr("to", to_code, f"bytes of {x.type} are not all valid bools (0/1)")
    if to == x.type.dtype:
        return [x]
    return [ctx.emit("BitCast", [x], {"to": to.value}, out=0)]


def swiglu(ctx: "OnnxContext") -> list[Value]:
    a, b = ctx.input(0), ctx.input(1)
    _require_float(ctx, a, "input A")
    if a.type != b.type:
        raise ctx.error(f"A {a.type} and B {b.type} must have the same shape and type (no broadcasting)")
    alpha = float(ctx.attr("alpha", 1.0))
    scaled = a if alpha == 1.0 else ctx.emit("Mul", [a, scalar(ctx, alpha, "alpha", like=a)])
    swish = ctx.emit("Mul", [a, ctx.emit("Sigmoid", [scaled])])
    return [ctx.emit("Mul", [swish, b], out=0)]


# ----------------------------------------------------------------------------- CausalConvWithState

CAUSAL_ACTIVATIONS = ("none", "silu", "swish")


def causal_conv_with_state(ctx: "OnnxContext") -> list[Value]:
    """float16 computes in float32 (Casts around the Conv), as the ONNX reference does."""
    x, w = ctx.input(0), ctx.input(1)
    _require_float(ctx, x, "input")
    if x.type.rank != 3 or w.type.rank != 3:
        raise ctx.error(f"input {x.type} must be [B, C, L] and weight {w.type} [C, 1, k]")
    batch, channels, length = shape_of(x)
    k = shape_of(w)[2]
    if shape_of(w)[:2] != (channels, 1) or k < 1:
        raise ctx.error(f"weight {w.type} must be [{channels}, 1, k] (depthwise)")
    activation = ctx.attr("activation", "none")
    if activation not in CAUSAL_ACTIVATIONS:
        raise ctx.bad_attr("activation", activation, f"expected one of {', '.join(CAUSAL_ACTIVATIONS)}")
    past = optional_input(ctx, 3)
    if past is None:
        past = ctx.const(np.zeros((batch, channels, k - 1), x.type.dtype.numpy), "past_state")
    elif shape_of(past) != (batch, channels, k - 1):
        raise ctx.error(f"past_state {past.type} must be [{batch}, {channels}, {k - 1}]")
    padded = ctx.emit("Concat", [past, x], {"axis": 2}) if k > 1 else x
    half = x.type.dtype == DType.f16
    inputs = [reshape(ctx, padded, (batch, channels, 1, length + k - 1)), reshape(ctx, w, (channels, 1, 1, k))]
    bias = optional_input(ctx, 2)
    if bias is not None:
        inputs.append(bias)
    if half:
        inputs = [ctx.emit("Cast", [v], {"to": "f32"}) for v in inputs]
    attrs = {"strides": [1, 1], "pads": [0, 0, 0, 0], "dilations": [1, 1], "group": channels}
    y = reshape(ctx, ctx.emit("Conv", inputs, attrs), (batch, channels, length))
    if activation != "none":
        y = ctx.emit("Mul", [y, ctx.emit("Sigmoid", [y])])
    y = ctx.emit("Cast", [y], {"to": "f16"}, out=0) if half else reshape(ctx, y, shape_of(y), out=0)
    if out_index(ctx, 1) is None:
        return [y]
    present = slice_axis(ctx, padded, 2, length, length + k - 1, out=1) if k > 1 else \
        ctx.const(np.zeros((batch, channels, 0), x.type.dtype.numpy), out=1)
    return [y, present]


# ------------------------------------------------------------------------------------ TensorScatter

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


# ---------------------------------------------------------------------------------------- MaxUnpool

def max_unpool(ctx: "OnnxContext") -> list[Value]:
    """Zeros of the output shape, flattened, with X scattered to the flat indices I (as MaxPool's
    Indices output gives them: over the whole output tensor); an index out of range is skipped."""
    x, idx = ctx.input(0), ctx.input(1)
    xs = shape_of(x)
    if shape_of(idx) != xs or idx.type.dtype != DType.i64:
        raise ctx.error(f"indices {idx.type} must be int64 of the shape of X {x.type}")
    kernel = [int(k) for k in ctx.attr("kernel_shape", [])]
    spatial = len(xs) - 2
    if len(kernel) != spatial:
        raise ctx.bad_attr("kernel_shape", kernel, f"expected {spatial} sizes for X {x.type}")
    strides = [int(v) for v in ctx.attr("strides", [1] * spatial)]
    pads = [int(v) for v in ctx.attr("pads", [0] * 2 * spatial)]
    out_shape = tuple(xs[:2]) + tuple((d - 1) * s + k - pads[i] - pads[i + spatial]
                                      for i, (d, s, k) in enumerate(zip(xs[2:], strides, kernel)))
    if ctx.has_input(2):
        out_shape = tuple(int(d) for d in np.asarray(ctx.const_input(2, "output_shape")).reshape(-1))
    total = int(np.prod(out_shape))
    zeros = ctx.const(np.zeros((total,), x.type.dtype.numpy), "unpooled")
    flat = ctx.emit("ScatterElements", [zeros, reshape(ctx, idx, (int(np.prod(xs)),)),
                                        reshape(ctx, x, (int(np.prod(xs)),))], {"axis": 0, "reduction": "none"})
    return [reshape(ctx, flat, out_shape, out=0)]


MISC_CONVERTERS: dict[str, Callable[["OnnxContext"], list[Value]]] = {
    "RotaryEmbedding": rotary_embedding,
    "LpNormalization": lp_normalization,
    "Det": det,
    "BitwiseNot": bitwise_not,
    "BitwiseAnd": _bitwise("BitwiseAnd"),
    "BitwiseOr": _bitwise("BitwiseOr"),
    "BitwiseXor": _bitwise("BitwiseXor"),
    "SwiGLU": swiglu,
    "BitCast": bitcast,
    "TensorScatter": tensor_scatter,
    "MaxUnpool": max_unpool,
    "CausalConvWithState": causal_conv_with_state,
}
