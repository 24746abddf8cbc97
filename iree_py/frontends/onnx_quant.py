"""ONNX quantized ops -> the quantized IR ops (docs/ir.md, "Quantized ops"), as onnxruntime computes them.

QuantizeLinear / DequantizeLinear (per tensor and per axis), QLinearConv and QLinearMatMul with
onnxruntime's float requantization (f32(acc) * (x_scale * w_scale / y_scale), rounded half to
even). The IR ops carry scales and zero points as attributes, so QLinearConv / QLinearMatMul need
constant ones. QuantizeLinear / DequantizeLinear with run-time scales or zero points (or int16
values) become exact float elementwise ops instead: Cast, Div, Round (half to even), Add, Clip, Cast.
DynamicQuantizeLinear is such a chain too, with Reduce min/max for the parameters. ConvInteger /
MatMulInteger become the IR ops of the same names (int32 accumulation, int32 results: the qconv /
qmatmul kernels without requantization, for any reduction depth); their zero points are 1-D tensor
operands, constant or computed (the DynamicQuantizeLinear before them).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.ir.graph import Value

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

Converter = Callable[["OnnxContext"], list[Value]]

QUANT_NUMPY = {np.dtype(np.int8): "i8", np.dtype(np.uint8): "u8"}
QRANGE = {"i8": (-128, 127), "u8": (0, 255)}
DECOMPOSED_RANGE = {"i8": (-128, 127), "u8": (0, 255), "i16": (-32768, 32767)}   # QuantizeLinear as float ops
QRANGE_NUMPY = {"i8": np.int8, "u8": np.uint8}
ONNX_INT8, ONNX_UINT8 = 3, 2            # TensorProto.INT8 / UINT8 (QuantizeLinear's output_dtype)


# ------------------------------------------------------------------------------ constant parameters

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


# ------------------------------------------------------------------------------ QuantizeLinear / DequantizeLinear

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


def quantize_linear(ctx: "OnnxContext") -> list[Value]:
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


def dequantize_linear(ctx: "OnnxContext") -> list[Value]:
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


# ------------------------------------------------------------------------------ QLinearConv / QLinearMatMul

def _float_requant(ctx: "OnnxContext", x_scale_in: int, w_scale_in: int, y_scale_in: int, x_dtype: str,
                   w_dtype: str, channels: int) -> dict:
    """The requantization attributes of onnxruntime's QLinear ops: scale = x_scale * w_scale / y_scale
    in float32, full output range."""
    x_scale, w_scales, y_scale = (_scales(ctx, i, what) for i, what in
                                  ((x_scale_in, "x_scale"), (w_scale_in, "w_scale"), (y_scale_in, "y_scale")))
    if len(x_scale) != 1 or len(y_scale) != 1:
        raise ctx.error(f"x_scale {x_scale} and y_scale {y_scale} must be per tensor")
    if len(w_scales) not in (1, channels):
        raise ctx.error(f"w_scale has {len(w_scales)} values; expected 1 or {channels} (output channels)")
    y_zp_in = y_scale_in + 1
    if not ctx.has_input(y_zp_in):
        y_dtype = "u8"
    else:
        y_dtype = QUANT_NUMPY.get(ctx.const_input(y_zp_in, "y_zero_point").dtype)
        if y_dtype is None:
            raise ctx.error("y_zero_point must be int8 or uint8")
    x_zp = _zero_points(ctx, x_scale_in + 1, 1, x_dtype, "x_zero_point")[0]
    w_zp = _zero_points(ctx, w_scale_in + 1, len(w_scales), w_dtype, "w_zero_point")
    y_zp = _zero_points(ctx, y_zp_in, 1, y_dtype, "y_zero_point")[0]
    scales = [float(np.float32(x_scale[0]) * np.float32(w) / np.float32(y_scale[0])) for w in w_scales]
    qmin, qmax = QRANGE[y_dtype]
    return {"x_zero_point": x_zp, "w_zero_point": w_zp, "y_zero_point": y_zp, "out_dtype": y_dtype,
            "act_min": qmin, "act_max": qmax, "requant": "float", "multiplier": [], "shift": [], "scale": scales}


def _bias(ctx: "OnnxContext", i: int) -> list[Value]:
    if not ctx.has_input(i):
        return []
    b = ctx.input(i)
    if b.type.dtype.value != "i32":
        raise ctx.error(f"bias '{b.name}' is {b.type}; expected int32")
    return [b]


def qlinear_conv(ctx: "OnnxContext") -> list[Value]:
    from iree_py.frontends.onnx_ops import _window_attrs

    x, w = ctx.input(0), ctx.input(3)
    if x.type.rank != 4 or w.type.rank != 4:
        raise ctx.error(f"only 2-D QLinearConv is supported (input {x.type}, weight {w.type})")
    if not w.is_const:
        raise ctx.error(f"weight '{w.name}' must be a constant")
    kernel = [int(k) for k in ctx.attr("kernel_shape", list(w.type.shape[2:]))]
    attrs = _window_attrs(ctx, x, kernel, allow_dilations=True)
    attrs["group"] = int(ctx.attr("group", 1))
    attrs.update(_float_requant(ctx, 1, 4, 6, _quant_dtype(ctx, x, "input x"), _quant_dtype(ctx, w, "weight w"),
                                int(w.type.shape[0])))
    return [ctx.emit("QConv", [x, w, *_bias(ctx, 8)], attrs, out=0)]


def qlinear_matmul(ctx: "OnnxContext") -> list[Value]:
    a, b = ctx.input(0), ctx.input(3)
    if not b.is_const:
        raise ctx.error(f"b '{b.name}' must be a constant")
    if a.type.rank < 2 or b.type.rank != 2:
        raise ctx.error(f"QLinearMatMul needs a of rank >= 2 and a 2-D constant b, got {a.type} and {b.type}")
    attrs = _float_requant(ctx, 1, 4, 6, _quant_dtype(ctx, a, "input a"), _quant_dtype(ctx, b, "input b"),
                           int(b.type.shape[1]))
    return [ctx.emit("QMatMul", [a, b], attrs, out=0)]


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


# ------------------------------------------------------------------------------ ConvInteger / MatMulInteger

def integer_zero_point(ctx: "OnnxContext", zp: Value | None, data: Value, what: str) -> Value:
    """A zero point operand of the IR's ConvInteger / MatMulInteger: 1-D, data's dtype; [0] when
    absent, a scalar reshaped to [1]. The op's shape rule checks how many values it has."""
    if data.type.dtype.value not in QRANGE:
        raise ctx.error(f"'{data.name}' is {data.type}; only int8 and uint8 are supported")
    if zp is None:
        return ctx.const(np.zeros(1, data.type.dtype.numpy), what)
    if zp.type.dtype != data.type.dtype or zp.type.rank > 1:
        raise ctx.error(f"{what} '{zp.name}' is {zp.type}; expected a scalar or 1-D {data.type.dtype.value} "
                        f"(the dtype of '{data.name}')")
    return zp if zp.type.rank == 1 else ctx.emit("Reshape", [zp], {"shape": [1]})


