"""int8/uint8 TFLite models against the interpreter's reference kernels (BUILTIN_REF), bit-exact.

Each model runs through the imported graph's IR reference kernels ("reference") and compiled for
the host; the small CNN also under qemu on arm64.
"""
from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert.interpreter import OpResolverType
from tflite_harness import complete_shapes
from tflite_quant_harness import check, qbias, qinput, qtensor, qweights, run_interpreter
from tflite_writer import Quant, TfliteModel

from iree_py.errors import CompileError
from iree_py.frontends.tflite.importer import import_tflite
from iree_py.frontends.tflite.schema import (AddOptions, ConcatenationOptions, Conv2DOptions,
                                             DepthwiseConv2DOptions, FullyConnectedOptions, Pool2DOptions)

ACT = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3}
SAME, VALID = 0, 1
X_SCALE, X_ZP = 0.05, -3          # the input's quantization in most models
Y_SCALE, Y_ZP = 0.11, 5


def options(module, **fields):
    opts = getattr(module, module.__name__.rsplit(".", 1)[1] + "T")()
    for name, value in fields.items():
        setattr(opts, name, value)
    return opts


def _one_op(code: str, in_shape, consts, opts, out_scale=Y_SCALE, out_zp=Y_ZP, dtype=np.int8) -> TfliteModel:
    """int8 input -> one operator (constants given as builder callbacks) -> int8 output."""
    m = TfliteModel()
    x = qinput(m, "x", in_shape, X_SCALE, X_ZP, dtype)
    ins = [x] + [c(m) if c is not None else -1 for c in consts]
    y = qtensor(m, "y", out_scale, out_zp, dtype)
    m.op(code, ins, [y], opts)
    m.output(y)
    return m


# ------------------------------------------------------------------------------ quantize / dequantize

def test_quantize_float_to_int8():
    m = TfliteModel()
    x = m.input("x", (2, 50))
    y = qtensor(m, "y", 0.0137, 3)
    m.op("QUANTIZE", [x], [y])
    m.output(y)
    check(m)


def test_quantize_rounds_ties_away_from_zero():
    m = TfliteModel()
    x = m.input("x", (64,))
    y = qtensor(m, "y", 0.25, 0)
    m.op("QUANTIZE", [x], [y])
    m.output(y)
    data = complete_shapes(m)
    ties = (np.arange(64, dtype=np.float32) - 32) * np.float32(0.25) + np.float32(0.125)   # k + 1/2 steps
    expected = run_interpreter(data, [ties])[0]
    from iree_py.ir.reference import evaluate
    assert np.array_equal(evaluate(import_tflite(data), [ties])[0], expected)


@pytest.mark.parametrize("in_dtype,out_dtype,in_q,out_q", [
    (np.int8, np.int8, (0.05, -3), (0.031, 7)), (np.int8, np.int8, (0.05, 0), (0.2, -128)),
    (np.uint8, np.int8, (0.02, 128), (0.02, 0)), (np.int8, np.uint8, (0.1, 4), (0.07, 130))])
def test_quantize_requantizes(in_dtype, out_dtype, in_q, out_q):
    m = TfliteModel()
    x = qinput(m, "x", (3, 40), *in_q, dtype=in_dtype)
    y = qtensor(m, "y", *out_q, dtype=out_dtype)
    m.op("QUANTIZE", [x], [y])
    m.output(y)
    check(m)


@pytest.mark.parametrize("dtype,zp", [(np.int8, -3), (np.uint8, 131)])
def test_dequantize(dtype, zp):
    m = TfliteModel()
    x = qinput(m, "x", (4, 33), 0.0371, zp, dtype)
    y = m.tensor("y")
    m.op("DEQUANTIZE", [x], [y])
    m.output(y)
    check(m)


# ------------------------------------------------------------------------------ conv, depthwise, FC

def _conv_model(rng, in_shape, out_channels, kernel, per_channel, opts) -> TfliteModel:
    cin = in_shape[3]
    scales = list(rng.uniform(0.002, 0.02, out_channels)) if per_channel else [0.01]
    return _one_op("CONV_2D", in_shape, [
        lambda m: qweights(m, "w", rng, (out_channels, *kernel, cin), scales, 0),
        lambda m: qbias(m, "b", rng, out_channels, X_SCALE, scales if per_channel else scales * out_channels)],
        opts)


