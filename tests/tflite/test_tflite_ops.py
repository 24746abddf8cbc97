"""Each imported TFLite op, with its options and fused activations, against the TFLite interpreter."""
from __future__ import annotations

import numpy as np
import pytest
from tflite_harness import check
from tflite_writer import TfliteModel

from iree_py.frontends.tflite.schema import (
    AddOptions, BatchMatMulOptions, ConcatenationOptions, Conv2DOptions, DepthwiseConv2DOptions, DivOptions,
    FullyConnectedOptions, GeluOptions, LeakyReluOptions, MulOptions, Pool2DOptions, ReducerOptions,
    SoftmaxOptions, StridedSliceOptions, SubOptions)

RNG = np.random.default_rng(7)
ACTIVATIONS = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3}  # TANH: tests/tflite/test_tflite_errors.py
SAME, VALID = 0, 1


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def options(module, **fields):
    opts = getattr(module, module.__name__.rsplit(".", 1)[1] + "T")()
    for name, value in fields.items():
        setattr(opts, name, value)
    return opts


def single_op(code: str, shapes: list[tuple[int, ...]], consts: list[np.ndarray | None] | None = None,
              opts=None, outputs: int = 1) -> TfliteModel:
    """One operator: inputs `shapes` (computed), then the constants (None: an absent input)."""
    m = TfliteModel()
    ins = [m.input(f"in{i}", s) for i, s in enumerate(shapes)]
    ins += [-1 if c is None else m.const(f"c{i}", c) for i, c in enumerate(consts or [])]
    outs = [m.tensor(f"out{i}") for i in range(outputs)]
    m.op(code, ins, outs, opts)
    for o in outs:
        m.output(o)
    return m


@pytest.mark.parametrize("padding,stride,dilation,act", [
    (SAME, (1, 1), (1, 1), "NONE"), (VALID, (1, 1), (1, 1), "RELU"), (SAME, (2, 2), (1, 1), "RELU6"),
    (SAME, (2, 1), (1, 1), "RELU_N1_TO_1"), (VALID, (1, 2), (2, 2), "RELU"), (SAME, (1, 1), (2, 1), "NONE")])
def test_conv_2d(padding, stride, dilation, act):
    opts = options(Conv2DOptions, padding=padding, strideH=stride[0], strideW=stride[1], dilationHFactor=dilation[0],
                   dilationWFactor=dilation[1], fusedActivationFunction=ACTIVATIONS[act])
    check(single_op("CONV_2D", [(1, 9, 8, 3)], [rand(5, 3, 3, 3), rand(5)], opts))


def test_conv_2d_5x5_batch2():
    opts = options(Conv2DOptions, padding=SAME, strideH=2, strideW=2)
    check(single_op("CONV_2D", [(2, 10, 10, 4)], [rand(6, 5, 5, 4), rand(6)], opts))


def test_grouped_conv_2d():
    opts = options(Conv2DOptions, padding=VALID, strideH=1, strideW=1)
    check(single_op("CONV_2D", [(1, 6, 6, 4)], [rand(6, 3, 3, 2), rand(6)], opts))


@pytest.mark.parametrize("multiplier,padding,stride,act", [
    (1, SAME, (1, 1), "RELU6"), (1, VALID, (2, 2), "NONE"), (2, SAME, (2, 1), "RELU"), (3, VALID, (1, 1), "RELU_N1_TO_1")])
def test_depthwise_conv_2d(multiplier, padding, stride, act):
    channels = 4
    opts = options(DepthwiseConv2DOptions, padding=padding, strideH=stride[0], strideW=stride[1],
                   depthMultiplier=multiplier, fusedActivationFunction=ACTIVATIONS[act])
    check(single_op("DEPTHWISE_CONV_2D", [(1, 9, 9, channels)],
                    [rand(1, 3, 3, channels * multiplier), rand(channels * multiplier)], opts))


@pytest.mark.parametrize("shape,keep,act", [((2, 6), False, "NONE"), ((3, 2, 6), False, "RELU"),
                                            ((3, 2, 6), True, "RELU6"), ((1, 6), False, "RELU_N1_TO_1")])
def test_fully_connected(shape, keep, act):
    opts = options(FullyConnectedOptions, keepNumDims=keep, fusedActivationFunction=ACTIVATIONS[act])
    check(single_op("FULLY_CONNECTED", [shape], [rand(5, 6), rand(5)], opts))