def integer_conv(ctx: "OnnxContext", x: Value, w: Value, x_zp: Value | None, w_zp: Value | None,
                 out: int | None = None) -> Value:
    """int32 sums of (x - x_zp) * (w - w_zp[m]) over each window (the IR's ConvInteger), with the
    node's window attributes; named after the node's output `out` when given."""
    from iree_py.frontends.onnx_ops import _window_attrs

    if x.type.rank != 4 or w.type.rank != 4:
        raise ctx.error(f"only 2-D convolutions are supported (input {x.type}, weight {w.type})")
    kernel = [int(k) for k in ctx.attr("kernel_shape", list(w.type.shape[2:]))]
    attrs = _window_attrs(ctx, x, kernel, allow_dilations=True)
    attrs["group"] = int(ctx.attr("group", 1))
    zero_points = [integer_zero_point(ctx, x_zp, x, "x_zero_point"), integer_zero_point(ctx, w_zp, w, "w_zero_point")]
    return ctx.emit("ConvInteger", [x, w, *zero_points], attrs, out=out)


def integer_matmul(ctx: "OnnxContext", a: Value, b: Value, a_zp: Value | None, b_zp: Value | None,
                   out: int | None = None) -> Value:
    """int32 (a - a_zp) @ (b - b_zp) (the IR's MatMulInteger): a_zp per tensor or per row, b_zp per
    tensor or per column. Batch dims broadcast as numpy's matmul: a batched b gets a's batch dims
    (Expand where they differ)."""
    if a.type.rank < 2 or b.type.rank < 2:
        raise ctx.error(f"operands must have rank >= 2, got {a.type} and {b.type}")
    zero_points = [integer_zero_point(ctx, a_zp, a, "a_zero_point"), integer_zero_point(ctx, b_zp, b, "b_zero_point")]
    a_batch, b_batch = tuple(a.type.shape[:-2]), tuple(b.type.shape[:-2])
    if b.type.rank > 2 and a_batch != b_batch:
        if not all(isinstance(d, int) for d in (*a_batch, *b_batch)):
            raise ctx.error(f"batch dims of {a.type} and {b.type} must be equal when they are symbolic")
        try:
            batch = [int(d) for d in np.broadcast_shapes(a_batch, b_batch)]
        except ValueError:
            raise ctx.error(f"batch dims of {a.type} and {b.type} do not broadcast") from None
        if list(a_batch) != batch:
            a = ctx.emit("Expand", [a], {"shape": [*batch, *a.type.shape[-2:]]})
        if list(b_batch) != batch:
            b = ctx.emit("Expand", [b], {"shape": [*batch, *b.type.shape[-2:]]})
    return ctx.emit("MatMulInteger", [a, b, *zero_points], out=out)


def _optional(ctx: "OnnxContext", i: int) -> Value | None:
    return ctx.input(i) if ctx.has_input(i) else None


def conv_integer(ctx: "OnnxContext") -> list[Value]:
    """int32 = Conv(x - x_zero_point, w - w_zero_point), accumulated in int32."""
    return [integer_conv(ctx, ctx.input(0), ctx.input(1), _optional(ctx, 2), _optional(ctx, 3), out=0)]


def matmul_integer(ctx: "OnnxContext") -> list[Value]:
    """int32 = MatMul(a - a_zero_point, b - b_zero_point), accumulated in int32."""
    return [integer_matmul(ctx, ctx.input(0), ctx.input(1), _optional(ctx, 2), _optional(ctx, 3), out=0)]


CONVERTERS: dict[str, Converter] = {
    "QuantizeLinear": quantize_linear,
    "DequantizeLinear": dequantize_linear,
    "QLinearConv": qlinear_conv,
    "QLinearMatMul": qlinear_matmul,
    "ConvInteger": conv_integer,
    "MatMulInteger": matmul_integer,
    "DynamicQuantizeLinear": dynamic_quantize_linear,
}
