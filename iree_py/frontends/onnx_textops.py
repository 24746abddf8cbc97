"""ONNX TfIdfVectorizer on integer inputs, and the QLinear ops / DequantizeLinear whose weight or scales
arrive at run time, all built from existing normalized ops.

TfIdfVectorizer (onnx's reference semantics): an n-gram of the pool counts once per start position s
and skip distance d where x[s + j*d] == gram[j] for every j and s + (n-1)*d is inside the row; unigrams
use d = 1 only, longer grams every d in 1..max_skip_count+1. Per gram length n and distance d that is
Slice windows of x compared (Equal, broadcast) with the constant grams of length n, And over j, a sum
over the start positions; a constant matrix (MatMul, exact: small integer counts) adds each gram's count
to its output index and applies IDF / TFIDF weights. String pools are refused.

QLinearMatMul / QLinearConv with a run-time b / w: the IR's MatMulInteger / ConvInteger accumulate
(a - a_zp) * (b - b_zp) in int32 for any depth (QLinearConv's int32 bias added in int32), then
f32(acc) * (a_scale * b_scale / y_scale), + y_zp, Round (half to even), Clip, Cast, as onnxruntime
requantizes. float16 scales: the multiplier is formed in float32 and rounded to float16
after each step (exact for the product; the quotient is correctly rounded since 24 >= 2*11 + 2).
DequantizeLinear of uint16 is the exact float chain (x - zp) * scale.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.frontends import onnx_dtypes2, onnx_quant
from iree_py.ir.graph import Value

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

Converter = Callable[["OnnxContext"], list[Value]]

INT_INPUTS = ("i32", "i64")
MODES = ("TF", "IDF", "TFIDF")


# ------------------------------------------------------------------------------ TfIdfVectorizer

def _grams(ctx: "OnnxContext", pool: list[int], counts: list[int]) -> list[tuple[int, ...]]:
    """The pool split into grams in pool order: counts[i] is where the (i+1)-grams start."""
    if not counts or counts[0] != 0 or any(b < a for a, b in zip(counts, counts[1:])) or counts[-1] > len(pool):
        raise ctx.bad_attr("ngram_counts", counts, f"must be non-decreasing start offsets from 0 into the pool "
                           f"of {len(pool)} items")
    grams: list[tuple[int, ...]] = []
    for i, start in enumerate(counts):
        end = counts[i + 1] if i + 1 < len(counts) else len(pool)
        n = i + 1
        if (end - start) % n:
            raise ctx.error(f"the {n}-grams take pool items {start}..{end}, not a multiple of {n}")
        grams += [tuple(pool[p:p + n]) for p in range(start, end, n)]
    return grams


def _window_matches(ctx: "OnnxContext", x: Value, length: int, grams: list[tuple[int, ...]],
                    distance: int) -> Value:
    """[B, len(grams)] f32: for each row and gram, the start positions where it matches at `distance`."""
    n = len(grams[0])
    starts = length - (n - 1) * distance
    tokens = np.array(grams, dtype=x.type.dtype.numpy)                       # [G, n]
    matched: Value | None = None
    for j in range(n):
        offset = j * distance
        window = ctx.emit("Slice", [x], {"starts": [0, offset], "ends": [int(x.type.shape[0]), offset + starts],
                                         "steps": [1, 1]})
        window = ctx.emit("Reshape", [window], {"shape": [int(x.type.shape[0]), starts, 1]})
        eq = ctx.emit("Equal", [window, ctx.const(np.ascontiguousarray(tokens[:, j]), f"gram_{n}_{j}")])
        matched = eq if matched is None else ctx.emit("And", [matched, eq])
    assert matched is not None
    hits = ctx.emit("Cast", [matched], {"to": "f32"})
    return ctx.emit("Reduce", [hits], {"kind": "sum", "axes": [1], "keepdims": 0})


def tfidf_vectorizer(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    if ctx.attr("pool_strings") is not None:
        raise ctx.error("string pools (pool_strings) are not supported; only pool_int64s")
    if x.type.dtype.value not in INT_INPUTS:
        raise ctx.error(f"input '{x.name}' is {x.type}; only int32 and int64 inputs are supported")
    if x.type.rank not in (1, 2) or not all(isinstance(d, (int, np.integer)) for d in x.type.shape):
        raise ctx.error(f"input '{x.name}' is {x.type}; expected a static [C] or [B, C] tensor")
    mode = ctx.attr("mode", "TF")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode not in MODES:
        raise ctx.bad_attr("mode", mode, f"expected one of {MODES}")
    min_n, max_n = int(ctx.attr("min_gram_length", 1)), int(ctx.attr("max_gram_length", 1))
    skips = int(ctx.attr("max_skip_count", 0))
    if min_n < 1 or max_n < min_n or skips < 0:
        raise ctx.error(f"gram lengths {min_n}..{max_n} / max_skip_count {skips} are invalid")
    pool = [int(v) for v in ctx.attr("pool_int64s", [])]
    grams = _grams(ctx, pool, [int(c) for c in ctx.attr("ngram_counts", [])])
    indexes = [int(i) for i in ctx.attr("ngram_indexes", [])]
    if len(indexes) != len(grams) or any(i < 0 for i in indexes):
        raise ctx.bad_attr("ngram_indexes", indexes, f"need {len(grams)} non-negative output indexes (one a gram)")
    if len(set(grams)) != len(grams):
        raise ctx.error("the pool holds a gram twice; not supported")
    size = max(indexes) + 1
    weights = [float(w) for w in ctx.attr("weights", [])]
    if mode != "TF" and weights and len(weights) != size:
        raise ctx.bad_attr("weights", weights, f"need {size} weights (one per output index)")

    rows = x if x.type.rank == 2 else ctx.emit("Reshape", [x], {"shape": [1, int(x.type.shape[0])]})
    batch, length = int(rows.type.shape[0]), int(rows.type.shape[1])
    parts: list[Value] = []
    order: list[int] = []
    for n in range(min_n, max_n + 1):
        info = np.iinfo(x.type.dtype.numpy)   # a gram with a token out of x's range never matches (count 0)
        chosen = [k for k, g in enumerate(grams) if len(g) == n and all(info.min <= t <= info.max for t in g)]
        distances = [d for d in ([1] if n == 1 else range(1, skips + 2)) if (n - 1) * d < length]
        if not chosen or not distances:
            continue
        total: Value | None = None
        for d in distances:
            counts = _window_matches(ctx, rows, length, [grams[k] for k in chosen], d)
            total = counts if total is None else ctx.emit("Add", [total, counts])
        assert total is not None
        parts.append(total)
        order += chosen
    if not parts:
        y = ctx.const(np.zeros((batch, size), np.float32), "tfidf_zero")
    else:
        counts = parts[0] if len(parts) == 1 else ctx.emit("Concat", parts, {"axis": 1})   # [B, G]
        scatter = np.zeros((len(order), size), np.float32)
        for row, k in enumerate(order):
            scatter[row, indexes[k]] = 1.0
        y = ctx.emit("MatMul", [counts, ctx.const(scatter, "tfidf_scatter")])   # grams sharing an index add up
        if mode == "IDF":
            y = ctx.emit("Min", [y, ctx.const(np.array(1.0, np.float32), "one")])
        if mode != "TF" and weights:
            y = ctx.emit("Mul", [y, ctx.const(np.array(weights, np.float32), "tfidf_weights")])
    shape = [batch, size] if x.type.rank == 2 else [size]
    return [ctx.emit("Reshape", [y], {"shape": shape}, out=0)]


# ------------------------------------------------------------------------------ run-time QLinear weights

def _per_tensor(ctx: "OnnxContext", i: int, what: str) -> Value:
    v = ctx.input(i)
    if v.type.num_elements != 1:
        raise ctx.error(f"{what} '{v.name}' is {v.type}; only a per-tensor value is supported with a run-time weight")
    return v if v.type.rank == 0 else ctx.emit("Reshape", [v], {"shape": []})


def _channel_param(ctx: "OnnxContext", i: int, what: str, channels: int, shape: list[int]) -> Value:
    """A per-tensor or per-channel (`channels` values) parameter reshaped to broadcast (`shape`)."""
    v = ctx.input(i)
    if v.type.num_elements == 1:
        return _per_tensor(ctx, i, what)
    if v.type.rank != 1 or v.type.num_elements != channels:
        raise ctx.error(f"{what} '{v.name}' is {v.type}; expected 1 or {channels} values")
    return ctx.emit("Reshape", [v], {"shape": shape})


def _zp(ctx: "OnnxContext", i: int) -> Value | None:
    return ctx.input(i) if ctx.has_input(i) else None


def _multiplier(ctx: "OnnxContext", a_scale: Value, b_scale: Value, y_scale: Value) -> Value:
    """a_scale * b_scale / y_scale in the scales' dtype (f32, or f16 rounded per step), as float32."""
    dtype = a_scale.type.dtype.value
    if dtype not in ("f32", "f16") or b_scale.type.dtype.value != dtype or y_scale.type.dtype.value != dtype:
        raise ctx.error(f"scales are {a_scale.type}, {b_scale.type}, {y_scale.type}; expected all float32 or "
                        "all float16")
    if dtype == "f32":
        return ctx.emit("Div", [ctx.emit("Mul", [a_scale, b_scale]), y_scale])

    def f32(v: Value) -> Value:
        return ctx.emit("Cast", [v], {"to": "f32"})

    def f16(v: Value) -> Value:
        return ctx.emit("Cast", [v], {"to": "f16"})

    product = f16(ctx.emit("Mul", [f32(a_scale), f32(b_scale)]))
    return f32(f16(ctx.emit("Div", [f32(product), f32(y_scale)])))


