"""matmul kernels (iree_py/codegen/llvm/matmul.py) built for the host and run through jit.py,
compared with numpy in float64. Tolerance: 1e-5 of the output's largest magnitude."""
from __future__ import annotations

import numpy as np
import pytest
from llvmlite import ir

from iree_py.codegen.kernel_spec import EpilogueOp, KernelSpec
from iree_py.codegen.llvm import emit_assembly, matmul
from iree_py.codegen.llvm.jit import run_kernels
from iree_py.targets import load_target
from iree_py.ir.types import DType, TensorType
from tests.codegen.epilogue_reference import apply_epilogue

RTOL = 1e-5


def tensor(shape) -> TensorType:
    return TensorType(DType.f32, tuple(shape))


def assert_close(got, ref, what, rtol=RTOL):
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    assert np.all(np.isfinite(got)), f"{what}: non-finite values (unwritten outputs?)"
    scale = max(float(np.abs(ref).max()), 1e-30)
    err = float(np.abs(got.astype(np.float64) - ref).max()) / scale
    assert err <= rtol, f"{what}: max error {err:.3g} of max |y| {scale:.3g} > {rtol}"


def make_case(name, a_shape, b_shape, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
    spec = KernelSpec(name, "matmul", (tensor(a.shape), tensor(b.shape)), (tensor(ref.shape),))
    return spec, [a, b], ref


SIZES = (1, 3, 17, 64, 100)
# Every M and N edge size against a K from the same set (rotated so K varies too).
SHAPE_CASES = {f"m{m}_k{SIZES[(i + j) % 5]}_n{n}": ((m, SIZES[(i + j) % 5]), (SIZES[(i + j) % 5], n))
               for i, m in enumerate(SIZES) for j, n in enumerate(SIZES)}
SHAPE_CASES.update({
    "batch_2x3_by_matrix": ((2, 3, 17, 5), (5, 19)),
    "batch_1_by_4": ((1, 7, 6), (4, 6, 33)),
    "batch_broadcast_both": ((3, 1, 5, 8), (1, 2, 8, 9)),
    "vector_by_matrix": ((7,), (7, 20)),
    "matrix_by_vector": ((9, 7), (7,)),
    "row_block_tail": ((130, 12), (12, 70)),
})


def test_matmul_shapes_against_numpy():
    """All shapes in one library (one build), each checked on its own."""
    cases = [make_case(f"mm_{name}", a, b, seed=i) for i, (name, (a, b)) in enumerate(SHAPE_CASES.items())]
    got = run_kernels([c[0] for c in cases], [c[1] for c in cases])
    for (spec, _, ref), (y,) in zip(cases, got):
        assert_close(y, ref, spec.name)


# [2, 13, 6] @ [6, 21]: row tail (13 = 2 * 6 + 1), column tail (21 = 16 + 5 with 8 lanes).
A_EPI, B_EPI, OUT_EPI = (2, 13, 6), (6, 21), (2, 13, 21)
EPILOGUES = {
    "relu": ((EpilogueOp("Relu"),), ()),
    "leaky_relu": ((EpilogueOp("LeakyRelu", (("alpha", 0.2),)),), ()),
    "sigmoid": ((EpilogueOp("Sigmoid"),), ()),
    "tanh": ((EpilogueOp("Tanh"),), ()),
    "clip": ((EpilogueOp("Clip", (("min", -1.0), ("max", 0.5))),), ()),
    "neg_exp": ((EpilogueOp("Neg"), EpilogueOp("Exp")), ()),
    "abs_sqrt": ((EpilogueOp("Abs"), EpilogueOp("Sqrt")), ()),
    "add_scalar": ((EpilogueOp("Add", operand=2, operand_kind="scalar"),), ((1,),)),
    "div_scalar": ((EpilogueOp("Div", operand=2, operand_kind="scalar"),), ((),)),
    "add_channel_bias": ((EpilogueOp("Add", operand=2, operand_kind="channel"),), ((21,),)),
    "sub_channel_first": ((EpilogueOp("Sub", operand=2, operand_kind="channel", operand_first=True),),
                          ((1, 21),)),
    "mul_full": ((EpilogueOp("Mul", operand=2, operand_kind="full"),), (OUT_EPI,)),
    "sub_full_first_tanh": ((EpilogueOp("Sub", operand=2, operand_kind="full", operand_first=True),
                             EpilogueOp("Tanh")), (OUT_EPI,)),
    "bias_then_residual": ((EpilogueOp("Add", operand=3, operand_kind="channel"),
                            EpilogueOp("Add", operand=2, operand_kind="full"),
                            EpilogueOp("Relu")), (OUT_EPI, (21,))),
}


def test_matmul_epilogues_against_numpy():
    specs, inputs, refs = [], [], []
    for i, (name, (ops, operand_shapes)) in enumerate(EPILOGUES.items()):
        base, args, ref = make_case(f"mm_epi_{name}", A_EPI, B_EPI, seed=i)
        rng = np.random.default_rng(200 + i)
        operands = [(rng.uniform(0.5, 1.5, s) * rng.choice([-1, 1], s)).astype(np.float32)
                    for s in operand_shapes]
        all_inputs = args + operands
        specs.append(KernelSpec(base.name, "matmul", tuple(tensor(np.shape(a)) for a in all_inputs),
                                base.outputs, epilogue=ops))
        inputs.append(all_inputs)
        refs.append(apply_epilogue(ops, ref, all_inputs, (-1,)))  # channel = the last axis, N
    got = run_kernels(specs, inputs)
    for spec, ref, (y,) in zip(specs, refs, got):
        assert_close(y, ref, spec.name)


def test_matmul_grid_and_binding_lengths():
    spec, (a, b), _ = make_case("mm_info", (3, 100, 64), (64, 200))
    info = matmul.build(spec, ir.Module(), load_target("x86_64"))
    gx, gy, gz = info.workgroup_count
    assert gz == 3 and gx >= 2 and gy >= 2, info.workgroup_count
    assert info.binding_min_lengths == (a.nbytes, b.nbytes, 3 * 100 * 200 * 4)
    assert info.push_constants == ()


def test_matmul_rejects_mismatched_inner_dims():
    bad = KernelSpec("mm_bad", "matmul", (tensor((4, 5)), tensor((6, 7))), (tensor((4, 7)),))
    with pytest.raises(ValueError, match="inner dims 5 != 6"):
        matmul.build(bad, ir.Module(), load_target("x86_64"))


def test_matmul_for_arm64_target_emits_valid_ir():
    """The 128-bit target changes tile widths; the IR must still verify and compile."""
    spec, _, _ = make_case("mm_arm", (2, 13, 6), (6, 21))
    asm = emit_assembly([spec], load_target("arm64"))
    assert "fmla" in asm


def test_matmul_tiling_follows_target_registers():
    """16 registers → 6 rows × 2 vectors; 32 registers (NEON) → 9 rows × 3 vectors of 4 lanes."""
    x86 = matmul.matmul_tiling(load_target("x86_64"))
    assert (x86.rows, x86.vectors, x86.lanes) == (6, 2, 8)
    arm = matmul.matmul_tiling(load_target("arm64"))
    assert (arm.rows, arm.vectors, arm.lanes) == (9, 3, 4)
    # accumulators + B vectors + one broadcast fit the register file
    assert arm.rows * arm.vectors + arm.vectors + 1 <= 32


def test_host_vector_shape_from_cpu_features():
    from iree_py.targets import vector_shape_from_features
    assert vector_shape_from_features({"avx", "avx2", "avx512f"}, "x86_64") == (512, 32)
    assert vector_shape_from_features({"avx", "avx2"}, "x86_64") == (256, 16)
    assert vector_shape_from_features({"sse4.2"}, "x86_64") == (128, 16)
    assert vector_shape_from_features({"neon"}, "aarch64") == (128, 32)
    host = load_target("host")
    assert host.vector_bits in (128, 256, 512) and host.vector_registers in (16, 32)
