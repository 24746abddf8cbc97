"""riscv64 code generation: RV64GC kernels use no vector instructions, riscv64-rvv kernels do,
both use the lp64d float ABI of riscv64-linux-gnu-gcc, and no kernel holds a vector float-to-int
conversion with a static rounding mode (vfcvt.rtz...: qemu 7.2, our emulator, aborts on it)."""
from __future__ import annotations

import re
import struct

import pytest

from iree_py.codegen.kernel_spec import Expr, ExprStep, KernelSpec
from iree_py.codegen.llvm import build_executable, emit_assembly
from iree_py.codegen.llvm import matmul
from iree_py.targets import load_target
from tests.codegen.conftest import f32

EF_RISCV_RVC, EF_RISCV_FLOAT_ABI_MASK, EF_RISCV_FLOAT_ABI_DOUBLE = 0x1, 0x6, 0x4
VECTOR_INSTRUCTION = re.compile(r"^\s+v[a-z0-9.]+\s", re.MULTILINE)  # vsetvli, vle32.v, vfmacc.vf, ...


def _specs() -> list[KernelSpec]:
    """Kernels whose loops vectorize: exp-based and trigonometric elementwise math, and a matmul."""
    def unary(name: str, op: str) -> KernelSpec:
        return KernelSpec(name, "elementwise", (f32(4, 100),), (f32(4, 100),),
                          {"expr": Expr((ExprStep(op, (("in", 0),)),))})
    return [unary("k_sigmoid", "Sigmoid"), unary("k_sin", "Sin"), unary("k_tanh", "Tanh"),
            KernelSpec("k_matmul", "matmul", (f32(13, 6), f32(6, 21)), (f32(13, 21),))]


def test_rv64gc_kernels_use_no_vector_instructions() -> None:
    asm = emit_assembly(_specs(), load_target("riscv64"))
    assert "fmadd.s" in asm or "fmul.s" in asm  # scalar float code is there
    assert VECTOR_INSTRUCTION.findall(asm) == []


def test_rvv_kernels_use_vector_instructions() -> None:
    asm = emit_assembly(_specs(), load_target("riscv64-rvv"))
    assert "vsetivli" in asm or "vsetvli" in asm
    assert re.search(r"\svfmacc\.v[vf]\s|\svfmadd\.v[vf]\s", asm), "the matmul should use vector multiply-adds"


@pytest.mark.parametrize("target_name", ["riscv64", "riscv64-rvv"])
def test_no_static_rounding_vector_conversions(target_name: str) -> None:
    asm = emit_assembly(_specs(), load_target(target_name))
    assert not re.search(r"\sv[a-z]*cvt\.(rtz|rod)\.", asm)


@pytest.mark.parametrize("target_name", ["riscv64", "riscv64-rvv"])
def test_elf_flags_match_the_linux_toolchain(target_name: str) -> None:
    """lp64d with compressed instructions, as riscv64-linux-gnu-gcc builds the runtime."""
    code = build_executable(_specs(), load_target(target_name)).code
    e_flags, = struct.unpack_from("<I", code, 48)
    assert e_flags & EF_RISCV_FLOAT_ABI_MASK == EF_RISCV_FLOAT_ABI_DOUBLE
    assert e_flags & EF_RISCV_RVC


def test_matmul_tiling_for_riscv64_targets() -> None:
    scalar = matmul.matmul_tiling(load_target("riscv64"))
    vector = matmul.matmul_tiling(load_target("riscv64-rvv"))
    assert scalar.lanes == 1 and vector.lanes == 4