def _requantize(ctx: "OnnxContext", acc: Value, multiplier: Value, y_zp_in: int, fallback_dtype: str) -> Value:
    y = ctx.emit("Mul", [acc, multiplier])
    if ctx.has_input(y_zp_in):
        zp = _per_tensor(ctx, y_zp_in, "y_zero_point")
        dtype = zp.type.dtype.value
        y = ctx.emit("Add", [y, ctx.emit("Cast", [zp], {"to": "f32"})])
    else:
        dtype = fallback_dtype
    if dtype not in onnx_quant.QRANGE:
        raise ctx.error(f"the output would be {dtype}; only int8 and uint8 outputs are supported")
    low, high = onnx_quant.QRANGE[dtype]
    y = ctx.emit("Clip", [ctx.emit("Round", [y])], {"min": float(low), "max": float(high)})
    return ctx.emit("Cast", [y], {"to": dtype}, out=0)


def _check_8bit(ctx: "OnnxContext", v: Value, what: str) -> None:
    if v.type.dtype.value not in onnx_quant.QRANGE:
        raise ctx.error(f"{what} '{v.name}' is {v.type}; only int8 and uint8 are supported")


def qlinear_matmul(ctx: "OnnxContext") -> list[Value]:
    a, b = ctx.input(0), ctx.input(3)
    if b.is_const:
        return onnx_quant.qlinear_matmul(ctx)
    _check_8bit(ctx, a, "a")
    _check_8bit(ctx, b, "b")
    acc = onnx_quant.integer_matmul(ctx, a, b, _zp(ctx, 2), _zp(ctx, 5))
    columns = int(b.type.shape[-1])
    m = _multiplier(ctx, _per_tensor(ctx, 1, "a_scale"), _channel_param(ctx, 4, "b_scale", columns, [columns]),
                    _per_tensor(ctx, 6, "y_scale"))
    return [_requantize(ctx, ctx.emit("Cast", [acc], {"to": "f32"}), m, 7, a.type.dtype.value)]


