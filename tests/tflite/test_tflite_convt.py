"""TFLite TRANSPOSE_CONV against the TFLite interpreter, compiled for the host: float32 within 1e-4
of the largest magnitude (tflite_harness.check), int8 bit-exact against the reference kernels
(tflite_quant_harness.check, also through the IR reference)."""
from __future__ import annotations

import numpy as np
import pytest
from tflite_harness import check
from tflite_quant_harness import check as check_quant
from tflite_quant_harness import qbias, qinput, qtensor, qweights
from tflite_writer import TfliteModel

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
