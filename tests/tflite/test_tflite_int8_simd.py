"""The int8 SIMD conv kernels (qconv_dot: packed weights and dot products; qdwconv: depthwise,
a plane at a time) against TFLite's reference kernels (BUILTIN_REF), bit-exact, on shapes that hit
their edges: channel counts not a multiple of 4, reductions not a multiple of 16, padding, strides,
dilation, several column tiles. Plus the compile-time weight packing against numpy."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from tflite_quant_harness import check, qbias, qinput, qtensor, qweights
from tflite_writer import TfliteModel

import iree_py.codegen.llvm.kernel_plan as plan_module
from iree_py.codegen.llvm.qconv_packing import DOT_BYTES, DOT_CHANNELS, pack_dot_weight, weight_sums
from iree_py.frontends.tflite.schema import Conv2DOptions, DepthwiseConv2DOptions

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from int8_vs_fp32 import block_input, build_block  # noqa: E402

SAME, VALID = 0, 1
RELU6 = 3


def options(module, **fields):
    opts = getattr(module, module.__name__.rsplit(".", 1)[1] + "T")()
    for name, value in fields.items():
        setattr(opts, name, value)
    return opts


def conv_model(in_shape, out_channels, kernel, stride, dilation, padding, x_zp, seed) -> TfliteModel:
    rng = np.random.default_rng(seed)
    m = TfliteModel()
    x = qinput(m, "x", in_shape, 0.05, x_zp)
    scales = list(rng.uniform(0.002, 0.01, out_channels))
    y = qtensor(m, "y", 0.3, 7)
    m.op("CONV_2D", [x, qweights(m, "w", rng, (out_channels, *kernel, in_shape[3]), scales, 0),
                     qbias(m, "b", rng, out_channels, 0.05, scales)], [y],
         options(Conv2DOptions, padding=padding, strideH=stride[0], strideW=stride[1], dilationHFactor=dilation[0],
                 dilationWFactor=dilation[1], fusedActivationFunction=RELU6 if seed % 2 else 0))
    m.output(y)
    return m


def depthwise_model(in_shape, multiplier, kernel, stride, padding, seed) -> TfliteModel:
    rng = np.random.default_rng(seed)
    m = TfliteModel()
    x = qinput(m, "x", in_shape, 0.05, -9)
    channels = in_shape[3] * multiplier
    scales = list(rng.uniform(0.005, 0.02, channels))
    y = qtensor(m, "y", 0.1, -4)
    m.op("DEPTHWISE_CONV_2D", [x, qweights(m, "w", rng, (1, *kernel, channels), scales, 3),
                               qbias(m, "b", rng, channels, 0.05, scales)], [y],
         options(DepthwiseConv2DOptions, padding=padding, strideH=stride[0], strideW=stride[1],
                 depthMultiplier=multiplier))
    m.output(y)
    return m


CONV_CASES = [  # input NHWC, out channels, kernel, stride, dilation, padding, x zero point
    ((1, 9, 10, 3), 5, (3, 3), (1, 1), (1, 1), SAME, -3),       # K = 27, M = 5: both padded
    ((2, 8, 7, 16), 8, (3, 3), (2, 2), (1, 1), SAME, 11),       # batch 2, stride 2, odd width
    ((1, 6, 6, 64), 12, (1, 1), (1, 1), (1, 1), VALID, -128),   # pointwise, K = 64 exactly
    ((1, 9, 9, 7), 6, (3, 2), (1, 2), (2, 1), VALID, 0),        # dilated, non-square kernel
    ((1, 3, 130, 64), 4, (3, 3), (1, 1), (1, 1), SAME, 5),      # K = 576: several column tiles
    ((1, 5, 5, 130), 3, (2, 2), (1, 1), (1, 1), SAME, 127),     # K = 520: a 16-byte tail step
]


@pytest.mark.parametrize("case", CONV_CASES, ids=[f"conv{i}" for i in range(len(CONV_CASES))])
def test_conv_dot_kernel(case):
    in_shape, m, kernel, stride, dilation, padding, x_zp = case
    check(conv_model(in_shape, m, kernel, stride, dilation, padding, x_zp, seed=len(in_shape) + m))


DEPTHWISE_CASES = [  # input NHWC, multiplier, kernel, stride, padding
    ((1, 9, 11, 6), 1, (3, 3), (1, 1), SAME),
    ((2, 10, 9, 5), 1, (5, 5), (2, 2), SAME),
    ((1, 7, 8, 4), 1, (3, 2), (2, 1), VALID),
    ((1, 7, 7, 3), 2, (3, 3), (1, 1), SAME),     # multiplier 2: the generic qconv kernel
]


@pytest.mark.parametrize("case", DEPTHWISE_CASES, ids=[f"dw{i}" for i in range(len(DEPTHWISE_CASES))])
def test_depthwise_kernel(case):
    in_shape, multiplier, kernel, stride, padding = case
    check(depthwise_model(in_shape, multiplier, kernel, stride, padding, seed=multiplier + in_shape[3]))


def test_conv_extreme_values():
    """Every input at -128 and weights at +-127 with the largest zero point: the int32 sums and the
    x_zp * sum(W) correction at their extremes."""
    m = conv_model((1, 5, 5, 96), 4, (3, 3), (1, 1), (1, 1), SAME, 127, seed=3)
    weight = next(t for t in m.tensors if t.name == "w")
    m.buffers[weight.buffer] = np.where(np.arange(4 * 9 * 96) % 3, 127, -127).astype(np.int8).tobytes()
    check(m)


def test_pack_dot_weight_and_correction():
    """W'[m, (kh*KW + kw)*C + c] = W[m, c, kh, kw], zero padded; the correction is x_zp * sum(W[m])
    with sum(W[m]) wrapped to int32 (the kernel's int32 multiply wraps the product the same way)."""
    w = np.random.default_rng(0).integers(-128, 128, (5, 7, 3, 2)).astype(np.int8)
    packed = pack_dot_weight(w)
    assert packed.shape == (8, 48) and packed.dtype == np.int8
    assert packed.shape[0] % DOT_CHANNELS == 0 and packed.shape[1] % DOT_BYTES == 0
    np.testing.assert_array_equal(packed[:5, :42], w.transpose(0, 2, 3, 1).reshape(5, 42))
    assert not packed[5:].any() and not packed[:, 42:].any()
    assert weight_sums(w) == [int(v) for v in w.reshape(5, -1).astype(np.int64).sum(axis=1)]
    huge = np.full((1, 4096, 128, 128), 127, np.int8)   # 127 * 2**26 overflows int32
    assert weight_sums(huge) == [int(np.int64(127 << 26).astype(np.int32))]


def test_benchmark_block_uses_simd_kernels_and_matches():
    """The benchmark's MobileNet-like block: its convs get the SIMD kernels on the host, and the
    int8 model stays bit-exact with the reference kernels."""
    kinds = []
    choose = plan_module.choose_qconv_kernel

    def spy(dispatch, target):
        chosen = choose(dispatch, target)
        kinds.append(chosen.spec.kind)
        return chosen
    plan_module.choose_qconv_kernel = spy
    try:
        from tflite_quant_harness import assert_equal, run_interpreter

        import iree_py
        data = build_block(16, int8=True)
        x = block_input(16, int8=True)
        got = iree_py.load(iree_py.compile(data, target="host")).main.call(x)
    finally:
        plan_module.choose_qconv_kernel = choose
    assert kinds == ["qconv_dot", "qdwconv", "qconv_dot"]
    assert_equal(got, run_interpreter(data, [x]), "host")


def test_benchmark_block_on_arm64():
    """sdot under qemu-aarch64 (cortex-a55 has dotprod), bit-exact with the reference kernels."""
    from tflite_quant_harness import assert_equal, run_interpreter

    import iree_py
    data = build_block(16, int8=True)
    x = block_input(16, int8=True)
    got = iree_py.load(iree_py.compile(data, target="arm64"), device="qemu").main.call(x)
    assert_equal(got, run_interpreter(data, [x]), "arm64")


@pytest.mark.parametrize("case", [CONV_CASES[0], CONV_CASES[5]], ids=["conv0", "conv5"])
def test_conv_dot_kernel_without_vnni(case):
    """The "x86_64" target (Haswell: AVX2, no VNNI) takes the exact vpmaddwd dot product of bytes
    widened to i16 (qconv_packing.dot_instruction); its module runs on this machine."""
    from tflite_harness import complete_shapes
    from tflite_quant_harness import assert_equal, random_inputs, run_interpreter

    import iree_py
    in_shape, m, kernel, stride, dilation, padding, x_zp = case
    model = conv_model(in_shape, m, kernel, stride, dilation, padding, x_zp, seed=4)
    data = complete_shapes(model)
    inputs = random_inputs(model)
    got = iree_py.load(iree_py.compile(data, target="x86_64")).main.call(*inputs)
    assert_equal(got, run_interpreter(data, inputs), "x86_64")