def qlinear_conv(ctx: "OnnxContext") -> list[Value]:
    x, w = ctx.input(0), ctx.input(3)
    if w.is_const:
        return onnx_quant.qlinear_conv(ctx)
    _check_8bit(ctx, x, "x")
    _check_8bit(ctx, w, "w")
    channels = int(w.type.shape[0]) if w.type.rank == 4 else 0
    acc = onnx_quant.integer_conv(ctx, x, w, _zp(ctx, 2), _zp(ctx, 5))
    if ctx.has_input(8):
        bias = ctx.input(8)
        if bias.type.dtype.value != "i32" or tuple(bias.type.shape) != (channels,):
            raise ctx.error(f"bias '{bias.name}' is {bias.type}; expected int32 [{channels}]")
        acc = ctx.emit("Add", [acc, ctx.emit("Reshape", [bias], {"shape": [1, channels, 1, 1]})])  # wraps, as int32
    m = _multiplier(ctx, _per_tensor(ctx, 1, "x_scale"),
                    _channel_param(ctx, 4, "w_scale", channels, [1, channels, 1, 1]), _per_tensor(ctx, 6, "y_scale"))
    return [_requantize(ctx, ctx.emit("Cast", [acc], {"to": "f32"}), m, 7, x.type.dtype.value)]


# ------------------------------------------------------------------------------ uint16 / blocked (De)QuantizeLinear

QUANT_TARGETS = {2: "u8", 3: "i8", 4: "u16", 5: "i16"}      # TensorProto codes -> dtype
FLOAT_CHAIN_RANGE = {"u8": (0, 255), "i8": (-128, 127), "u16": (0, 65535), "i16": (-32768, 32767)}


def _block_size(ctx: "OnnxContext") -> int:
    block = int(ctx.attr("block_size", 0))
    if block < 0:
        raise ctx.bad_attr("block_size", block, "must be >= 0")
    if ctx.attr("precision", 0):
        raise ctx.bad_attr("precision", ctx.attr("precision"), "only the default precision is supported")
    return block