def test_fully_connected_without_bias():
    check(single_op("FULLY_CONNECTED", [(4, 8)], [rand(3, 8), None], options(FullyConnectedOptions)))


BINARY_OPTIONS = {"ADD": AddOptions, "SUB": SubOptions, "MUL": MulOptions, "DIV": DivOptions}


@pytest.mark.parametrize("code", list(BINARY_OPTIONS))
@pytest.mark.parametrize("act", list(ACTIVATIONS))
def test_binary_with_fused_activation(code, act):
    opts = options(BINARY_OPTIONS[code], fusedActivationFunction=ACTIVATIONS[act])
    m = single_op(code, [(2, 3, 4), (2, 3, 4)], opts=opts)
    if code == "DIV":  # keep the divisor away from zero
        m = single_op(code, [(2, 3, 4)], [np.abs(rand(3, 4)) + 0.5], opts)
    check(m)


@pytest.mark.parametrize("code", list(BINARY_OPTIONS))
def test_binary_broadcast_constant(code):
    check(single_op(code, [(1, 4, 5, 3)], [np.abs(rand(3)) + 0.5], options(BINARY_OPTIONS[code])))


@pytest.mark.parametrize("code,opts", [
    ("RELU", None), ("RELU6", None), ("RELU_N1_TO_1", None), ("LOGISTIC", None), ("TANH", None),
    ("HARD_SWISH", None), ("LEAKY_RELU", options(LeakyReluOptions, alpha=0.2)),
    ("GELU", options(GeluOptions, approximate=False)), ("GELU", options(GeluOptions, approximate=True))])
def test_activation(code, opts):
    m = single_op(code, [(2, 5, 6)], opts=opts)
    check(m)


def test_prelu():
    check(single_op("PRELU", [(1, 4, 4, 3)], [rand(1, 1, 3)]))


@pytest.mark.parametrize("code", ["MAX_POOL_2D", "AVERAGE_POOL_2D"])
@pytest.mark.parametrize("padding,filt,stride,act", [
    (VALID, (2, 2), (2, 2), "NONE"), (SAME, (3, 3), (2, 2), "RELU"), (SAME, (3, 2), (1, 1), "RELU6"),
    (VALID, (3, 3), (1, 2), "NONE")])
def test_pool(code, padding, filt, stride, act):
    opts = options(Pool2DOptions, padding=padding, filterHeight=filt[0], filterWidth=filt[1], strideH=stride[0],
                   strideW=stride[1], fusedActivationFunction=ACTIVATIONS[act])
    check(single_op(code, [(1, 7, 8, 3)], opts=opts))


@pytest.mark.parametrize("code", ["MEAN", "SUM", "REDUCE_MAX"])
@pytest.mark.parametrize("axes,keep", [([1, 2], True), ([1, 2], False), ([-1], False), ([0, 2], True)])
def test_reduce(code, axes, keep):
    check(single_op(code, [(2, 4, 5, 3)], [np.array(axes, np.int32)], options(ReducerOptions, keepDims=keep)))


@pytest.mark.parametrize("beta", [1.0, 0.5])
def test_softmax(beta):
    check(single_op("SOFTMAX", [(3, 7)], opts=options(SoftmaxOptions, beta=beta)))


def test_log_softmax():
    check(single_op("LOG_SOFTMAX", [(2, 3, 6)]))


def test_reshape_squeeze_expand_dims():
    m = TfliteModel()
    x = m.input("x", (2, 1, 6))
    shape = m.const("shape", np.array([3, 4], np.int32))
    r, s, e = m.tensor("r"), m.tensor("s"), m.tensor("e")
    m.op("RESHAPE", [x, shape], [r])
    m.op("EXPAND_DIMS", [r, m.const("axis", np.array(1, np.int32))], [e])
    m.op("SQUEEZE", [e], [s])
    for t in (r, s, e):
        m.output(t)
    check(m)


def test_transpose():
    check(single_op("TRANSPOSE", [(2, 3, 4)], [np.array([2, 0, 1], np.int32)]))


@pytest.mark.parametrize("axis", [3, -1, 1, 2, 0])
def test_concatenation(axis):
    # TFLite's float kernel refuses a fused activation here (ours applies it: tested on the IR)
    opts = options(ConcatenationOptions, axis=axis)
    check(single_op("CONCATENATION", [(1, 3, 4, 2), (1, 3, 4, 2)], [rand(1, 3, 4, 2)], opts))


