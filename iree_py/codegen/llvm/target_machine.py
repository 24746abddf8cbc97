"""An LLVM TargetMachine for a Target record: triple, CPU and features come from the record
("host" means llvmlite's host CPU name / features)."""
from __future__ import annotations

from functools import cache

import llvmlite.binding as llvm

from iree_py.targets import Target


@cache
def _initialize() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def cpu_name(target: Target) -> str:
    return llvm.get_host_cpu_name() if target.cpu == "host" else target.cpu


def cpu_features(target: Target) -> str:
    return llvm.get_host_cpu_features().flatten() if target.features == "host" else target.features


def abi_name(target: Target) -> str:
    """The ABI named by `-mabi=` in the target's cross_cflags (RISC-V ilp32f, lp64d, ...), or ''
    for the triple's default; kernels and the cross-compiled runtime must agree on it."""
    for flag in target.cross_cflags.split():
        if flag.startswith("-mabi="):
            return flag.removeprefix("-mabi=")
    return ""


def create_target_machine(target: Target) -> llvm.TargetMachine:
    """A PIC, O3 target machine for `target`. PIC also suits flat images: code and read-only
    data are reached PC-relative (internal symbols need no GOT), so the image has no relocations."""
    _initialize()
    try:
        llvm_target = llvm.Target.from_triple(target.triple)
    except RuntimeError as err:
        raise ValueError(f"target {target.name}: LLVM does not know triple {target.triple!r}: {err}") from err
    return llvm_target.create_target_machine(
        cpu=cpu_name(target), features=cpu_features(target), opt=3, reloc="pic", codemodel="default",
        abiname=abi_name(target))