def _blocked_param(ctx: "OnnxContext", x: Value, i: int, what: str, block: int) -> Value:
    """A blocked scale / zero point (x's shape with ceil(dim / block) along axis) repeated `block` times
    along axis (Gather with constant indices) so it matches x elementwise."""
    param = ctx.input(i)
    rank = x.type.rank
    axis = int(ctx.attr("axis", 1))
    if not -rank <= axis < rank:
        raise ctx.bad_attr("axis", axis, f"out of range for {x.type}")
    axis += rank if axis < 0 else 0
    dim = int(x.type.shape[axis])
    expected = tuple(-(-dim // block) if k == axis else int(d) for k, d in enumerate(x.type.shape))
    if tuple(int(d) for d in param.type.shape) != expected:
        raise ctx.error(f"{what} '{param.name}' is {param.type}; with block_size {block} along axis {axis} "
                        f"of {x.type} it must have shape {list(expected)}")
    index = ctx.const(np.arange(dim, dtype=np.int64) // block, f"{what}_blocks")
    return ctx.emit("Gather", [param, index], {"axis": axis})


def _param_f32(ctx: "OnnxContext", x: Value, i: int, what: str, block: int) -> Value:
    if block:
        v = _blocked_param(ctx, x, i, what, block)
    else:
        v = onnx_quant._broadcastable(ctx, x, ctx.input(i), what)
    return v if v.type.dtype.value == "f32" else ctx.emit("Cast", [v], {"to": "f32"})


def _float_scale(ctx: "OnnxContext", i: int, what: str) -> None:
    if ctx.input(i).type.dtype.value != "f32":
        raise ctx.error(f"{what} '{ctx.input(i).name}' is {ctx.input(i).type}; only float32 scales are supported "
                        "for uint16 or blocked quantization")


def quantize_linear(ctx: "OnnxContext") -> list[Value]:
    """uint16 outputs or block_size > 0: Clip(Round(x / scale) + zero_point) cast, exact in float32 for
    16-bit results; everything else as before (onnx_dtypes2 / onnx_quant)."""
    block = _block_size(ctx)
    x = ctx.input(0)
    if ctx.has_input(2):
        to = ctx.input(2).type.dtype.value
    else:
        code = int(ctx.attr("output_dtype", 0))
        to = QUANT_TARGETS.get(code, "u8" if code == 0 else "?")
    if not block and to != "u16":
        return onnx_dtypes2.quantize_linear(ctx)
    if to not in FLOAT_CHAIN_RANGE:
        raise ctx.error(f"output type {to} is not supported for uint16 or blocked quantization "
                        f"(only {sorted(FLOAT_CHAIN_RANGE)})")
    if x.type.dtype.value != "f32":
        raise ctx.error(f"input '{x.name}' is {x.type}; only float32 inputs are supported")
    _float_scale(ctx, 1, "y_scale")
    y = ctx.emit("Round", [ctx.emit("Div", [x, _param_f32(ctx, x, 1, "y_scale", block)])])
    if ctx.has_input(2):
        y = ctx.emit("Add", [y, _param_f32(ctx, x, 2, "y_zero_point", block)])
    low, high = FLOAT_CHAIN_RANGE[to]
    y = ctx.emit("Clip", [y], {"min": float(low), "max": float(high)})
    return [ctx.emit("Cast", [y], {"to": to}, out=0)]


def dequantize_linear(ctx: "OnnxContext") -> list[Value]:
    """uint16 x or block_size > 0: (f32(x) - f32(zero_point)) * scale, exact subtraction for 8- and
    16-bit values; everything else as before (onnx_dtypes2 / onnx_quant)."""
    block = _block_size(ctx)
    x = ctx.input(0)
    if not block and x.type.dtype.value != "u16":
        return onnx_dtypes2.dequantize_linear(ctx)
    if x.type.dtype.value not in FLOAT_CHAIN_RANGE:
        raise ctx.error(f"input '{x.name}' is {x.type}; only 8- and 16-bit integers are supported for uint16 or "
                        "blocked dequantization")
    if int(ctx.attr("output_dtype", 0)) not in (0, 1):
        raise ctx.bad_attr("output_dtype", ctx.attr("output_dtype"), "only float32 outputs are supported")
    _float_scale(ctx, 1, "x_scale")
    y = ctx.emit("Cast", [x], {"to": "f32"})
    if ctx.has_input(2):
        if ctx.input(2).type.dtype != x.type.dtype:
            raise ctx.error(f"x_zero_point '{ctx.input(2).name}' is {ctx.input(2).type}; expected {x.type.dtype.value}")
        y = ctx.emit("Sub", [y, _param_f32(ctx, x, 2, "x_zero_point", block)])
    return [ctx.emit("Mul", [y, _param_f32(ctx, x, 1, "x_scale", block)], out=0)]


TEXTOPS_CONVERTERS: dict[str, Converter] = {
    "TfIdfVectorizer": tfidf_vectorizer,
    "QLinearMatMul": qlinear_matmul,
    "QLinearConv": qlinear_conv,
    "QuantizeLinear": quantize_linear,
    "DequantizeLinear": dequantize_linear,
}
