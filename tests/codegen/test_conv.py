"""conv2d kernels (iree_py/codegen/llvm/conv.py) built for the host and run through jit.py,
compared with a plain numpy reference. Tolerance: 1e-5 of the output's largest magnitude."""
from __future__ import annotations

import numpy as np
import pytest
from llvmlite import ir

from iree_py.codegen.kernel_spec import EpilogueOp, KernelSpec
from iree_py.codegen.llvm import conv, emit_assembly
from iree_py.codegen.llvm.jit import run_kernels
from iree_py.targets import load_target
from iree_py.codegen.llvm.weight_packing import M_BLOCKED, pack_m_blocked, unpack_m_blocked
from iree_py.ir.types import DType, TensorType
from tests.codegen.epilogue_reference import apply_epilogue

RTOL = 1e-5


def tensor(shape) -> TensorType:
    return TensorType(DType.f32, tuple(shape))


def conv_reference(x, w, b, strides, pads, dilations, group):
    """Y = conv(X, W) + B in float64, written as the definition (loop over kernel taps)."""
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    sh, sw = strides
    pt, pl, pb, pr = pads
    dh, dw = dilations
    xp = np.zeros((n, c, h + pt + pb, wd + pl + pr))
    xp[:, :, pt:pt + h, pl:pl + wd] = x
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * mg:(g + 1) * mg].astype(np.float64)
        for ky in range(kh):
            for kx in range(kw):
                patch = xs[:, :, ky * dh:ky * dh + sh * (oh - 1) + 1:sh, kx * dw:kx * dw + sw * (ow - 1) + 1:sw]
                y[:, g * mg:(g + 1) * mg] += np.einsum("ncij,mc->nmij", patch, ws[:, :, ky, kx])
    if b is not None:
        y += b.reshape(1, m, 1, 1)
    return y


def out_size(size, k, stride, pad0, pad1, dilation):
    return (size + pad0 + pad1 - dilation * (k - 1) - 1) // stride + 1


