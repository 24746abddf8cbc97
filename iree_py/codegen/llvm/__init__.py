"""The CPU backend: KernelSpecs -> LLVM IR (llvmlite) -> object for the target -> ld.lld -> one
ELF shared object (the kernel library, kernel_abi.h), or for flat targets one memory image used in
place (flat_image.py)."""
from __future__ import annotations

from iree_py.codegen.kernel_spec import ExecutableBlob, KernelSpec
from iree_py.codegen.llvm.flat_image import link_flat_image
from iree_py.codegen.llvm.link import link_shared_object
from iree_py.codegen.llvm.module_builder import KERNEL_BUILDERS, build_optimized_module
from iree_py.codegen.target import Target

__all__ = ["KERNEL_BUILDERS", "build_executable", "emit_llvm_ir", "emit_assembly"]


def build_executable(specs: list[KernelSpec], target: Target) -> ExecutableBlob:
    """Compile and link every kernel of `specs` into one kernel library for `target`."""
    built = build_optimized_module(specs, target)
    obj = built.target_machine.emit_object(built.llvm_module)
    if target.executable_format == "flat":
        image = link_flat_image(obj, [k.name for k in built.kernels], target, f"target {target.name}")
        return ExecutableBlob(arch=target.arch, code=image.code, kernels=built.kernels, format="flat",
                              entry_offsets=image.entry_offsets)
    code = link_shared_object(obj, f"target {target.name}")
    return ExecutableBlob(arch=target.arch, code=code, kernels=built.kernels)


def emit_llvm_ir(specs: list[KernelSpec], target: Target) -> str:
    """Textual LLVM IR of the optimized module."""
    return str(build_optimized_module(specs, target).llvm_module)


def emit_assembly(specs: list[KernelSpec], target: Target) -> str:
    """The target assembly of the optimized module."""
    built = build_optimized_module(specs, target)
    return built.target_machine.emit_assembly(built.llvm_module)
