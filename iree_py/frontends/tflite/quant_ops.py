"""Quantized (int8/uint8) TFLite operators -> the quantized IR ops (docs/ir.md, "Quantized ops").

A quantized tensor keeps its element type in the graph; its scale and zero point are read from the
TFLite tensor (`tensor_quant`) and become attributes of the op that consumes or produces it. The
parameters that TFLite derives at Prepare time (fixed-point multipliers and shifts, activation
ranges) are computed here the way TFLite computes them, so the kernels reproduce the interpreter's
reference kernels (OpResolverType.BUILTIN_REF) bit for bit.

Operators that exist for float too (CONV_2D, ADD, ...) are registered in ops.py through `converters`,
which sends an operator with an int8/uint8 first input here and any other to the float converter.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.frontends.tflite.fully_connected import fully_connected_rows
from iree_py.frontends.tflite.layout import NCHW_AXIS_OF_NHWC, from_nchw, nchw_operands, to_nchw
from iree_py.frontends.tflite.schema.ActivationFunctionType import ActivationFunctionType as Act
from iree_py.frontends.tflite.schema.AddOptions import AddOptionsT
from iree_py.frontends.tflite.schema.ConcatenationOptions import ConcatenationOptionsT
from iree_py.frontends.tflite.schema.Conv2DOptions import Conv2DOptionsT
from iree_py.frontends.tflite.schema.DepthwiseConv2DOptions import DepthwiseConv2DOptionsT
from iree_py.frontends.tflite.schema.Pool2DOptions import Pool2DOptionsT
from iree_py.frontends.tflite.schema.TensorType import TensorType as TflType
from iree_py.ir.graph import Value

if TYPE_CHECKING:
    from iree_py.frontends.tflite.importer import TfliteContext

Converter = Callable[["TfliteContext"], list[Value]]

QUANTIZED_TYPES = {TflType.INT8: "i8", TflType.UINT8: "u8"}
QRANGE = {"i8": (-128, 127), "u8": (0, 255)}
ADD_LEFT_SHIFT = 20          # TFLite's int8/uint8 ADD: inputs are shifted left 20 bits before rescaling


@dataclass(frozen=True)
class Quant:
    """A tensor's quantization: real = scale * (q - zero_point); one entry per tensor, or one per
    index along `axis` (TFLite's quantized_dimension)."""
    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int

    @property
    def per_tensor(self) -> bool:
        return len(self.scale) == 1


# ------------------------------------------------------------------------------ reading tensors

def _tensor_index(ctx: "TfliteContext", i: int, outputs: bool) -> int:
    index = ctx._index(i, outputs=outputs)
    if index < 0:
        raise ctx.error(f"{'output' if outputs else 'input'} {i} is required")
    return index


def storage_type(ctx: "TfliteContext", i: int, outputs: bool = False) -> str | None:
    """'i8' / 'u8' for a quantized operand (input or output i of the operator), else None."""
    return QUANTIZED_TYPES.get(ctx.tensors[_tensor_index(ctx, i, outputs)].type)


def tensor_quant(ctx: "TfliteContext", i: int, outputs: bool = False) -> Quant:
    """The quantization parameters of input (or output) i; CompileError when it has none."""
    index = _tensor_index(ctx, i, outputs)
    q = ctx.tensors[index].quantization
    what = f"{'output' if outputs else 'input'} {i} ('{ctx.tensor_names[index]}')"
    scales = [] if q is None or q.scale is None else [float(np.float32(s)) for s in q.scale]
    if not scales:
        raise ctx.error(f"{what} is quantized but has no scale")
    zero_points = [] if q.zeroPoint is None else [int(z) for z in q.zeroPoint]
    if not zero_points:
        zero_points = [0] * len(scales)
    if len(zero_points) != len(scales):
        raise ctx.error(f"{what} has {len(scales)} scales but {len(zero_points)} zero points")
    if any(not math.isfinite(s) or s <= 0 for s in scales):
        raise ctx.error(f"{what} has scales {scales}; every scale must be finite and > 0")
    return Quant(tuple(scales), tuple(zero_points), int(q.quantizedDimension) if len(scales) > 1 else -1)


def _per_tensor(ctx: "TfliteContext", i: int, outputs: bool = False) -> tuple[float, int]:
    q = tensor_quant(ctx, i, outputs)
    if not q.per_tensor:
        raise ctx.error(f"{'output' if outputs else 'input'} {i} has {len(q.scale)} per-channel scales; "
                        "only per-tensor quantization is supported there")
    return q.scale[0], q.zero_point[0]


def _zero_point_in_range(ctx: "TfliteContext", zero_point: int, dtype: str, what: str) -> None:
    low, high = QRANGE[dtype]
    if not low <= zero_point <= high:
        raise ctx.error(f"{what} zero point {zero_point} is outside the {dtype} range [{low}, {high}]")


# ------------------------------------------------------------------------------ TFLite's derived parameters

def _round_half_away(x: float) -> int:
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def activation_range(ctx: "TfliteContext", fused: int, scale: float, zero_point: int, dtype: str) -> tuple[int, int]:
    """CalculateActivationRangeQuantized: the fused activation's bounds quantized with the output's
    parameters (f / scale in float32, rounded half away from zero), within the type's range."""
    qmin, qmax = QRANGE[dtype]

    def quantize(f: float) -> int:
        q = float(np.float32(f) / np.float32(scale))
        return zero_point + _round_half_away(max(min(q, 2.0 ** 31), -2.0 ** 31))

    if fused == Act.NONE:
        return qmin, qmax
    if fused == Act.RELU:
        return max(qmin, quantize(0.0)), qmax
    if fused == Act.RELU6:
        return max(qmin, quantize(0.0)), min(qmax, quantize(6.0))
    if fused == Act.RELU_N1_TO_1:
        return max(qmin, quantize(-1.0)), min(qmax, quantize(1.0))
    raise ctx.error(f"fused activation {fused} (TANH, SIGN_BIT or unknown) is not supported on quantized tensors")


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier (iree_py/ir/quant_math.py): real = multiplier * 2**(shift - 31)."""
    from iree_py.ir.quant_math import quantize_multiplier as from_quant_math  # the quant area's module

    return from_quant_math(real)


def _multipliers(reals: list[float]) -> tuple[list[int], list[int]]:
    pairs = [quantize_multiplier(r) for r in reals]
    return [int(m) for m, _ in pairs], [int(s) for _, s in pairs]


def _smaller_than_one(ctx: "TfliteContext", real: float, what: str) -> tuple[int, int]:
    """QuantizeMultiplierSmallerThanOneExp: TFLite asserts the exponent is <= 0 (real < 1)."""
    multiplier, shift = quantize_multiplier(real)
    if shift > 0:
        raise ctx.error(f"{what} rescale factor {real:.6g} is >= 1; TFLite's quantized ADD requires < 1")
    return int(multiplier), int(shift)


# ------------------------------------------------------------------------------ QUANTIZE / DEQUANTIZE

def quantize(ctx: "TfliteContext") -> list[Value]:
    """f32 -> int8/uint8 (x / scale rounded half away from zero, as TFLite's reference AffineQuantize),
    or int8/uint8 -> int8/uint8 (TFLite's Requantize: a fixed-point rescale of x - zero point)."""
    x = ctx.input(0)
    out_dtype = storage_type(ctx, 0, outputs=True)
    if out_dtype is None:
        raise ctx.error(f"output type {ctx.tensor_type(_tensor_index(ctx, 0, True), 'output')} is not int8/uint8")
    out_q = tensor_quant(ctx, 0, outputs=True)
    for z in out_q.zero_point:
        _zero_point_in_range(ctx, z, out_dtype, "output")
    if x.type.dtype.value == "f32":
        attrs = {"scale": list(out_q.scale), "zero_point": list(out_q.zero_point), "axis": out_q.axis,
                 "dtype": out_dtype, "rounding": "half_away"}
        return [ctx.emit("Quantize", [x], attrs, out=0)]
    if storage_type(ctx, 0) is None:
        raise ctx.error(f"input {x.type} must be float32, int8 or uint8")
    in_scale, in_zp = _per_tensor(ctx, 0)
    out_scale, out_zp = _per_tensor(ctx, 0, outputs=True)
    return [_requantize(ctx, x, in_scale, in_zp, out_scale, out_zp, out_dtype)]


def _requantize(ctx: "TfliteContext", x: Value, in_scale: float, in_zp: int, out_scale: float, out_zp: int,
                out_dtype: str) -> Value:
    """TFLite's Requantize, y = MultiplyByQuantizedMultiplier(x - in_zp, in_scale / out_scale) + out_zp,
    written as a QMatMul of the column of elements by the 1x1 matrix [1]."""
    multiplier, shift = quantize_multiplier(float(np.float64(in_scale) / np.float64(out_scale)))
    qmin, qmax = QRANGE[out_dtype]
    column = ctx.reshape(x, (x.type.num_elements, 1))
    one = ctx.const(np.ones((1, 1), dtype=np.int8), "requantize_one")
    y = ctx.emit("QMatMul", [column, one], _requant_attrs(in_zp, [0], out_zp, out_dtype, qmin, qmax,
                                                         [int(multiplier)], [int(shift)]))
    return ctx.reshape(y, ctx.output_shape(0), out=0)


def dequantize(ctx: "TfliteContext") -> list[Value]:
    x = ctx.input(0)
    q = tensor_quant(ctx, 0)
    attrs = {"scale": list(q.scale), "zero_point": list(q.zero_point), "axis": q.axis}
    return [ctx.emit("Dequantize", [x], attrs, out=0)]


# ------------------------------------------------------------------------------ conv, depthwise, fully connected

def _requant_attrs(x_zp: int, w_zp: list[int], y_zp: int, out_dtype: str, act_min: int, act_max: int,
                   multiplier: list[int], shift: list[int]) -> dict:
    return {"x_zero_point": int(x_zp), "w_zero_point": [int(z) for z in w_zp], "y_zero_point": int(y_zp),
            "out_dtype": out_dtype, "act_min": int(act_min), "act_max": int(act_max), "requant": "fixed",
            "multiplier": multiplier, "shift": shift, "scale": []}


def _weighted_params(ctx: "TfliteContext", channels: int, channel_axis: int, fused: int) -> dict:
    """The requantization attributes of a conv / fully connected: per output channel,
    real = input_scale * filter_scale / output_scale in double (PopulateConvolutionQuantizationParams)."""
    x_dtype = storage_type(ctx, 0)
    w_dtype, out_dtype = storage_type(ctx, 1), storage_type(ctx, 0, outputs=True)
    if w_dtype is None or out_dtype is None or (x_dtype == "u8") != (w_dtype == "u8"):
        raise ctx.error(f"quantized input ({x_dtype}) needs a filter and an output of int8 (or all uint8), got "
                        f"filter {w_dtype or 'not quantized'} and output {out_dtype or 'not quantized'}")
    x_scale, x_zp = _per_tensor(ctx, 0)
    y_scale, y_zp = _per_tensor(ctx, 0, outputs=True)
    wq = tensor_quant(ctx, 1)
    if not wq.per_tensor and (wq.axis != channel_axis or len(wq.scale) != channels):
        raise ctx.error(f"filter has {len(wq.scale)} scales along axis {wq.axis}; per-channel quantization wants "
                        f"{channels} along axis {channel_axis}")
    _zero_point_in_range(ctx, x_zp, x_dtype, "input")
    _zero_point_in_range(ctx, y_zp, out_dtype, "output")
    if ctx.has_input(2):
        bias = ctx.input(2)
        if bias.type.dtype.value != "i32":
            raise ctx.error(f"bias '{bias.name}' {bias.type} must be int32 for a quantized input")
    reals = [float(np.float64(x_scale) * np.float64(s) / np.float64(y_scale)) for s in wq.scale]
    multiplier, shift = _multipliers(reals)
    act_min, act_max = activation_range(ctx, fused, y_scale, y_zp, out_dtype)
    return _requant_attrs(x_zp, list(wq.zero_point), y_zp, out_dtype, act_min, act_max, multiplier, shift)


def _qconv(ctx: "TfliteContext", w_oihw: Value, group: int, opts, channel_axis: int) -> list[Value]:
    from iree_py.frontends.tflite.ops import _pads, _strides

    xn = to_nchw(ctx, ctx.input(0))
    strides = _strides(ctx, opts)
    dilations = (int(opts.dilationHFactor), int(opts.dilationWFactor))
    kernel = tuple(int(d) for d in w_oihw.type.shape[2:])
    pads = _pads(ctx, opts.padding, tuple(int(d) for d in xn.type.shape[2:]), kernel, strides, dilations)
    channels = int(w_oihw.type.shape[0])
    attrs = {"strides": list(strides), "pads": pads, "dilations": list(dilations), "group": group,
             **_weighted_params(ctx, channels, channel_axis, opts.fusedActivationFunction)}
    inputs = [xn, w_oihw] + ([ctx.input(2)] if ctx.has_input(2) else [])
    return [from_nchw(ctx, ctx.emit("QConv", inputs, attrs))]


def _const_weights(ctx: "TfliteContext", perm: list[int]) -> Value:
    w = ctx.input(1)
    if not w.is_const:
        raise ctx.error(f"quantized filter '{w.name}' must be a constant")
    return ctx.const(np.ascontiguousarray(w.const.transpose(perm)), f"{w.name}_t")


def conv_2d(ctx: "TfliteContext") -> list[Value]:
    x, w = ctx.input(0), ctx.input(1)
    if x.type.rank != 4 or w.type.rank != 4:
        raise ctx.error(f"input {x.type} and filter {w.type} must be rank 4 (NHWC, OHWI)")
    channels, w_channels = int(x.type.shape[3]), int(w.type.shape[3])
    if channels % w_channels:
        raise ctx.error(f"input channels {channels} not a multiple of filter channels {w_channels}")
    return _qconv(ctx, _const_weights(ctx, [0, 3, 1, 2]), channels // w_channels, ctx.options(Conv2DOptionsT), 0)


def depthwise_conv_2d(ctx: "TfliteContext") -> list[Value]:
    x, w = ctx.input(0), ctx.input(1)
    if x.type.rank != 4 or w.type.rank != 4 or int(w.type.shape[0]) != 1:
        raise ctx.error(f"input {x.type} and filter {w.type} must be rank 4 (NHWC, 1HW(C*M))")
    channels, out_channels = int(x.type.shape[3]), int(w.type.shape[3])
    if out_channels % channels:
        raise ctx.error(f"filter channels {out_channels} not a multiple of input channels {channels}")
    return _qconv(ctx, _const_weights(ctx, [3, 0, 1, 2]), channels, ctx.options(DepthwiseConv2DOptionsT), 3)


def fully_connected(ctx: "TfliteContext") -> list[Value]:
    opts, rows, units = fully_connected_rows(ctx)
    attrs = _weighted_params(ctx, units, 0, opts.fusedActivationFunction)
    inputs = [rows, _const_weights(ctx, [1, 0])] + ([ctx.input(2)] if ctx.has_input(2) else [])
    return [ctx.reshape(ctx.emit("QMatMul", inputs, attrs), ctx.output_shape(0), out=0)]


# ------------------------------------------------------------------------------ add, pools, concatenation

def add(ctx: "TfliteContext") -> list[Value]:
    """TFLite's quantized ADD (add.cc Prepare): both inputs rescaled to twice the larger input scale
    with 20 bits of headroom, summed, rescaled to the output."""
    out_dtype = storage_type(ctx, 0, outputs=True)
    if out_dtype is None or storage_type(ctx, 1) != storage_type(ctx, 0) or storage_type(ctx, 0) != out_dtype:
        raise ctx.error("a quantized ADD needs both inputs and the output of one type (int8 or uint8)")
    (a_scale, a_zp), (b_scale, b_zp) = _per_tensor(ctx, 0), _per_tensor(ctx, 1)
    y_scale, y_zp = _per_tensor(ctx, 0, outputs=True)
    twice_max = 2.0 * float(max(np.float32(a_scale), np.float32(b_scale)))
    a_mult, a_shift = _smaller_than_one(ctx, a_scale / twice_max, "input 0")
    b_mult, b_shift = _smaller_than_one(ctx, b_scale / twice_max, "input 1")
    y_mult, y_shift = _smaller_than_one(ctx, twice_max / ((1 << ADD_LEFT_SHIFT) * y_scale), "output")
    act_min, act_max = activation_range(ctx, ctx.options(AddOptionsT).fusedActivationFunction, y_scale, y_zp,
                                        out_dtype)
    attrs = {"a_zero_point": a_zp, "b_zero_point": b_zp, "y_zero_point": y_zp, "left_shift": ADD_LEFT_SHIFT,
             "a_multiplier": a_mult, "a_shift": a_shift, "b_multiplier": b_mult, "b_shift": b_shift,
             "y_multiplier": y_mult, "y_shift": y_shift, "act_min": act_min, "act_max": act_max,
             "out_dtype": out_dtype}
    a, b = ctx.input(0), ctx.input(1)
    twins = nchw_operands(ctx, [a, b]) if len(ctx.output_shape(0)) == 4 else None
    if twins is not None:
        return [from_nchw(ctx, ctx.emit("QAdd", twins, attrs))]
    return [ctx.emit("QAdd", [a, b], attrs, out=0)]


def _same_params(ctx: "TfliteContext", inputs: list[int], op: str) -> None:
    """TFLite's int8 MAX_POOL / CONCATENATION require every input's parameters equal the output's."""
    out = tensor_quant(ctx, 0, outputs=True)
    for i in inputs:
        q = tensor_quant(ctx, i)
        if (q.scale, q.zero_point) != (out.scale, out.zero_point):
            raise ctx.error(f"{op} on quantized tensors wants input {i}'s scale/zero point {q.scale}/{q.zero_point} "
                            f"equal to the output's {out.scale}/{out.zero_point}")


def _pool(op: str) -> Converter:
    def convert(ctx: "TfliteContext") -> list[Value]:
        from iree_py.frontends.tflite.ops import _pads, _strides

        opts = ctx.options(Pool2DOptionsT)
        dtype = storage_type(ctx, 0)
        if storage_type(ctx, 0, outputs=True) != dtype:
            raise ctx.error(f"pooling input is {dtype} but the output is not")
        scale, zp = _per_tensor(ctx, 0, outputs=True)
        act_min, act_max = activation_range(ctx, opts.fusedActivationFunction, scale, zp, dtype)
        xn = to_nchw(ctx, ctx.input(0))
        kernel = (int(opts.filterHeight), int(opts.filterWidth))
        strides = _strides(ctx, opts)
        pads = _pads(ctx, opts.padding, tuple(int(d) for d in xn.type.shape[2:]), kernel, strides, (1, 1))
        attrs = {"kernel": list(kernel), "strides": list(strides), "pads": pads, "ceil_mode": 0}
        if op == "MaxPool":
            _same_params(ctx, [0], "MAX_POOL_2D")
            if (act_min, act_max) != QRANGE[dtype]:
                raise ctx.error(f"fused activation {opts.fusedActivationFunction} clamps to [{act_min}, {act_max}]; "
                                "a quantized MAX_POOL_2D with a fused activation is not supported")
            attrs["dilations"] = [1, 1]
        else:
            attrs.update(count_include_pad=0, act_min=act_min, act_max=act_max)
        return [from_nchw(ctx, ctx.emit(op, [xn], attrs))]
    return convert


def concatenation(ctx: "TfliteContext") -> list[Value]:
    opts = ctx.options(ConcatenationOptionsT)
    count = ctx.num_inputs()
    _same_params(ctx, list(range(count)), "CONCATENATION")
    dtype = storage_type(ctx, 0)
    scale, zp = _per_tensor(ctx, 0, outputs=True)
    if activation_range(ctx, opts.fusedActivationFunction, scale, zp, dtype) != QRANGE[dtype]:
        raise ctx.error(f"fused activation {opts.fusedActivationFunction} on a quantized CONCATENATION "
                        "is not supported")
    values = [ctx.input(i) for i in range(count)]
    rank = values[0].type.rank
    axis = int(opts.axis) + rank if int(opts.axis) < 0 else int(opts.axis)
    if not 0 <= axis < rank:
        raise ctx.error(f"axis {opts.axis} out of range for {values[0].type}")
    twins = nchw_operands(ctx, values) if rank == 4 else None
    if twins is not None:
        return [from_nchw(ctx, ctx.emit("Concat", twins, {"axis": NCHW_AXIS_OF_NHWC[axis]}))]
    return [ctx.emit("Concat", values, {"axis": axis}, out=0)]


# ------------------------------------------------------------------------------ registration

QUANTIZED: dict[str, Converter] = {
    "CONV_2D": conv_2d,
    "DEPTHWISE_CONV_2D": depthwise_conv_2d,
    "FULLY_CONNECTED": fully_connected,
    "ADD": add,
    "MAX_POOL_2D": _pool("MaxPool"),
    "AVERAGE_POOL_2D": _pool("QAveragePool"),
    "CONCATENATION": concatenation,
    "DEQUANTIZE": dequantize,
}


def by_dtype(name: str, float_converter: Converter) -> Converter:
    """The converter of operator `name`: the quantized one when its first input is int8/uint8
    (DEQUANTIZE: or int32), else `float_converter`."""
    quantized = QUANTIZED[name]

    def convert(ctx: "TfliteContext") -> list[Value]:
        dequantizes_int32 = name == "DEQUANTIZE" and ctx.tensors[_tensor_index(ctx, 0, False)].type == TflType.INT32
        if storage_type(ctx, 0) is not None or dequantizes_int32:
            return quantized(ctx)
        return float_converter(ctx)
    return convert


def converters(float_converters: dict[str, Converter]) -> dict[int, Converter]:
    """ops.py's CONVERTERS entries: QUANTIZE, and each operator named in `float_converters` (by its
    BuiltinOperator name) dispatched by dtype between its quantized and float converters."""
    from iree_py.frontends.tflite.schema.BuiltinOperator import BuiltinOperator

    table: dict[int, Converter] = {BuiltinOperator.QUANTIZE: quantize}
    for name, float_converter in float_converters.items():
        table[getattr(BuiltinOperator, name)] = by_dtype(name, float_converter)
    return table