@pytest.mark.parametrize("begin,size", [([0, 1, 1, 0], [1, 2, -1, 2]), ([1, 0, 2], [2, -1, 3])])
def test_slice(begin, size):
    shape = (1, 3, 4, 2) if len(begin) == 4 else (3, 5, 6)
    check(single_op("SLICE", [shape], [np.array(begin, np.int32), np.array(size, np.int32)]))


I32 = np.int32
STRIDED_SLICES = {  # name: (shape, begin, end, strides, options)
    "steps": ((4, 10, 6), [1, -8, 0], [100, 9, 6], [2, 3, 1], {}),
    "negative_strides": ((3, 8, 9), [2, -1, 7], [-100, 0, 1], [-1, -2, -3], {}),
    "masks": ((4, 6, 5), [3, 2, 4], [0, 5, 0], [1, -1, 2], {"beginMask": 0b101, "endMask": 0b011}),
    "shrink": ((4, 6, 5), [2, 0, -1], [3, 6, 0], [1, 2, 1], {"shrinkAxisMask": 0b101}),
    "fewer_axes_nhwc": ((1, 6, 7, 4), [0, 1], [1, 5], [1, 2], {}),
    "offset": ((5, 6), [1, 2], [3, 3], [1, 1], {"offset": True}),
}


@pytest.mark.parametrize("case", sorted(STRIDED_SLICES))
def test_strided_slice(case):
    shape, begin, end, strides, opts = STRIDED_SLICES[case]
    check(single_op("STRIDED_SLICE", [shape], [np.array(v, I32) for v in (begin, end, strides)],
                    options(StridedSliceOptions, **opts)))


@pytest.mark.parametrize("code", ["PAD", "PADV2"])
def test_pad(code):
    consts = [np.array([[0, 0], [1, 2], [0, 1], [0, 0]], np.int32)]
    if code == "PADV2":
        consts.append(np.array([-1.5], np.float32))
    check(single_op(code, [(1, 3, 4, 2)], consts))


def test_dequantize_float16_weights():
    m = TfliteModel()
    x = m.input("x", (2, 6))
    w16 = m.const("w16", rand(4, 6).astype(np.float16))
    w, y = m.tensor("w", (4, 6)), m.tensor("y")
    m.op("DEQUANTIZE", [w16], [w])
    m.op("FULLY_CONNECTED", [x, w, -1], [y], options(FullyConnectedOptions))
    m.output(y)
    check(m)


@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, False), (False, True)])
def test_batch_matmul(adj_x, adj_y):
    a = (2, 5, 3) if adj_x else (2, 3, 5)
    b = (2, 4, 5) if adj_y else (2, 5, 4)
    check(single_op("BATCH_MATMUL", [a, b], opts=options(BatchMatMulOptions, adjX=adj_x, adjY=adj_y)))


@pytest.mark.parametrize("case", ["conv", "depthwise", "fully_connected", "average_pool", "pad", "mean"])
def test_ops_on_arm64(case):
    """A handful of ops through the cross-built runtime under qemu-aarch64."""
    models = {
        "conv": lambda: single_op("CONV_2D", [(1, 6, 7, 3)], [rand(4, 3, 3, 3), rand(4)],
                                  options(Conv2DOptions, padding=SAME, strideH=2, strideW=1, fusedActivationFunction=3)),
        "depthwise": lambda: single_op("DEPTHWISE_CONV_2D", [(1, 6, 6, 2)], [rand(1, 3, 3, 4), rand(4)],
                                       options(DepthwiseConv2DOptions, padding=VALID, strideH=1, strideW=1,
                                               depthMultiplier=2)),
        "fully_connected": lambda: single_op("FULLY_CONNECTED", [(3, 8)], [rand(5, 8), rand(5)],
                                             options(FullyConnectedOptions, fusedActivationFunction=1)),
        "average_pool": lambda: single_op("AVERAGE_POOL_2D", [(1, 5, 5, 3)],
                                          opts=options(Pool2DOptions, padding=SAME, filterHeight=3, filterWidth=3,
                                                       strideH=2, strideW=2)),
        "pad": lambda: single_op("PAD", [(1, 3, 3, 2)], [np.array([[0, 0], [1, 1], [2, 0], [0, 0]], np.int32)]),
        "mean": lambda: single_op("MEAN", [(1, 4, 4, 3)], [np.array([1, 2], np.int32)],
                                  options(ReducerOptions, keepDims=True)),
    }
    check(models[case](), "arm64")
