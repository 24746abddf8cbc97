"""Every imported float TFLite op in one model, run through the cross-built runtime under
qemu-aarch64 and on the host, against the TFLite interpreter (relative 1e-4). The op-by-op tests
(test_tflite_ops*.py) cover options on the host; this one model covers the arm64 kernels of the
same ops in one compile and one qemu run. Each op reads the input x (or a constant) and is an
output of its own."""
from __future__ import annotations

import numpy as np
import pytest
from tflite_harness import check
from tflite_writer import TfliteModel

from iree_py.frontends.tflite.schema import (
    ArgMaxOptions, BatchMatMulOptions, CastOptions, ConcatenationOptions, Conv2DOptions, DepthwiseConv2DOptions,
    FullyConnectedOptions, GatherOptions, GeluOptions, LeakyReluOptions, MirrorPadOptions, PackOptions,
    Pool2DOptions, ReducerOptions, ResizeBilinearOptions, SoftmaxOptions, SplitOptions, SplitVOptions,
    SqueezeOptions, StridedSliceOptions, TensorType, TransposeConvOptions, UnpackOptions)

RNG = np.random.default_rng(11)
SAME, VALID = 0, 1
X_SHAPE = (1, 6, 6, 4)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def opts(module, **fields):
    o = getattr(module, module.__name__.rsplit(".", 1)[1] + "T")()
    for name, value in fields.items():
        setattr(o, name, value)
    return o


def i32(*values: int) -> np.ndarray:
    return np.array(values, np.int32)


def zoo() -> TfliteModel:
    m = TfliteModel()
    x = m.input("x", X_SHAPE)
    count = [0]

    def op(code: str, inputs: list, options=None, outputs: int = 1, out: bool = True) -> list[int]:
        ins = [m.const(f"{code.lower()}_c{count[0]}_{i}", v) if isinstance(v, np.ndarray) else v
               for i, v in enumerate(inputs)]
        outs = [m.tensor(f"{code.lower()}_{count[0]}_{i}") for i in range(outputs)]
        count[0] += 1
        m.op(code, ins, outs, options)
        if out:
            for o in outs:
                m.output(o)
        return outs

    op("CONV_2D", [x, rand(8, 3, 3, 4), rand(8)], opts(Conv2DOptions, padding=SAME, strideH=2, strideW=1,
                                                        fusedActivationFunction=3))
    op("DEPTHWISE_CONV_2D", [x, rand(1, 3, 3, 8), rand(8)],
       opts(DepthwiseConv2DOptions, padding=VALID, strideH=1, strideW=1, depthMultiplier=2))
    op("TRANSPOSE_CONV", [i32(1, 12, 12, 3), rand(3, 3, 3, 4), x],
       opts(TransposeConvOptions, padding=SAME, strideH=2, strideW=2))
    (flat,) = op("RESHAPE", [x, i32(36, 4)], out=False)
    op("FULLY_CONNECTED", [flat, rand(5, 4), rand(5)], opts(FullyConnectedOptions, fusedActivationFunction=1))
    (cube,) = op("RESHAPE", [x, i32(6, 6, 4)], out=False)
    op("BATCH_MATMUL", [cube, rand(6, 4, 3)], opts(BatchMatMulOptions))
    for code in ("ADD", "SUB", "MUL"):
        op(code, [x, rand(1, 1, 1, 4)])
    op("DIV", [x, np.full((1, 1, 1, 4), 1.5, np.float32) + np.abs(rand(1, 1, 1, 4))])
    for code in ("RELU", "RELU6", "RELU_N1_TO_1", "LOGISTIC", "TANH", "HARD_SWISH"):
        op(code, [x])
    op("GELU", [x], opts(GeluOptions, approximate=True))
    op("LEAKY_RELU", [x], opts(LeakyReluOptions, alpha=0.2))
    op("PRELU", [x, rand(1, 1, 4)])
    op("MAX_POOL_2D", [x], opts(Pool2DOptions, padding=SAME, strideH=2, strideW=2, filterHeight=3, filterWidth=3))
    op("AVERAGE_POOL_2D", [x], opts(Pool2DOptions, padding=VALID, strideH=1, strideW=2, filterHeight=2,
                                    filterWidth=3))
    for code in ("MEAN", "SUM", "REDUCE_MAX"):
        op(code, [x, i32(1, 2)], opts(ReducerOptions, keepDims=code == "MEAN"))
    op("SOFTMAX", [x], opts(SoftmaxOptions, beta=0.7))
    op("LOG_SOFTMAX", [x])
    op("SQUEEZE", [x], opts(SqueezeOptions, squeezeDims=[0]))
    op("EXPAND_DIMS", [x, i32(2)])
    op("TRANSPOSE", [x, i32(0, 3, 1, 2)])
    op("CONCATENATION", [x, x], opts(ConcatenationOptions, axis=2))
    op("SPLIT", [i32(3), x], opts(SplitOptions, numSplits=2), outputs=2)
    op("SPLIT_V", [x, i32(1, 3, -1), i32(1)], opts(SplitVOptions, numSplits=3), outputs=3)
    op("PACK", [x, x], opts(PackOptions, valuesCount=2, axis=1))
    op("UNPACK", [x], opts(UnpackOptions, num=4, axis=3), outputs=4)
    op("PAD", [x, i32(0, 0, 1, 2, 0, 1, 0, 0).reshape(4, 2)])
    op("PADV2", [x, i32(0, 0, 1, 0, 2, 1, 0, 0).reshape(4, 2), np.array(0.5, np.float32)])
    op("MIRROR_PAD", [x, i32(0, 0, 2, 1, 1, 2, 0, 0).reshape(4, 2)], opts(MirrorPadOptions, mode=0))
    op("SLICE", [x, i32(0, 1, 2, 0), i32(1, 4, 3, 3)])
    op("STRIDED_SLICE", [x, i32(0, 5, 0, 0), i32(1, 0, 6, 4), i32(1, -2, 2, 1)],
       opts(StridedSliceOptions, endMask=0b0001))
    op("GATHER", [x, i32(5, 0, 3)], opts(GatherOptions, axis=2))
    op("ARG_MAX", [x, i32(3)], opts(ArgMaxOptions, outputType=TensorType.TensorType.INT32))
    op("RESIZE_BILINEAR", [x, i32(9, 12)], opts(ResizeBilinearOptions, halfPixelCenters=True))
    op("RESIZE_NEAREST_NEIGHBOR", [x, i32(3, 12)])
    op("CAST", [x], opts(CastOptions, inDataType=TensorType.TensorType.FLOAT32,
                         outDataType=TensorType.TensorType.INT32))
    (less,) = op("LESS", [x, rand(1, 1, 1, 4)], out=False)
    op("SELECT_V2", [less, x, np.zeros((1, 1, 1, 4), np.float32)])
    return m


@pytest.mark.parametrize("target", ["host", "arm64"])
def test_every_float_op_in_one_model(target):
    check(zoo(), target)
