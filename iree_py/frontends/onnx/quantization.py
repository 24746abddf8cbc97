"""ONNX QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear, as onnxruntime computes them.

Per tensor and per axis with constant int8/uint8 parameters: the IR's Quantize / Dequantize ops,
which carry scales and zero points as attributes. With run-time scales or zero points (or int16
values): exact float elementwise ops instead (Cast, Div, Round half to even, Add, Clip, Cast).
uint16 values and block_size > 0: Clip(Round(x / scale) + zero_point) cast, exact in float32 for
16-bit results, and (f32(x) - f32(zero_point)) * scale, exact subtraction for 8- and 16-bit values.
DynamicQuantizeLinear is such a chain too, with Reduce min/max for the parameters.

Narrow types (bf16, float8, f4e2m1, 4-/2-bit integers; iree_py/ir/narrow_types.py): narrow integers
Clip(Round(x / scale) + zero_point) cast; narrow floats Cast(x / scale + zero_point), saturating
unless saturate=0 (float8); dequantization (x - zero_point) * scale in the scale's dtype.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx.compose import Converter
from iree_py.frontends.onnx.dtypes import _saturate, cast_unsaturated, onnx_dtype
from iree_py.ir.graph import Value
from iree_py.ir.narrow_types import FLOAT8_DTYPES, NARROW_DTYPES, NARROW_INT_DTYPES, narrow_int_range
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


QUANT_NUMPY = {np.dtype(np.int8): "i8", np.dtype(np.uint8): "u8"}


QRANGE = {"i8": (-128, 127), "u8": (0, 255)}


DECOMPOSED_RANGE = {"i8": (-128, 127), "u8": (0, 255), "i16": (-32768, 32767)}   # QuantizeLinear as float ops


QRANGE_NUMPY = {"i8": np.int8, "u8": np.uint8}


ONNX_INT8, ONNX_UINT8 = 3, 2            # TensorProto.INT8 / UINT8 (QuantizeLinear's output_dtype)


def _scales(ctx: "OnnxContext", i: int, what: str) -> list[float]:
    scale = ctx.const_input(i, what)
    if scale.dtype != np.float32:
        raise ctx.error(f"{what} has type {scale.dtype}; only float32 scales are supported")
    if scale.ndim > 1:
        raise ctx.error(f"{what} has shape {list(scale.shape)}; expected a scalar or a 1-D tensor "
                        "(blocked quantization is not supported)")
    values = [float(s) for s in scale.reshape(-1)]
    if not values or any(not np.isfinite(s) or s <= 0 for s in values):
        raise ctx.error(f"{what} {values} must be finite and > 0")
    return values


def _zero_points(ctx: "OnnxContext", i: int, count: int, dtype: str, what: str) -> list[int]:
    """The zero points (input i, absent: 0), as many as the scales."""
    if not ctx.has_input(i):
        return [0] * count
    zp = ctx.const_input(i, what)
    if QUANT_NUMPY.get(zp.dtype) != dtype:
        raise ctx.error(f"{what} has type {zp.dtype}, expected {np.dtype(QRANGE_NUMPY[dtype]).name}")
    values = [int(z) for z in zp.reshape(-1)]
    if len(values) != count:
        raise ctx.error(f"{what} has {len(values)} values but the scale has {count}")
    return values


def _quant_dtype(ctx: "OnnxContext", v: Value, what: str) -> str:
    dtype = QUANT_NUMPY.get(v.type.dtype.numpy)
    if dtype is None:
        raise ctx.error(f"{what} '{v.name}' is {v.type}; only int8 and uint8 are supported")
    return dtype


def _axis(ctx: "OnnxContext", x: Value, count: int) -> int:
    """-1 for per-tensor parameters, else the normalized `axis` attribute (per-axis, opset >= 13)."""
    if count == 1:
        return -1
    if ctx.opset < 13:
        raise ctx.error(f"per-axis parameters ({count} scales) need opset >= 13")
    rank = x.type.rank
    axis = int(ctx.attr("axis", 1))
    if not -rank <= axis < rank:
        raise ctx.bad_attr("axis", axis, f"out of range for {x.type}")
    axis = axis + rank if axis < 0 else axis
    if int(x.type.shape[axis]) != count:
        raise ctx.error(f"{count} scales do not match dim {axis} ({x.type.shape[axis]}) of {x.type}")
    return axis


def _no_blocks(ctx: "OnnxContext") -> None:
    if int(ctx.attr("block_size", 0)) != 0:
        raise ctx.bad_attr("block_size", ctx.attr("block_size"), "blocked quantization is not supported")
    if ctx.attr("precision", 0):
        raise ctx.bad_attr("precision", ctx.attr("precision"), "only the default precision is supported")


def _output_dtype(ctx: "OnnxContext") -> str:
    """QuantizeLinear's output type: the zero point's, else output_dtype (opset 21), else uint8."""
    if ctx.has_input(2):
        zp = ctx.input(2)
        if zp.type.dtype.value not in DECOMPOSED_RANGE:
            raise ctx.error(f"y_zero_point '{zp.name}' is {zp.type}; only int8, uint8 and int16 outputs are supported")
        return zp.type.dtype.value
    output_dtype = int(ctx.attr("output_dtype", 0))
    dtype = {0: "u8", ONNX_UINT8: "u8", ONNX_INT8: "i8", 5: "i16"}.get(output_dtype)
    if dtype is None:
        raise ctx.bad_attr("output_dtype", output_dtype, "only int8, uint8 and int16 outputs are supported")
    return dtype


def _constant_params(ctx: "OnnxContext") -> bool:
    return ctx.input(1).is_const and (not ctx.has_input(2) or ctx.input(2).is_const)


def _quantize_linear_8bit(ctx: "OnnxContext") -> list[Value]:
    """y = saturate(round_half_even(x / scale) + zero_point)."""
    _no_blocks(ctx)
    x = ctx.input(0)
    if x.type.dtype.value != "f32":
        raise ctx.error(f"input '{x.name}' is {x.type}; only float32 inputs are supported")
    dtype = _output_dtype(ctx)
    if dtype not in QRANGE or not _constant_params(ctx):
        return [_quantize_as_float_ops(ctx, x, dtype)]
    scales = _scales(ctx, 1, "y_scale")
    attrs = {"scale": scales, "zero_point": _zero_points(ctx, 2, len(scales), dtype, "y_zero_point"),
             "axis": _axis(ctx, x, len(scales)), "dtype": dtype, "rounding": "half_even"}
    return [ctx.emit("Quantize", [x], attrs, out=0)]


def _broadcastable(ctx: "OnnxContext", x: Value, param: Value, what: str) -> Value:
    """A scalar or 1-D (per-axis) scale / zero point reshaped to broadcast against x along `axis`."""
    if param.type.rank > 1:
        raise ctx.error(f"{what} '{param.name}' is {param.type}; expected a scalar or a 1-D tensor "
                        "(blocked quantization is not supported)")
    count = param.type.num_elements
    axis = _axis(ctx, x, count)
    if axis == -1:
        return ctx.emit("Reshape", [param], {"shape": []}) if param.type.rank else param
    shape = [1] * x.type.rank
    shape[axis] = count
    return ctx.emit("Reshape", [param], {"shape": shape})


def _as_f32(ctx: "OnnxContext", v: Value) -> Value:
    return v if v.type.dtype.value == "f32" else ctx.emit("Cast", [v], {"to": "f32"})


def _scale_value(ctx: "OnnxContext", i: int, what: str) -> Value:
    scale = ctx.input(i)
    if scale.type.dtype.value != "f32":
        raise ctx.error(f"{what} '{scale.name}' is {scale.type}; only float32 scales are supported")
    return scale


def _quantize_as_float_ops(ctx: "OnnxContext", x: Value, dtype: str) -> Value:
    """Clip(Round(x / scale) + zero_point, qmin, qmax) cast to the output type: exact, since the
    rounded value is an integer and the clip bounds are integers."""
    scale = _broadcastable(ctx, x, _scale_value(ctx, 1, "y_scale"), "y_scale")
    y = ctx.emit("Round", [ctx.emit("Div", [x, scale])])
    if ctx.has_input(2):
        y = ctx.emit("Add", [y, _as_f32(ctx, _broadcastable(ctx, x, ctx.input(2), "y_zero_point"))])
    low, high = DECOMPOSED_RANGE[dtype]
    y = ctx.emit("Clip", [y], {"min": float(low), "max": float(high)})
    return ctx.emit("Cast", [y], {"to": dtype}, out=0)


def _dequantize_as_float_ops(ctx: "OnnxContext", x: Value) -> Value:
    """(f32(x) - f32(zero_point)) * scale: the subtraction is exact for 8- and 16-bit values."""
    y = _as_f32(ctx, x)
    if ctx.has_input(2):
        y = ctx.emit("Sub", [y, _as_f32(ctx, _broadcastable(ctx, x, ctx.input(2), "x_zero_point"))])
    return ctx.emit("Mul", [y, _broadcastable(ctx, x, _scale_value(ctx, 1, "x_scale"), "x_scale")], out=0)


def _dequantize_linear_8bit(ctx: "OnnxContext") -> list[Value]:
    """y = (x - zero_point) * scale, for int8, uint8, int16 and int32 x."""
    _no_blocks(ctx)
    x = ctx.input(0)
    output_dtype = int(ctx.attr("output_dtype", 0))
    if output_dtype not in (0, 1):
        raise ctx.bad_attr("output_dtype", output_dtype, "only float32 outputs are supported")
    if x.type.dtype.value == "i16" or (x.type.dtype.value in ("i8", "u8") and not _constant_params(ctx)):
        return [_dequantize_as_float_ops(ctx, x)]
    scales = _scales(ctx, 1, "x_scale")
    if x.type.dtype.value == "i32":
        zero_points = [int(z) for z in ctx.const_input(2, "x_zero_point").reshape(-1)] if ctx.has_input(2) else []
        if any(zero_points):
            raise ctx.error(f"an int32 input needs zero points 0, got {zero_points}")
        zero_points = [0] * len(scales)
    else:
        zero_points = _zero_points(ctx, 2, len(scales), _quant_dtype(ctx, x, "input"), "x_zero_point")
    attrs = {"scale": scales, "zero_point": zero_points, "axis": _axis(ctx, x, len(scales))}
    result = ctx.emit("Dequantize", [x], attrs, out=0)
    if result.is_const:  # folded now; passes/fuse_qdq.py may still want the integers behind it
        ctx.dequantized[id(result)] = (x.const, attrs)
    return [result]


# --- narrow types (bf16, float8, 4-/2-bit integers) -----------------------------------------------

def _quant_target(ctx: "OnnxContext") -> DType | None:
    """The output dtype of a QuantizeLinear: its zero point's, else output_dtype's (None: not narrow)."""
    if ctx.has_input(2):
        dtype = ctx.input(2).type.dtype
    elif int(ctx.attr("output_dtype", 0)):
        dtype = onnx_dtype(ctx, int(ctx.attr("output_dtype")), "output_dtype")
    else:
        return None
    return dtype if dtype in NARROW_DTYPES else None


def _param(ctx: "OnnxContext", x: Value, i: int, what: str, dtype: DType) -> Value:
    """Input i (scale / zero point) as `dtype`, shaped to broadcast against x along `axis`."""
    value = _broadcastable(ctx, x, ctx.input(i), what)
    return value if value.type.dtype == dtype else ctx.emit("Cast", [value], {"to": dtype.value})


def _quantize_linear_narrow(ctx: "OnnxContext") -> list[Value]:
    """Narrow integers: Clip(Round(x / scale) + zero_point) cast; narrow floats: Cast(x / scale +
    zero_point), saturating unless saturate=0 (float8)."""
    to = _quant_target(ctx)
    if to is None:
        return _quantize_linear_8bit(ctx)
    _no_blocks(ctx)
    x = ctx.input(0)
    if x.type.dtype not in (DType.f32, DType.f16):
        raise ctx.error(f"input '{x.name}' is {x.type}; only float32 and float16 inputs are supported")
    if ctx.input(1).type.dtype != x.type.dtype:
        raise ctx.error(f"y_scale is {ctx.input(1).type}, x is {x.type}: they must have the same dtype")
    xf = x if x.type.dtype == DType.f32 else ctx.emit("Cast", [x], {"to": "f32"})
    y = ctx.emit("Div", [xf, _param(ctx, x, 1, "y_scale", DType.f32)])
    if to in NARROW_INT_DTYPES:
        y = ctx.emit("Round", [y])
    if ctx.has_input(2):
        y = ctx.emit("Add", [y, _param(ctx, x, 2, "y_zero_point", DType.f32)])
    if to in NARROW_INT_DTYPES:
        low, high = narrow_int_range(to)
        y = ctx.emit("Clip", [y], {"min": float(low), "max": float(high)})
    if to in FLOAT8_DTYPES and not _saturate(ctx):
        return [cast_unsaturated(ctx, y, to)]
    return [ctx.emit("Cast", [y], {"to": to.value}, out=0)]


def _dequantize_linear_narrow(ctx: "OnnxContext") -> list[Value]:
    """(x - zero_point) * scale, in the scale's dtype (f32 or f16)."""
    x = ctx.input(0)
    if x.type.dtype not in NARROW_DTYPES:
        return _dequantize_linear_8bit(ctx)
    _no_blocks(ctx)
    scale_dtype = ctx.input(1).type.dtype
    if scale_dtype not in (DType.f32, DType.f16):
        raise ctx.error(f"x_scale is {ctx.input(1).type}; only float32 and float16 scales are supported")
    output_dtype = int(ctx.attr("output_dtype", 0))
    if output_dtype and onnx_dtype(ctx, output_dtype, "output_dtype") != scale_dtype:
        raise ctx.bad_attr("output_dtype", output_dtype, f"must match the scale's dtype {scale_dtype.value}")
    y = ctx.emit("Cast", [x], {"to": scale_dtype.value})
    if ctx.has_input(2):
        if ctx.input(2).type.dtype != x.type.dtype:
            raise ctx.error(f"x_zero_point is {ctx.input(2).type}, x is {x.type}: they must have the same dtype")
        y = ctx.emit("Sub", [y, _param(ctx, x, 2, "x_zero_point", scale_dtype)])
    return [ctx.emit("Mul", [y, _param(ctx, x, 1, "x_scale", scale_dtype)], out=0)]


