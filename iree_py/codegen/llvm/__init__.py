"""The CPU backend: KernelSpecs -> LLVM IR (llvmlite), one module per kernel -> one object per
kernel for the target (kernel_objects.py: cached by content) -> ld.lld -> one ELF .so (the kernel
library, kernel_abi.h), or for flat targets one memory image used in place (flat_image.py)."""
from __future__ import annotations

from dataclasses import dataclass

from iree_py.codegen.backend import Backend
from iree_py.codegen.kernel_spec import ExecutableBlob, KernelInfo, KernelSpec
from iree_py.codegen.llvm.flat_image import link_flat_image
from iree_py.codegen.llvm.kernel_objects import compile_kernels, emit_kernel_assembly, entry_symbol, object_digest, \
    optimized_module, target_machine
from iree_py.codegen.llvm.link import link_shared_object
from iree_py.codegen.llvm.module_builder import KERNEL_BUILDERS, kernel_irs, library_export_module, library_export_object
from iree_py.codegen.llvm.kernel_plan import plan
from iree_py.targets import Target

__all__ = ["BACKEND", "KERNEL_BUILDERS", "build_executable", "build_kernel_objects", "emit_llvm_ir", "emit_assembly"]


@dataclass(frozen=True)
class KernelObjects:
    kernels: tuple[KernelInfo, ...]   # one per spec, in order
    symbols: tuple[str, ...]          # each kernel's entry symbol (identical kernels share one)
    objects: tuple[bytes, ...]        # one object per distinct symbol


def build_kernel_objects(specs: list[KernelSpec], target: Target, jobs: int | None = None) -> KernelObjects:
    """Every kernel's object (`jobs` worker processes for the LLVM work: kernel_objects.compile_kernels)."""
    irs = kernel_irs(specs, target)
    objects = compile_kernels([k.text for k in irs], target, jobs)
    distinct = {o.symbol: o.code for o in objects}
    return KernelObjects(tuple(k.info for k in irs), tuple(o.symbol for o in objects), tuple(distinct.values()))


def build_executable(specs: list[KernelSpec], target: Target, jobs: int | None = None) -> ExecutableBlob:
    """Compile and link every kernel of `specs` into one kernel library for `target`. No specs is
    fine: a model that only reshapes its input still gets a (kernel-less) library for its target,
    so the module says which architecture it was built for."""
    built = build_kernel_objects(specs, target, jobs)
    what = f"target {target.name}"
    if target.executable_format == "flat":
        # No query function and no pointer table (a table of pointers would need relocating): the
        # linker's symbol table gives each entry point's offset in the image.
        image = link_flat_image(list(built.objects), list(built.symbols), target, what)
        return ExecutableBlob(arch=target.arch, code=image.code, kernels=built.kernels, format="flat",
                              entry_offsets=image.entry_offsets)
    export = library_export_object([k.name for k in built.kernels], list(built.symbols), target)
    code = link_shared_object([*built.objects, export], what)
    return ExecutableBlob(arch=target.arch, code=code, kernels=built.kernels)


def emit_llvm_ir(specs: list[KernelSpec], target: Target) -> str:
    """Textual LLVM IR of every kernel's optimized module, then the library export."""
    irs = kernel_irs(specs, target)
    symbols = [entry_symbol(object_digest(k.text, target)) for k in irs]
    kernels = [str(optimized_module(k.text, target, symbol)) for k, symbol in zip(irs, symbols)]
    return "\n".join([*kernels, str(library_export_module([k.info.name for k in irs], symbols, target))])


def emit_assembly(specs: list[KernelSpec], target: Target) -> str:
    """The target assembly of every kernel, then of the library export."""
    irs = kernel_irs(specs, target)
    symbols = [entry_symbol(object_digest(k.text, target)) for k in irs]
    export = target_machine(target).emit_assembly(library_export_module([k.info.name for k in irs], symbols, target))
    return "\n".join([*(emit_kernel_assembly(k.text, target) for k in irs), export])


BACKEND = Backend(name="llvm", kernel_kinds=frozenset(KERNEL_BUILDERS), plan=plan, build_executable=build_executable)