@pytest.mark.parametrize("per_channel,padding,stride,dilation,act", [
    (False, SAME, (1, 1), (1, 1), "NONE"), (True, VALID, (1, 1), (1, 1), "RELU"),
    (True, SAME, (2, 2), (1, 1), "RELU6"), (True, SAME, (2, 1), (2, 2), "RELU_N1_TO_1")])
def test_conv_2d(per_channel, padding, stride, dilation, act):
    rng = np.random.default_rng(1)
    opts = options(Conv2DOptions, padding=padding, strideH=stride[0], strideW=stride[1],
                   dilationHFactor=dilation[0], dilationWFactor=dilation[1], fusedActivationFunction=ACT[act])
    check(_conv_model(rng, (1, 9, 8, 3), 5, (3, 3), per_channel, opts))


@pytest.mark.parametrize("multiplier,padding,stride,act", [
    (1, SAME, (1, 1), "RELU6"), (1, VALID, (2, 2), "NONE"), (2, SAME, (2, 1), "RELU")])
def test_depthwise_conv_2d(multiplier, padding, stride, act):
    rng = np.random.default_rng(2)
    channels = 4 * multiplier
    scales = list(rng.uniform(0.002, 0.02, channels))
    opts = options(DepthwiseConv2DOptions, padding=padding, strideH=stride[0], strideW=stride[1],
                   depthMultiplier=multiplier, fusedActivationFunction=ACT[act])
    check(_one_op("DEPTHWISE_CONV_2D", (1, 9, 9, 4), [
        lambda m: qweights(m, "w", rng, (1, 3, 3, channels), scales, 3),
        lambda m: qbias(m, "b", rng, channels, X_SCALE, scales)], opts))


@pytest.mark.parametrize("shape,keep,act,bias", [((2, 16), False, "NONE", True), ((3, 2, 16), True, "RELU", True),
                                                 ((1, 16), False, "RELU6", False)])
def test_fully_connected(shape, keep, act, bias):
    rng = np.random.default_rng(3)
    opts = options(FullyConnectedOptions, keepNumDims=keep, fusedActivationFunction=ACT[act])
    check(_one_op("FULLY_CONNECTED", shape, [
        lambda m: qweights(m, "w", rng, (7, 16), [0.01], 0),
        (lambda m: qbias(m, "b", rng, 7, X_SCALE, [0.01])) if bias else None], opts))


def _u8_weights(m: TfliteModel, rng, shape, zero_point: int) -> int:
    return m.const("w", rng.integers(0, 256, shape).astype(np.uint8), Quant([0.01], [zero_point]))