# --- uint16 / blocked ------------------------------------------------------------------------------

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
        v = _broadcastable(ctx, x, ctx.input(i), what)
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
        return _quantize_linear_narrow(ctx)
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
        return _dequantize_linear_narrow(ctx)
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


# --- DynamicQuantizeLinear -------------------------------------------------------------------------

def dynamic_u8_parameters(ctx: "OnnxContext", x: Value, scale_out: int | None = None) -> tuple[Value, Value]:
    """onnxruntime's GetQuantizationParameter for uint8 over all of x: the range [min(0, min x),
    max(0, max x)], scale = range / 255 (1 when the range is empty), zero point =
    round_half_even(clamp(-min / scale, 0, 255)). Returns the f32 scalars scale (named after the node's
    output `scale_out` when given) and zero point."""
    axes = {"axes": list(range(x.type.rank)), "keepdims": 0}
    zero = ctx.const(np.array(0.0, np.float32), "zero")
    low = ctx.emit("Min", [ctx.emit("Reduce", [x], {"kind": "min", **axes}), zero])
    high = ctx.emit("Max", [ctx.emit("Reduce", [x], {"kind": "max", **axes}), zero])
    scale = ctx.emit("Div", [ctx.emit("Sub", [high, low]), ctx.const(np.array(255.0, np.float32), "qrange")])
    empty = ctx.emit("Cast", [ctx.emit("Equal", [scale, zero])], {"to": "f32"})
    scale = ctx.emit("Add", [scale, empty], out=scale_out)
    zp = ctx.emit("Clip", [ctx.emit("Neg", [ctx.emit("Div", [low, scale])])], {"min": 0.0, "max": 255.0})
    return scale, ctx.emit("Round", [zp])


