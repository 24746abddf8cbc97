"""TFLite TRANSPOSE_CONV -> ConvTranspose (float32) or QConvTranspose (int8, per-tensor or
per-channel filter scales; bit-exact with TFLite's reference kernel), and MediaPipe's custom op
Convolution2DTransposeBias -> ConvTranspose. Registered in ops.py's CONVERTERS (the custom op in
its CUSTOM_CONVERTERS).

TRANSPOSE_CONV inputs: output_shape (constant int32 [4], NHWC), weights [O, KH, KW, I], input
[N, H, W, I], optional bias [O]. The input goes to NCHW and the weights to [I, O, KH, KW]. Padding
follows TFLite's kernel: SAME / VALID padding is computed as for a forward convolution from the
*output* size (ComputePaddingHeightWidth), the odd pixel at the end; the result is cropped (or
extended with bias-only pixels) to output_shape.

Convolution2DTransposeBias (mediapipe/util/tflite/operations/transpose_conv_bias.cc) is the same
computation without the output_shape input: inputs (input, weights OHWI, bias [O]), float32 only,
no fused activation. Its custom options are not a flexbuffer but the first three int32 fields of
TFLite's TfLiteTransposeConvParams, little-endian: padding (TfLitePadding: 1 SAME, 2 VALID),
stride_width, stride_height (selfie_segmentation: 01000000 02000000 02000000); XNNPACK, the kernel
LiteRT runs it with, copies the struct the same way and uses only these three fields. The output
size is the one MediaPipe's kernel computes: (in - 1) * stride + kernel, less for SAME the total
padding max(0, kernel - 1 - (in - 1) % stride), whose first half goes before; for that size TFLite's
TRANSPOSE_CONV padding is the same, so both ops share `_pads`. XNNPACK instead derives the padding
from the declared output size; the two agree when the model declares MediaPipe's size, and any
other declared size is refused (convert_operators checks every declared output shape).
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.tflite.layout import from_nchw, to_nchw
from iree_py.frontends.tflite.quant_ops import (_multipliers, _per_tensor, _requant_attrs, activation_range,
                                                storage_type, tensor_quant)
from iree_py.frontends.tflite.schema.ActivationFunctionType import ActivationFunctionType as Act
from iree_py.frontends.tflite.schema.BuiltinOperator import BuiltinOperator as B
from iree_py.frontends.tflite.schema.Padding import Padding
from iree_py.frontends.tflite.schema.TransposeConvOptions import TransposeConvOptionsT
from iree_py.ir.graph import Value
from iree_py.ir.ops.conv import conv_transpose_full_size
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.tflite.importer import TfliteContext


def _shape(v: Value) -> tuple[int, ...]:
    return tuple(int(d) for d in v.type.shape)


def _pad_begin(ctx: "TfliteContext", padding: int, out_size: int, kernel: int, stride: int) -> int:
    """TFLite's padding of a transpose conv along one axis (ComputePaddingHeightWidth with the
    output as the forward convolution's input)."""
    if padding == Padding.SAME:
        forward_out = -(-out_size // stride)
    elif padding == Padding.VALID:
        forward_out = (out_size - kernel + stride) // stride
    else:
        raise ctx.error(f"padding {padding} is neither SAME nor VALID")
    return max(0, (forward_out - 1) * stride + kernel - out_size) // 2


def _output_hw(ctx: "TfliteContext", x: Value, w: Value) -> list[int]:
    """The output height and width TRANSPOSE_CONV's output_shape input asks for."""
    output_shape = [int(d) for d in ctx.const_input(0, "output_shape").reshape(-1)]
    if len(output_shape) != 4 or output_shape[0] != _shape(x)[0] or output_shape[3] != _shape(w)[0]:
        raise ctx.error(f"output_shape {output_shape} does not fit input {x.type} and weights {w.type}")
    return output_shape[1:3]


def _pads(ctx: "TfliteContext", x: Value, w: Value, padding: int, strides: list[int], out_hw: list[int]) -> list[int]:
    """ConvTranspose pads [top, left, bottom, right] giving an output of `out_hw`."""
    _, kh, kw, _ = _shape(w)
    _, h, width, _ = _shape(x)
    begins = [_pad_begin(ctx, padding, o, k, s) for o, k, s in zip(out_hw, (kh, kw), strides)]
    full = [conv_transpose_full_size(i, k, s, 1) for i, k, s in zip((h, width), (kh, kw), strides)]
    return begins + [f - b - o for f, b, o in zip(full, begins, out_hw)]


def _nchw_weights(ctx: "TfliteContext", w: Value) -> Value:
    """OHWI weights as ConvTranspose's [I, O, KH, KW]."""
    if w.is_const:
        return ctx.const(np.ascontiguousarray(w.const.transpose(3, 0, 1, 2)), f"{w.name}_iohw")
    return ctx.emit("Transpose", [w], {"perm": [3, 0, 1, 2]})


def _float_result(ctx: "TfliteContext", inputs: list[Value], attrs: dict, fused: int) -> list[Value]:
    y = ctx.emit("ConvTranspose", inputs, attrs)
    # ops.py imports this module for its table, so its activation helper is imported when first used.
    from iree_py.frontends.tflite.ops import activation
    return [from_nchw(ctx, activation(ctx, y, fused))]


def _requant(ctx: "TfliteContext", out_channels: int, fused: int) -> dict:
    """int8: per output channel real = input_scale * filter_scale / output_scale (double), as conv."""
    kinds = (storage_type(ctx, 2), storage_type(ctx, 1), storage_type(ctx, 0, outputs=True))
    if kinds != ("i8", "i8", "i8"):
        raise ctx.error(f"quantized TRANSPOSE_CONV needs int8 input, filter and output, got {kinds}")
    x_scale, x_zp = _per_tensor(ctx, 2)
    y_scale, y_zp = _per_tensor(ctx, 0, outputs=True)
    wq = tensor_quant(ctx, 1)
    if not wq.per_tensor and (wq.axis != 0 or len(wq.scale) != out_channels):
        raise ctx.error(f"filter has {len(wq.scale)} scales along axis {wq.axis}; per-channel quantization wants "
                        f"{out_channels} along axis 0")
    if any(wq.zero_point):
        raise ctx.error(f"filter zero points {list(wq.zero_point)} must be 0 (TFLite's int8 kernel ignores them)")
    if ctx.num_inputs() > 3 and ctx.has_input(3) and ctx.input(3).type.dtype != DType.i32:
        raise ctx.error(f"bias {ctx.input(3).type} must be int32 for an int8 TRANSPOSE_CONV")
    reals = [float(np.float64(x_scale) * np.float64(s) / np.float64(y_scale)) for s in wq.scale]
    multiplier, shift = _multipliers(reals)
    act_min, act_max = activation_range(ctx, fused, y_scale, y_zp, "i8")
    return _requant_attrs(x_zp, [0], y_zp, "i8", act_min, act_max, multiplier, shift)


def transpose_conv(ctx: "TfliteContext") -> list[Value]:
    w, x = ctx.input(1), ctx.input(2)
    quantized = x.type.dtype == DType.i8
    if not quantized and (x.type.dtype != DType.f32 or w.type.dtype != DType.f32):
        raise ctx.error(f"TRANSPOSE_CONV supports float32 and int8, got input {x.type} and weights {w.type}")
    if x.type.rank != 4 or w.type.rank != 4 or _shape(w)[3] != _shape(x)[3]:
        raise ctx.error(f"input {x.type} (NHWC) and weights {w.type} (OHWI) must be rank 4 with the same I")
    opts = ctx.options(TransposeConvOptionsT)
    strides = [int(opts.strideH), int(opts.strideW)]
    if min(strides) < 1:
        raise ctx.error(f"strides (h, w) = {strides} must be >= 1")
    pads = _pads(ctx, x, w, opts.padding, strides, _output_hw(ctx, x, w))
    attrs = {"strides": strides, "dilations": [1, 1], "pads": pads, "group": 1}
    if quantized and not w.is_const:
        raise ctx.error(f"quantized filter '{w.name}' must be a constant")
    inputs = [to_nchw(ctx, x), _nchw_weights(ctx, w)]
    if ctx.num_inputs() > 3 and ctx.has_input(3):
        inputs.append(ctx.input(3))
    if quantized:
        attrs.update(_requant(ctx, _shape(w)[0], opts.fusedActivationFunction))
        return [from_nchw(ctx, ctx.emit("QConvTranspose", inputs, attrs))]
    return _float_result(ctx, inputs, attrs, opts.fusedActivationFunction)


MEDIAPIPE_PADDING = {1: Padding.SAME, 2: Padding.VALID}     # TfLitePadding -> the schema's Padding
MEDIAPIPE_OPTIONS = struct.Struct("<3i")                   # padding, stride_width, stride_height


def _mediapipe_output_size(padding: int, size: int, kernel: int, stride: int) -> int:
    """The output size MediaPipe's kernel gives (transpose_conv_bias.cc, Prepare)."""
    total_pad = max(0, kernel - 1 - (size - 1) % stride) if padding == Padding.SAME else 0
    return stride * (size - 1) + kernel - total_pad


def convolution_2d_transpose_bias(ctx: "TfliteContext") -> list[Value]:
    """MediaPipe's CUSTOM 'Convolution2DTransposeBias': TRANSPOSE_CONV plus a bias (module docstring)."""
    if ctx.num_inputs() != 3 or not all(ctx.has_input(i) for i in range(3)):
        raise ctx.error(f"expects 3 inputs (input, weights, bias), got {ctx.num_inputs()}")
    x, w, b = ctx.input(0), ctx.input(1), ctx.input(2)
    if any(v.type.dtype != DType.f32 for v in (x, w, b)):
        raise ctx.error(f"input {x.type}, weights {w.type} and bias {b.type} must be float32")
    if x.type.rank != 4 or w.type.rank != 4 or _shape(w)[3] != _shape(x)[3]:
        raise ctx.error(f"input {x.type} (NHWC) and weights {w.type} (OHWI) must be rank 4 with the same I")
    if _shape(b) != (_shape(w)[0],):
        raise ctx.error(f"bias {b.type} must have one value per output channel ({_shape(w)[0]})")
    raw = ctx.custom_options()
    if len(raw) < MEDIAPIPE_OPTIONS.size:
        raise ctx.error(f"custom options are {len(raw)} bytes; expected {MEDIAPIPE_OPTIONS.size} (int32 padding, "
                        "stride_width, stride_height)")
    padding_code, stride_w, stride_h = MEDIAPIPE_OPTIONS.unpack_from(raw)
    if padding_code not in MEDIAPIPE_PADDING:
        raise ctx.error(f"padding {padding_code} in the custom options is neither SAME (1) nor VALID (2)")
    strides = [stride_h, stride_w]
    if min(strides) < 1:
        raise ctx.error(f"strides (h, w) = {strides} in the custom options must be >= 1")
    padding = MEDIAPIPE_PADDING[padding_code]
    _, kh, kw, _ = _shape(w)
    out_hw = [_mediapipe_output_size(padding, i, k, s) for i, k, s in zip(_shape(x)[1:3], (kh, kw), strides)]
    attrs = {"strides": strides, "dilations": [1, 1], "pads": _pads(ctx, x, w, padding, strides, out_hw), "group": 1}
    return _float_result(ctx, [to_nchw(ctx, x), _nchw_weights(ctx, w), b], attrs, Act.NONE)


TFLITE_CONVT_CONVERTERS = {
    B.TRANSPOSE_CONV: transpose_conv,
}
TFLITE_CONVT_CUSTOM_CONVERTERS = {
    "Convolution2DTransposeBias": convolution_2d_transpose_bias,
}
