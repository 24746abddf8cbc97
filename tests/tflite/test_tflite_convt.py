"""TFLite TRANSPOSE_CONV against the TFLite interpreter, compiled for the host: float32 within 1e-4
of the largest magnitude (tflite_harness.check), int8 bit-exact against the reference kernels
(tflite_quant_harness.check, also through the IR reference). MediaPipe's custom op
Convolution2DTransposeBias against LiteRT's XNNPACK delegate, its only LiteRT kernel."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from tflite_harness import assert_close, check, run_iree, run_tflite
from tflite_quant_harness import check as check_quant
from tflite_quant_harness import qbias, qinput, qtensor, qweights
from tflite_writer import TfliteModel

from iree_py.errors import CompileError
from iree_py.frontends.tflite import import_tflite
from iree_py.frontends.tflite.schema.TransposeConvOptions import TransposeConvOptionsT

RNG = np.random.default_rng(17)
ACTIVATIONS = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3}
SAME, VALID = 0, 1


def transpose_conv(x_shape: tuple[int, ...], w_shape: tuple[int, ...], out_hw: tuple[int, int], padding: int,
                   strides: tuple[int, int], act: str = "NONE", bias: bool = True) -> TfliteModel:
    """One TRANSPOSE_CONV: inputs output_shape (constant), weights [O, KH, KW, I] (constant), x, bias."""
    opts = TransposeConvOptionsT()
    opts.padding, opts.strideH, opts.strideW = padding, strides[0], strides[1]
    opts.fusedActivationFunction = ACTIVATIONS[act]
    m = TfliteModel()
    x = m.input("x", x_shape)
    shape = m.const("output_shape", np.array([x_shape[0], *out_hw, w_shape[0]], dtype=np.int32))
    w = m.const("w", RNG.standard_normal(w_shape).astype(np.float32))
    ins = [shape, w, x] + ([m.const("b", RNG.standard_normal(w_shape[0]).astype(np.float32))] if bias else [])
    y = m.tensor("y", (x_shape[0], *out_hw, w_shape[0]))
    m.op("TRANSPOSE_CONV", ins, [y], opts)
    m.output(y)
    return m


@pytest.mark.parametrize("x_shape,w_shape,out_hw,padding,strides,act,bias", [
    ((1, 4, 4, 3), (2, 3, 3, 3), (4, 4), SAME, (1, 1), "NONE", True),
    ((1, 4, 5, 3), (4, 3, 3, 3), (8, 10), SAME, (2, 2), "RELU", True),
    ((2, 3, 3, 2), (3, 3, 3, 2), (7, 7), VALID, (2, 2), "RELU6", False),
    ((1, 3, 4, 2), (2, 4, 2, 2), (6, 12), SAME, (2, 3), "RELU_N1_TO_1", True),
    ((1, 3, 3, 4), (5, 2, 2, 4), (6, 6), VALID, (2, 2), "NONE", False),
    ((1, 5, 5, 8), (4, 5, 5, 8), (9, 10), SAME, (2, 2), "NONE", True),
])
def test_transpose_conv(x_shape, w_shape, out_hw, padding, strides, act, bias):
    check(transpose_conv(x_shape, w_shape, out_hw, padding, strides, act, bias))


@pytest.mark.parametrize("per_channel,padding,strides,act,bias", [
    (True, SAME, (2, 2), "NONE", True), (False, VALID, (2, 1), "RELU", True), (True, SAME, (1, 1), "RELU6", False),
    (True, VALID, (3, 2), "NONE", True)])
def test_int8_transpose_conv_is_bit_exact(per_channel, padding, strides, act, bias):
    rng = np.random.default_rng(3)
    x_shape, out_channels, kernel = (1, 4, 5, 3), 4, (3, 3)
    out_hw = tuple(i * s if padding == SAME else (i - 1) * s + k for i, s, k in zip(x_shape[1:3], strides, kernel))
    w_scales = list(rng.uniform(0.002, 0.02, out_channels)) if per_channel else [0.01]
    opts = TransposeConvOptionsT()
    opts.padding, opts.strideH, opts.strideW = padding, strides[0], strides[1]
    opts.fusedActivationFunction = ACTIVATIONS[act]
    m = TfliteModel()
    x = qinput(m, "x", x_shape, 0.05, -3)
    shape = m.const("output_shape", np.array([1, *out_hw, out_channels], dtype=np.int32))
    w = qweights(m, "w", rng, (out_channels, *kernel, x_shape[3]), w_scales, 0)
    ins = [shape, w, x] + ([qbias(m, "b", rng, out_channels, 0.05, w_scales)] if bias else [])
    y = qtensor(m, "y", 0.11, 5)
    m.op("TRANSPOSE_CONV", ins, [y], opts)
    m.output(y)
    check_quant(m, ("reference", "host"))


# ------------------------------------------------------------ MediaPipe's Convolution2DTransposeBias

MEDIAPIPE_SAME, MEDIAPIPE_VALID = 1, 2     # TfLitePadding, as the custom options store it


def transpose_conv_bias(x_shape: tuple[int, ...], w: np.ndarray, b: np.ndarray, out_hw: tuple[int, int], padding: int,
                        strides: tuple[int, int], options: bytes | None = None) -> TfliteModel:
    """One CUSTOM 'Convolution2DTransposeBias' (input, weights OHWI, bias); its custom options are
    int32 padding, stride_width, stride_height (as MediaPipe writes them)."""
    m = TfliteModel()
    x = m.input("x", x_shape)
    wi, bi = m.const("w", w), m.const("b", b)
    y = m.tensor("y", (x_shape[0], *out_hw, w.shape[0]))
    raw = struct.pack("<3i", padding, strides[1], strides[0]) if options is None else options
    m.custom_op("Convolution2DTransposeBias", [x, wi, bi], [y], raw)
    m.output(y)
    return m


def run_xnnpack(data: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """LiteRT with its XNNPACK delegate, the only LiteRT kernel of the custom op."""
    interp = Interpreter(model_content=data, num_threads=1, experimental_op_resolver_type=OpResolverType.AUTO)
    interp.allocate_tensors()
    for detail, x in zip(interp.get_input_details(), inputs):
        interp.set_tensor(detail["index"], x)
    interp.invoke()
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]


@pytest.mark.parametrize("x_shape,w_shape,out_hw,padding,strides", [
    ((1, 4, 4, 3), (2, 2, 2, 3), (8, 8), MEDIAPIPE_SAME, (2, 2)),      # selfie_segmentation's pattern
    ((1, 4, 5, 3), (2, 3, 3, 3), (8, 9), MEDIAPIPE_SAME, (2, 2)),      # an odd total padding along W
    ((1, 4, 5, 3), (2, 3, 3, 3), (9, 11), MEDIAPIPE_VALID, (2, 2)),
    ((2, 3, 3, 4), (5, 4, 4, 4), (5, 5), MEDIAPIPE_SAME, (2, 2)),
    ((1, 3, 3, 2), (2, 3, 3, 2), (3, 3), MEDIAPIPE_SAME, (1, 1)),
    ((1, 3, 4, 2), (2, 3, 2, 2), (5, 4), MEDIAPIPE_SAME, (2, 1)),
    ((1, 4, 4, 8), (4, 2, 2, 8), (8, 8), MEDIAPIPE_VALID, (2, 2)),
])
def test_convolution_2d_transpose_bias_against_xnnpack(x_shape, w_shape, out_hw, padding, strides):
    w = RNG.standard_normal(w_shape).astype(np.float32)
    b = RNG.standard_normal(w_shape[0]).astype(np.float32)
    data = transpose_conv_bias(x_shape, w, b, out_hw, padding, strides).build()
    x = RNG.standard_normal(x_shape).astype(np.float32)
    assert_close(run_iree(data, [x]), run_xnnpack(data, [x]))


@pytest.mark.parametrize("x_shape,w_shape,out_hw,padding,strides", [
    ((1, 5, 4, 2), (3, 2, 2, 2), (14, 10), MEDIAPIPE_SAME, (3, 3)),
    ((1, 5, 4, 2), (3, 2, 2, 2), (14, 11), MEDIAPIPE_VALID, (3, 3)),
    ((1, 3, 3, 2), (2, 1, 3, 2), (7, 5), MEDIAPIPE_SAME, (3, 2)),
])
def test_convolution_2d_transpose_bias_with_strides_above_the_kernel(x_shape, w_shape, out_hw, padding, strides):
    """XNNPACK refuses strides larger than the kernel; MediaPipe's own kernel is TFLite's reference
    TRANSPOSE_CONV plus the bias, so the builtin TRANSPOSE_CONV with that output shape is the reference."""
    w = RNG.standard_normal(w_shape).astype(np.float32)
    b = RNG.standard_normal(w_shape[0]).astype(np.float32)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    data = transpose_conv_bias(x_shape, w, b, out_hw, padding, strides).build()
    opts = TransposeConvOptionsT()
    opts.padding, opts.strideH, opts.strideW = SAME if padding == MEDIAPIPE_SAME else VALID, strides[0], strides[1]
    builtin = TfliteModel()
    xi = builtin.input("x", x_shape)
    shape = builtin.const("output_shape", np.array([x_shape[0], *out_hw, w_shape[0]], dtype=np.int32))
    y = builtin.tensor("y", (x_shape[0], *out_hw, w_shape[0]))
    builtin.op("TRANSPOSE_CONV", [shape, builtin.const("w", w), xi, builtin.const("b", b)], [y], opts)
    builtin.output(y)
    assert_close(run_iree(data, [x]), run_tflite(builtin.build(), [x]))


W_2233 = np.ones((2, 3, 3, 3), np.float32)
B_2 = np.zeros(2, np.float32)


@pytest.mark.parametrize("options,out_hw,message", [
    (struct.pack("<3i", 0, 2, 2), (8, 9), r"padding 0 in the custom options is neither SAME \(1\) nor VALID \(2\)"),
    (struct.pack("<2i", 1, 2), (8, 9), r"custom options are 8 bytes; expected 12 \(int32 padding, stride_width, "
                                       r"stride_height\)"),
    (struct.pack("<3i", 1, 2, 0), (8, 9), r"strides \(h, w\) = \[0, 2\] in the custom options must be >= 1"),
    (struct.pack("<3i", 1, 2, 2), (8, 10), r"output 0 \('y'\) computed as tensor<1x8x9x2xf32>, the model declares "
                                           r"tensor<1x8x10x2xf32>"),
])
def test_convolution_2d_transpose_bias_errors(options, out_hw, message):
    m = transpose_conv_bias((1, 4, 5, 3), W_2233, B_2, out_hw, MEDIAPIPE_SAME, (2, 2), options)
    with pytest.raises(CompileError, match=r"operator 0 \(CUSTOM 'Convolution2DTransposeBias'\): " + message):
        import_tflite(m.build())


def test_an_unknown_custom_op_is_named():
    m = TfliteModel()
    x = m.input("x", (2, 3))
    y = m.tensor("y", (2, 3))
    m.custom_op("MaxPoolingWithArgmax2D", [x], [y], b"")
    m.output(y)
    with pytest.raises(CompileError, match=r"operator 0 \(CUSTOM 'MaxPoolingWithArgmax2D'\): op not supported"):
        import_tflite(m.build())