def quantize_u8(ctx: "OnnxContext", x: Value, scale: Value, zero_point: Value, out: int | None = None) -> Value:
    """clamp(round_half_even(x / scale) + zero_point, 0, 255) as uint8 (MlasQuantizeLinear; scale and
    the integral zero point are f32 scalars)."""
    y = ctx.emit("Add", [ctx.emit("Round", [ctx.emit("Div", [x, scale])]), zero_point])
    return ctx.emit("Cast", [ctx.emit("Clip", [y], {"min": 0.0, "max": 255.0})], {"to": "u8"}, out=out)


def dynamic_quantize_linear(ctx: "OnnxContext") -> list[Value]:
    """uint8 quantization with parameters computed from the data (dynamic_u8_parameters), then
    y = clamp(round_half_even(x / scale) + zero point, 0, 255). Outputs y, scale, zero point."""
    x = ctx.input(0)
    if x.type.dtype.value != "f32":
        raise ctx.error(f"input '{x.name}' is {x.type}; only float32 inputs are supported")
    scale, zp = dynamic_u8_parameters(ctx, x, scale_out=1)
    return [quantize_u8(ctx, x, scale, zp, out=0), scale, ctx.emit("Cast", [zp], {"to": "u8"}, out=2)]


CONVERTERS: dict[str, Converter] = {
    "QuantizeLinear": quantize_linear,
    "DequantizeLinear": dequantize_linear,
    "DynamicQuantizeLinear": dynamic_quantize_linear,
}