def make_case(name, n, c, h, w, m, kh, kw, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1),
              group=1, bias=True, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((m, c // group, kh, kw)).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32) if bias else None
    oh = out_size(h, kh, strides[0], pads[0], pads[2], dilations[0])
    ow = out_size(w, kw, strides[1], pads[1], pads[3], dilations[1])
    inputs = [x, wt] + ([b] if bias else [])
    spec = KernelSpec(name, "conv2d", tuple(tensor(a.shape) for a in inputs), (tensor((n, m, oh, ow)),),
                      attrs={"strides": strides, "pads": pads, "dilations": dilations, "group": group})
    ref = conv_reference(x, wt, b, strides, pads, dilations, group)
    return spec, inputs, ref


def assert_close(got, ref, what, rtol=RTOL):
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    assert np.all(np.isfinite(got)), f"{what}: non-finite values (unwritten outputs?)"
    scale = max(float(np.abs(ref).max()), 1e-30)
    err = float(np.abs(got.astype(np.float64) - ref).max()) / scale
    assert err <= rtol, f"{what}: max error {err:.3g} of max |y| {scale:.3g} > {rtol}"


# (n, c, h, w, m, kh, kw, strides, pads (t, l, b, r), dilations, group)
SHAPES = {
    "3x3_pad1": (1, 8, 13, 13, 16, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "3x3_odd_channels": (2, 3, 7, 5, 5, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "1x1": (1, 16, 7, 7, 10, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "1x1_group2_odd_pixels": (2, 8, 9, 11, 6, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 2),
    "1x1_many_channels": (1, 40, 5, 7, 37, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "1x1_pad1_not_pointwise": (1, 5, 6, 6, 7, 1, 1, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "depthwise_wide_many": (2, 40, 9, 70, 40, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 40),
    "1x1_stride2": (1, 6, 13, 13, 7, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1), 1),
    "5x5_pad2": (1, 4, 13, 13, 6, 5, 5, (1, 1), (2, 2, 2, 2), (1, 1), 1),
    "1x7": (1, 5, 7, 13, 9, 1, 7, (1, 1), (0, 3, 0, 3), (1, 1), 1),
    "7x1": (1, 5, 13, 7, 9, 7, 1, (1, 1), (3, 0, 3, 0), (1, 1), 1),
    "3x3_stride2": (1, 4, 13, 13, 8, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1),
    "3x3_stride3_asym": (2, 3, 13, 11, 5, 3, 3, (3, 3), (0, 2, 1, 0), (1, 1), 1),
    "7x7_stride2_wide": (1, 3, 40, 40, 8, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1),
    "asym_pads": (1, 4, 9, 11, 6, 3, 3, (1, 1), (2, 0, 0, 1), (1, 1), 1),
    "dilation2": (1, 4, 13, 13, 6, 3, 3, (1, 1), (2, 2, 2, 2), (2, 2), 1),
    "group2": (2, 8, 7, 13, 6, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 2),
    "depthwise": (1, 12, 13, 13, 12, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 12),
    "depthwise_stride2": (1, 8, 13, 13, 8, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 8),
    "tiny_1x1_image": (1, 3, 1, 1, 4, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "tiny_pad_only": (1, 2, 1, 1, 3, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "kernel_wider_than_image": (1, 2, 5, 5, 3, 5, 5, (1, 1), (3, 3, 3, 3), (1, 1), 1),
    "wide_row_tiles": (1, 4, 6, 70, 9, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
}


def test_conv_shapes_against_numpy():
    """All shapes in one library (one build), each checked on its own."""
    cases = [make_case(f"conv_{name}", *dims[:7], strides=dims[7], pads=dims[8], dilations=dims[9],
                       group=dims[10], bias=(i % 3 != 2), seed=i)
             for i, (name, dims) in enumerate(SHAPES.items())]
    got = run_kernels([c[0] for c in cases], [c[1] for c in cases])
    for (spec, _, ref), (y,) in zip(cases, got):
        assert_close(y, ref, spec.name)


# name -> (epilogue ops, operand shapes by kind: inputs appended after X, W, B in this order)
M_EPI = 5
OUT_EPI = (2, M_EPI, 7, 13)
EPILOGUES = {
    "relu": ((EpilogueOp("Relu"),), ()),
    "leaky_relu": ((EpilogueOp("LeakyRelu", (("alpha", 0.1),)),), ()),
    "sigmoid": ((EpilogueOp("Sigmoid"),), ()),
    "tanh": ((EpilogueOp("Tanh"),), ()),
    "clip": ((EpilogueOp("Clip", (("min", -0.5), ("max", 0.7))),), ()),
    "neg_exp": ((EpilogueOp("Neg"), EpilogueOp("Exp")), ()),
    "abs_sqrt": ((EpilogueOp("Abs"), EpilogueOp("Sqrt")), ()),
    "add_scalar": ((EpilogueOp("Add", operand=3, operand_kind="scalar"),), ((1,),)),
    "sub_scalar_first": ((EpilogueOp("Sub", operand=3, operand_kind="scalar", operand_first=True),), ((),)),
    "mul_channel": ((EpilogueOp("Mul", operand=3, operand_kind="channel"),), ((M_EPI,),)),
    "sub_channel_first": ((EpilogueOp("Sub", operand=3, operand_kind="channel", operand_first=True),),
                          ((1, M_EPI, 1, 1),)),
    "add_full_relu": ((EpilogueOp("Add", operand=3, operand_kind="full"), EpilogueOp("Relu")), (OUT_EPI,)),
    "div_full": ((EpilogueOp("Div", operand=3, operand_kind="full"),), (OUT_EPI,)),
    "mul_full_first": ((EpilogueOp("Mul", operand=3, operand_kind="full", operand_first=True),), (OUT_EPI,)),
    "chain_two_operands": ((EpilogueOp("Mul", operand=4, operand_kind="channel"),
                            EpilogueOp("Add", operand=3, operand_kind="full"),
                            EpilogueOp("Sigmoid")), (OUT_EPI, (M_EPI,))),
}


def epilogue_operands(rng: np.random.Generator, shapes) -> list[np.ndarray]:
    """Random operands of the given shapes, kept away from zero so Div references are well conditioned."""
    return [(rng.uniform(0.5, 1.5, s) * rng.choice([-1, 1], s)).astype(np.float32) for s in shapes]


def with_epilogue(base: KernelSpec, all_inputs: list[np.ndarray], ops) -> KernelSpec:
    return KernelSpec(base.name, "conv2d", tuple(tensor(np.shape(a)) for a in all_inputs), base.outputs,
                      attrs=base.attrs, epilogue=ops)


def check_all(specs: list[KernelSpec], inputs: list[list[np.ndarray]], refs: list[np.ndarray]) -> None:
    """All specs in one library (one build), each output checked against its reference."""
    for spec, ref, (y,) in zip(specs, refs, run_kernels(specs, inputs)):
        assert_close(y, ref, spec.name)


def test_conv_epilogues_against_numpy():
    """Every unary op and every operand kind / order, on a conv with border and tail columns
    (3x3 pad 1 over 7x13, 5 output channels: one full channel tile and a tail, N = 2)."""
    specs, inputs, refs = [], [], []
    for i, (name, (ops, operand_shapes)) in enumerate(EPILOGUES.items()):
        base, args, ref = make_case(f"conv_epi_{name}", 2, 3, 7, 13, M_EPI, 3, 3, pads=(1, 1, 1, 1), seed=i)
        all_inputs = args + epilogue_operands(np.random.default_rng(100 + i), operand_shapes)
        specs.append(with_epilogue(base, all_inputs, ops))
        inputs.append(all_inputs)
        refs.append(apply_epilogue(ops, ref, all_inputs, (1, M_EPI, 1, 1)))
    check_all(specs, inputs, refs)


def test_conv_without_bias_reads_input_2_as_epilogue_operand():
    """Input 2 referenced by the epilogue is an operand, not a bias."""
    base, (x, w), ref = make_case("conv_operand2", 1, 4, 9, 9, 6, 3, 3, pads=(1, 1, 1, 1), bias=False)
    channel = np.arange(1, 7, dtype=np.float32)
    ops = (EpilogueOp("Mul", operand=2, operand_kind="channel"),)
    spec = KernelSpec(base.name, "conv2d", base.inputs + (tensor((6,)),), base.outputs,
                      attrs=base.attrs, epilogue=ops)
    (y,), = run_kernels([spec], [[x, w, channel]])
    assert_close(y, ref * channel.reshape(1, 6, 1, 1), spec.name)


def test_conv_grid_and_binding_lengths():
    spec, inputs, _ = make_case("conv_info", 2, 8, 56, 56, 64, 3, 3, pads=(1, 1, 1, 1))
    info = conv.build(spec, ir.Module(), load_target("x86_64"))
    gx, gy, gz = info.workgroup_count
    assert gz == 2 and gy >= 2 and gx >= 2, info.workgroup_count
    assert info.binding_min_lengths == tuple(a.nbytes for a in inputs) + (2 * 64 * 56 * 56 * 4,)
    assert info.push_constants == ()


def test_conv_rejects_wrong_output_shape():
    spec, _, _ = make_case("conv_bad", 1, 2, 5, 5, 3, 3, 3)
    bad = KernelSpec(spec.name, "conv2d", spec.inputs, (tensor((1, 3, 5, 5)),), attrs=spec.attrs)
    with pytest.raises(ValueError, match="output is"):
        conv.build(bad, ir.Module(), load_target("x86_64"))


def test_conv_for_arm64_target_compiles():
    """128-bit vectors change the tile widths; strided and tail loads must still lower (NEON)."""
    specs = [make_case("conv_arm_s1", 1, 3, 13, 13, 6, 3, 3, pads=(1, 1, 1, 1))[0],
             make_case("conv_arm_s2", 1, 3, 13, 13, 6, 3, 3, strides=(2, 2), pads=(1, 1, 1, 1))[0]]
    asm = emit_assembly(specs, load_target("arm64"))
    assert "fmla" in asm


def test_conv_tiling_follows_target_registers():
    """Tiles come from the target's fields: 16 registers → 4 channels, 32 → 8."""
    assert conv.conv_tiling(load_target("x86_64")).channels == 4
    assert conv.conv_tiling(load_target("arm64")).channels == 8
    assert conv.conv_tiling(load_target("arm64")).lanes == 4


def test_pointwise_conv_is_one_row_of_pixels():
    spec, _, _ = make_case("conv_pw", 1, 16, 7, 9, 10, 1, 1)
    flat = conv.pointwise_as_one_row(conv.conv_shape(spec))
    assert (flat.h, flat.w, flat.oh, flat.ow) == (1, 63, 1, 63)
    padded, _, _ = make_case("conv_pw_pad", 1, 16, 7, 9, 10, 1, 1, pads=(1, 1, 1, 1))
    shape = conv.conv_shape(padded)
    assert conv.pointwise_as_one_row(shape) is shape


# ---------------------------------------------------------------------------------------------
# The channel-vector path (conv_channels.py): weights packed m_blocked, vectors along M.


def packed_case(spec: KernelSpec, inputs: list, lanes: int) -> tuple[KernelSpec, list]:
    """`spec` and its inputs with the weight (input 1) packed m_blocked with V = `lanes`."""
    weight = pack_m_blocked(inputs[1], int(spec.attrs.get("group", 1)), lanes)
    packed_inputs = [inputs[0], weight, *inputs[2:]]
    attrs = {**spec.attrs, "weight_layout": M_BLOCKED, "weight_lanes": lanes}
    return (KernelSpec(spec.name, "conv2d", tuple(tensor(np.shape(a)) for a in packed_inputs), spec.outputs,
                       attrs=attrs, epilogue=spec.epilogue), packed_inputs)


def test_pack_m_blocked_layout_and_round_trip():
    rng = np.random.default_rng(7)
    w = rng.standard_normal((2 * 21, 3, 2, 5)).astype(np.float32)   # group 2: 21 channels each
    packed = pack_m_blocked(w, 2, 8)
    assert packed.shape == (2 * 3, 2, 5, 3, 8)
    # group 1, block 2, lane 4 is channel 21 + 2 * 8 + 4; tap (1, 3), input channel 2
    assert packed[3 + 2, 1, 3, 2, 4] == w[21 + 20, 2, 1, 3]
    assert np.all(packed[3 + 2, :, :, :, 5:] == 0), "padding lanes past the group's 21 channels are zero"
    np.testing.assert_array_equal(unpack_m_blocked(packed, 42, 2), w)


# (n, c, h, w, m, kh, kw, strides, pads (t, l, b, r), dilations, group): OW from 1 to 14
CHANNEL_SHAPES = {
    "7x7_pad1": (1, 8, 7, 7, 40, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "14x14_stride2": (2, 6, 28, 28, 37, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1),
    "14x14_pad1": (1, 5, 14, 14, 16, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "ow1_pad_only": (1, 4, 1, 1, 19, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "ow2": (1, 7, 3, 2, 33, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "ow3_stride2": (1, 4, 7, 7, 17, 3, 3, (2, 2), (0, 0, 1, 1), (1, 1), 1),
    "13x13_1x1": (1, 9, 13, 13, 50, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "1x1_stride2": (1, 9, 14, 14, 20, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1), 1),
    "5x5_pad2_ow9": (1, 3, 9, 9, 24, 5, 5, (1, 1), (2, 2, 2, 2), (1, 1), 1),
    "dilation2": (1, 4, 11, 11, 18, 3, 3, (1, 1), (2, 2, 2, 2), (2, 2), 1),
    "asym_pads": (1, 4, 9, 11, 21, 3, 3, (1, 1), (2, 0, 0, 1), (1, 1), 1),
    "group2": (2, 8, 7, 9, 42, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 2),
    "group3_stride2": (1, 12, 9, 9, 51, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 3),
    "kernel_wider_than_image": (1, 2, 4, 4, 17, 5, 5, (1, 1), (3, 3, 3, 3), (1, 1), 1),
    "tall_interior_6x4": (1, 6, 12, 4, 16, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "7x7_s2_first_layer": (1, 3, 23, 23, 20, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1),
    "7x7_s2_one_channel": (2, 1, 17, 19, 9, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1),
}


@pytest.mark.parametrize("lanes", [16, 4])
def test_conv_channel_vectors_against_numpy(lanes):
    """All shapes in one library, each checked on its own; V = 16 (AVX-512 width) and V = 4 make
    different full/partial channel vectors, tiles and tails."""
    cases = []
    for i, (name, dims) in enumerate(CHANNEL_SHAPES.items()):
        spec, inputs, ref = make_case(f"convch{lanes}_{name}", *dims[:7], strides=dims[7], pads=dims[8],
                                      dilations=dims[9], group=dims[10], bias=(i % 3 != 2), seed=50 + i)
        cases.append((*packed_case(spec, inputs, lanes), ref))
    got = run_kernels([c[0] for c in cases], [c[1] for c in cases])
    for (spec, _, ref), (y,) in zip(cases, got):
        assert_close(y, ref, spec.name)


def _resized_operand(shape: tuple, m: int, out: tuple) -> tuple:
    """An EPILOGUES operand shape moved to a conv with `m` channels and output `out`."""
    if shape == OUT_EPI:
        return out
    return tuple(m if d == M_EPI else d for d in shape)


def test_conv_channel_vectors_epilogues_against_numpy():
    """Every EPILOGUES entry on the channel path: 21 channels (one full vector and a partial one
    of 5 lanes with V = 16), border and interior pixels, N = 2."""
    m = 21
    specs, inputs, refs = [], [], []
    for i, (name, (ops, operand_shapes)) in enumerate(EPILOGUES.items()):
        base, args, ref = make_case(f"convch_epi_{name}", 2, 3, 7, 6, m, 3, 3, pads=(1, 1, 1, 1), seed=i)
        out = tuple(base.outputs[0].shape)
        shapes = [_resized_operand(tuple(s), m, out) for s in operand_shapes]
        all_inputs = args + epilogue_operands(np.random.default_rng(200 + i), shapes)
        spec, packed_inputs = packed_case(with_epilogue(base, all_inputs, ops), all_inputs, 16)
        specs.append(spec)
        inputs.append(packed_inputs)
        refs.append(apply_epilogue(ops, ref, all_inputs, (1, m, 1, 1)))
    check_all(specs, inputs, refs)


def test_conv_channel_vectors_grid_splits_work():
    spec, inputs, _ = make_case("convch_info", 2, 64, 7, 7, 512, 3, 3, pads=(1, 1, 1, 1))
    spec, packed_inputs = packed_case(spec, inputs, 16)
    info = conv.build(spec, ir.Module(), load_target("host"))
    gx, gy, gz = info.workgroup_count
    assert gz == 2 and gx * gy >= 8, info.workgroup_count
    assert info.binding_min_lengths == tuple(a.nbytes for a in packed_inputs) + (2 * 512 * 7 * 7 * 4,)


def test_conv_channel_vectors_rejects_wrong_packed_shape():
    spec, inputs, _ = make_case("convch_bad", 1, 4, 7, 7, 20, 3, 3, pads=(1, 1, 1, 1))
    spec, _ = packed_case(spec, inputs, 16)
    bad = KernelSpec(spec.name, "conv2d", (spec.inputs[0], tensor((1, 3, 3, 4, 16)), *spec.inputs[2:]),
                     spec.outputs, attrs=spec.attrs)
    with pytest.raises(ValueError, match="packed weight is"):
        conv.build(bad, ir.Module(), load_target("x86_64"))


def test_conv_channel_vectors_for_arm64_compiles():
    spec, inputs, _ = make_case("convch_arm", 1, 8, 7, 7, 10, 3, 3, pads=(1, 1, 1, 1))
    asm = emit_assembly([packed_case(spec, inputs, 4)[0]], load_target("arm64"))
    assert "fmla" in asm


def test_choose_conv_strategy():
    """Channels with a vector of output channels and a few input channels per group, at any row
    length; columns otherwise."""
    def strategy(dims, target="x86_64"):
        spec, _, _ = make_case("convch_rule", *dims[:7], strides=dims[7], pads=dims[8], group=dims[9])
        return conv.choose_conv_strategy(conv.conv_shape(spec), load_target(target))

    late_3x3 = (1, 32, 7, 7, 64, 3, 3, (1, 1), (1, 1, 1, 1), 1)
    assert strategy(late_3x3) == conv.ConvStrategy("channels", 8)
    assert strategy(late_3x3, "arm64") == conv.ConvStrategy("channels", 4)
    assert strategy((1, 8, 20, 20, 16, 3, 3, (1, 1), (1, 1, 1, 1), 1)).path == "channels"  # long rows too
    assert strategy((1, 3, 20, 20, 16, 3, 3, (1, 1), (1, 1, 1, 1), 1)).path == "columns"   # 3 input channels
    assert strategy((1, 3, 32, 32, 16, 7, 7, (2, 2), (3, 3, 3, 3), 1)).path == "channels"  # ... but 7x7 taps
    assert strategy((1, 1, 32, 32, 16, 7, 7, (2, 2), (3, 3, 3, 3), 1)).path == "channels"  # even from 1 channel
    assert strategy((1, 1, 32, 32, 16, 5, 5, (1, 1), (2, 2, 2, 2), 1)).path == "columns"   # 25 taps
    assert strategy((1, 32, 7, 7, 4, 3, 3, (1, 1), (1, 1, 1, 1), 1)).path == "columns"     # M < a vector
    assert strategy((1, 32, 7, 7, 32, 3, 3, (1, 1), (1, 1, 1, 1), 32)).path == "columns"   # depthwise
    assert strategy((1, 32, 7, 7, 64, 1, 1, (1, 1), (0, 0, 0, 0), 1)).path == "channels"   # one row of 49
