"""build_executable: ELF shape per target, the library export, no imports, clear errors, and the
text emitters."""
from __future__ import annotations

import ctypes
import re
import struct

import pytest

from iree_py.codegen.kernel_abi import KERNEL_ABI_VERSION
from iree_py.codegen.kernel_spec import Expr, ExprStep, KernelSpec
from iree_py.codegen.llvm import build_executable, emit_assembly, emit_llvm_ir
from iree_py.codegen.llvm.jit import LoadedLibrary
from iree_py.codegen.llvm.module_builder import KERNEL_BUILDERS, STATIC_DIM_KINDS
from iree_py.errors import CompileError
from iree_py.ir.symbols import Expr as SymbolExpr
from iree_py.ir.types import DType, TensorType
from iree_py.targets import load_target
from tests.codegen.conftest import f32

EM_X86_64, EM_AARCH64, EM_RISCV = 62, 183, 243


def _specs() -> list[KernelSpec]:
    return [
        KernelSpec("k_sigmoid", "elementwise", (f32(4, 100),), (f32(4, 100),),
                   {"expr": Expr((ExprStep("Sigmoid", (("in", 0),)),))}),
        KernelSpec("k_softmax", "softmax", (f32(3, 10),), (f32(3, 10),), {"axis": 1}),
        KernelSpec("k_copy", "transpose", (f32(64, 64),), (f32(64, 64),), {"perm": (0, 1)}),  # loop → no memcpy
    ]


def _elf_header(code: bytes) -> tuple[int, int, int]:
    """(ELF class, e_type, e_machine) of a little-endian ELF."""
    assert code[:4] == b"\x7fELF", "not an ELF file"
    assert code[5] == 1, "not little-endian"
    e_type, e_machine = struct.unpack_from("<HH", code, 16)
    return code[4], e_type, e_machine


@pytest.mark.parametrize("target_name, machine", [("host", EM_X86_64), ("x86_64", EM_X86_64), ("arm64", EM_AARCH64),
                                                  ("riscv64", EM_RISCV), ("riscv64-rvv", EM_RISCV)])
def test_shared_object_for_each_target(target_name: str, machine: int) -> None:
    blob = build_executable(_specs(), load_target(target_name))
    elf_class, e_type, e_machine = _elf_header(blob.code)
    assert (elf_class, e_type, e_machine) == (2, 3, machine)  # 64-bit, ET_DYN
    assert blob.arch == load_target(target_name).arch
    assert [k.name for k in blob.kernels] == ["k_sigmoid", "k_softmax", "k_copy"]
    assert blob.kernels[0].binding_min_lengths == (1600, 1600)
    assert b"memcpy" not in blob.code and b"memset" not in blob.code and b"libc" not in blob.code
    assert len(blob.code) < 64 * 1024


def test_library_table_and_version_check() -> None:
    lib = LoadedLibrary(build_executable(_specs(), load_target("host")))  # checks a wrong version gives NULL
    assert list(lib.entries) == ["k_sigmoid", "k_softmax", "k_copy"]
    assert KERNEL_ABI_VERSION == 2
    assert ctypes.sizeof(ctypes.c_void_p) == 8


def test_unsupported_kind_names_the_kernel() -> None:
    spec = KernelSpec("my_fft", "fft", (f32(2),), (f32(2),))
    with pytest.raises(ValueError, match="my_fft.*fft"):
        build_executable([spec], load_target("host"))


def test_static_dim_kinds_are_refused_on_symbolic_dims_in_one_place() -> None:
    """Every kind has one builder (KERNEL_BUILDERS), for int and Expr dims alike; the kinds whose
    kernels need known sizes are listed once, and a symbolic spec of one of them is refused there,
    naming the kernel, the kind and the way out (docs/dynamic_shapes.md §3)."""
    assert STATIC_DIM_KINDS <= set(KERNEL_BUILDERS)
    spec = KernelSpec("my_quantize", "quantize", (f32(SymbolExpr.of("n"), 4),),
                      (TensorType(DType.i8, (SymbolExpr.of("n"), 4)),), {"scale": 0.5, "zero_point": 0})
    with pytest.raises(CompileError, match=r"my_quantize.*'quantize'.*symbolic dims.*--dim NAME=VALUE"):
        build_executable([spec], load_target("host"))


def test_duplicate_kernel_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="unique"):
        build_executable([_specs()[0], _specs()[0]], load_target("host"))


def test_emit_llvm_ir_and_assembly() -> None:
    text = emit_llvm_ir(_specs(), load_target("arm64"))
    assert 'target triple = "aarch64-unknown-linux-gnu"' in text
    assert "define ptr @irp_kernel_library_query(i32" in text
    assert 'c"k_sigmoid\\00"' in text and '"no-builtins"' in text      # entry names in the library's table
    assert len(re.findall(r"^define hidden .*@irp_k\w+\(", text, flags=re.MULTILINE)) == len(_specs())  # one per kernel
    declared = re.findall(r"^declare [^@]*@([\w.]+)", text, flags=re.MULTILINE)
    defined = set(re.findall(r"^define [^@]*@([\w.]+)\(", text, flags=re.MULTILINE))
    # Kernels import nothing: only intrinsics, and the export's references to the kernels' entries.
    assert all(name.startswith("llvm.") or name in defined for name in declared), declared
    asm = emit_assembly(_specs(), load_target("arm64"))
    assert "irp_kernel_library_query:" in asm and "fdiv" in asm