@pytest.mark.parametrize("code", ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"])
def test_uint8_legacy_models(code):
    """uint8 activations and uint8 weights with non-zero zero points (TFLite's older quantization)."""
    rng = np.random.default_rng(6)
    shape, w_shape, channels, opts = {
        "CONV_2D": ((1, 7, 7, 3), (4, 3, 3, 3), 4, options(Conv2DOptions, padding=VALID, strideH=1, strideW=1,
                                                           fusedActivationFunction=ACT["RELU"])),
        "DEPTHWISE_CONV_2D": ((1, 7, 7, 3), (1, 3, 3, 3), 3, options(DepthwiseConv2DOptions, padding=SAME, strideH=2,
                                                                     strideW=2, depthMultiplier=1)),
        "FULLY_CONNECTED": ((2, 12), (5, 12), 5, options(FullyConnectedOptions))}[code]
    m = TfliteModel()
    x = qinput(m, "x", shape, 0.05, 128, np.uint8)
    y = qtensor(m, "y", 0.2, 100, np.uint8)
    m.op(code, [x, _u8_weights(m, rng, w_shape, 130), qbias(m, "b", rng, channels, 0.05, [0.01] * channels)], [y], opts)
    m.output(y)
    check(m)


# ------------------------------------------------------------------------------ add, pools, data movement

@pytest.mark.parametrize("b_shape,b_q,act,dtype", [
    ((1, 5, 6, 4), (0.08, 10), "NONE", np.int8), ((1, 1, 1, 4), (0.02, -7), "RELU", np.int8),
    ((6, 4), (0.05, -3), "RELU6", np.int8), ((1, 5, 6, 4), (0.03, 100), "NONE", np.uint8)])
def test_add(b_shape, b_q, act, dtype):
    m = TfliteModel()
    offset = 128 if dtype == np.uint8 else 0
    a = qinput(m, "a", (1, 5, 6, 4), X_SCALE, X_ZP + offset, dtype)
    b = qinput(m, "b", b_shape, *b_q, dtype=dtype)
    y = qtensor(m, "y", Y_SCALE, Y_ZP + offset, dtype)
    m.op("ADD", [a, b], [y], options(AddOptions, fusedActivationFunction=ACT[act]))
    m.output(y)
    check(m)


@pytest.mark.parametrize("code,padding,kernel,stride,act", [
    ("MAX_POOL_2D", SAME, (3, 3), (2, 2), "NONE"), ("MAX_POOL_2D", VALID, (2, 2), (2, 2), "NONE"),
    ("AVERAGE_POOL_2D", SAME, (3, 3), (2, 2), "NONE"), ("AVERAGE_POOL_2D", VALID, (2, 3), (1, 2), "RELU6")])
def test_pool(code, padding, kernel, stride, act):
    opts = options(Pool2DOptions, padding=padding, strideH=stride[0], strideW=stride[1], filterHeight=kernel[0],
                   filterWidth=kernel[1], fusedActivationFunction=ACT[act])
    check(_one_op(code, (1, 7, 8, 3), [], opts, X_SCALE, X_ZP))


def test_concatenation_reshape_transpose():
    m = TfliteModel()
    a, b = qinput(m, "a", (1, 3, 4, 2), X_SCALE, X_ZP), qinput(m, "b", (1, 3, 4, 5), X_SCALE, X_ZP)
    c = qtensor(m, "c", X_SCALE, X_ZP)
    m.op("CONCATENATION", [a, b], [c], options(ConcatenationOptions, axis=3))
    r = m.tensor("r", (3, 28), np.int8, quant=Quant([X_SCALE], [X_ZP]))
    m.op("RESHAPE", [c, m.const("shape", np.array([3, 28], np.int32))], [r])
    t = qtensor(m, "t", X_SCALE, X_ZP)
    m.op("TRANSPOSE", [r, m.const("perm", np.array([1, 0], np.int32))], [t])
    m.output(t)
    check(m)


def test_concatenation_with_different_scales_is_refused():
    m = TfliteModel()
    a, b = qinput(m, "a", (2, 3), X_SCALE, X_ZP), qinput(m, "b", (2, 3), 0.07, X_ZP)
    c = m.tensor("c", (2, 6), np.int8, quant=Quant([X_SCALE], [X_ZP]))
    m.op("CONCATENATION", [a, b], [c], options(ConcatenationOptions, axis=1))
    m.output(c)
    with pytest.raises(CompileError, match=r"operator 0 \(CONCATENATION\): .*input 1's scale/zero point"):
        import_tflite(m.build())


def test_quantized_tensor_without_scale_is_refused():
    m = TfliteModel()
    x = m.input("x", (2, 3))
    y = m.tensor("y", (2, 3), np.int8)
    m.op("QUANTIZE", [x], [y])
    m.output(y)
    with pytest.raises(CompileError, match=r"operator 0 \(QUANTIZE\): output 0 \('y'\) is quantized but has no scale"):
        import_tflite(m.build())


# ------------------------------------------------------------------------------ a small int8 CNN

def small_cnn() -> TfliteModel:
    """float in -> QUANTIZE -> conv (per channel, RELU6) -> depthwise (RELU) -> ADD (residual)
    -> AVERAGE_POOL -> MAX_POOL -> RESHAPE -> FULLY_CONNECTED -> DEQUANTIZE -> float out."""
    rng = np.random.default_rng(11)
    m = TfliteModel()
    x = m.input("x", (1, 12, 12, 3))
    xq = qtensor(m, "xq", 0.03, -2)
    m.op("QUANTIZE", [x], [xq])
    s1 = list(rng.uniform(0.003, 0.01, 8))
    c1 = qtensor(m, "c1", 0.025, -128)
    m.op("CONV_2D", [xq, qweights(m, "w1", rng, (8, 3, 3, 3), s1, 0), qbias(m, "b1", rng, 8, 0.03, s1)], [c1],
         options(Conv2DOptions, padding=SAME, strideH=1, strideW=1, fusedActivationFunction=ACT["RELU6"]))
    s2 = list(rng.uniform(0.005, 0.02, 8))
    c2 = qtensor(m, "c2", 0.02, -128)
    m.op("DEPTHWISE_CONV_2D", [c1, qweights(m, "w2", rng, (1, 3, 3, 8), s2, 3), qbias(m, "b2", rng, 8, 0.025, s2)],
         [c2], options(DepthwiseConv2DOptions, padding=SAME, strideH=1, strideW=1, depthMultiplier=1,
                       fusedActivationFunction=ACT["RELU"]))
    r = qtensor(m, "res", 0.04, -100)
    m.op("ADD", [c1, c2], [r], options(AddOptions))
    p1 = qtensor(m, "avg", 0.04, -100)
    m.op("AVERAGE_POOL_2D", [r], [p1], options(Pool2DOptions, padding=VALID, strideH=2, strideW=2, filterHeight=2,
                                                filterWidth=2))
    p2 = qtensor(m, "max", 0.04, -100)
    m.op("MAX_POOL_2D", [p1], [p2], options(Pool2DOptions, padding=SAME, strideH=2, strideW=2, filterHeight=3,
                                             filterWidth=3))
    flat = m.tensor("flat", (1, 72), np.int8, quant=Quant([0.04], [-100]))
    m.op("RESHAPE", [p2, m.const("shape", np.array([1, 72], np.int32))], [flat])
    fc = qtensor(m, "fc", 0.15, 3)
    m.op("FULLY_CONNECTED", [flat, qweights(m, "w3", rng, (10, 72), [0.004], 0),
                             qbias(m, "b3", rng, 10, 0.04, [0.004])], [fc], options(FullyConnectedOptions))
    y = m.tensor("y")
    m.op("DEQUANTIZE", [fc], [y])
    m.output(y)
    return m


def test_small_cnn():
    check(small_cnn())


def test_small_cnn_arm64():
    check(small_cnn(), targets=("arm64",))


def test_int8_graph_io_keeps_int8():
    """An int8 model input and output stay int8 in the graph and in the compiled module's API."""
    rng = np.random.default_rng(4)
    m = _one_op("CONV_2D", (1, 6, 6, 2), [lambda m: qweights(m, "w", rng, (3, 1, 1, 2), [0.01], 0),
                                          lambda m: qbias(m, "b", rng, 3, X_SCALE, [0.01] * 3)],
                options(Conv2DOptions, padding=VALID, strideH=1, strideW=1))
    graph = import_tflite(check(m))
    assert str(graph.inputs[0].type) == "tensor<1x6x6x2xi8>"
    assert str(graph.outputs[0].type) == "tensor<1x6x6x3xi8>"


def test_default_resolver_quantize_differs():
    """Why the reference is BUILTIN_REF: the optimized QUANTIZE computes x * (1 / scale) rounded half
    to even, so at (and near) ties it differs by 1 from the reference kernel's x / scale rounded half
    away from zero, which iree-py follows."""
    m = TfliteModel()
    x = m.input("x", (200,))
    y = qtensor(m, "y", 0.0137, 3)
    m.op("QUANTIZE", [x], [y])
    m.output(y)
    data = complete_shapes(m)
    ties = ((np.arange(200) - 100 + 0.5) * 0.0137).astype(np.float32)
    reference = run_interpreter(data, [ties])[0].astype(np.int32)
    optimized = run_interpreter(data, [ties], OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)[0].astype(np.int32)
    assert np.count_nonzero(reference != optimized) > 0
    assert np.max(np.abs(reference - optimized)) == 1
    from iree_py.ir.reference import evaluate
    assert np.array_equal(evaluate(import_tflite(data), [ties])[0], reference)
