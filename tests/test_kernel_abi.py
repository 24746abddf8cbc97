"""The Python mirror of runtime_c/hal/kernel_abi.h agrees with the C header: on the 64-bit host,
on aarch64, riscv64 and 32-bit ARM (cross compilers + qemu-user, installed by scripts/setup.sh);
the kernel status table (codes, names, meanings) on the host."""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import pytest

from iree_py.codegen import kernel_abi
from iree_py.codegen.kernel_abi import (dispatch_state_layout, kernel_library_layout,
                                        workgroup_state_layout)

ROOT = Path(__file__).resolve().parents[1]
HEADER_DIR = ROOT / "runtime_c" / "hal"

PROBE = r"""
#include <stdio.h>
#include "kernel_abi.h"
#define F(T, f) printf(#T " " #f " %zu\n", offsetof(T, f));
#define S(T) printf(#T " sizeof %zu\n", sizeof(T));
int main(void) {
  printf("version %u\n", IRP_KERNEL_ABI_VERSION);
  printf("pointer_bits %zu\n", sizeof(void*) * 8);
  F(irp_dispatch_state_t, workgroup_count) F(irp_dispatch_state_t, push_constant_count)
  F(irp_dispatch_state_t, push_constants) F(irp_dispatch_state_t, bindings)
  F(irp_dispatch_state_t, binding_lengths) F(irp_dispatch_state_t, binding_count)
  F(irp_dispatch_state_t, reserved)
  F(irp_dispatch_state_t, read_only_bindings) S(irp_dispatch_state_t)
  F(irp_workgroup_state_t, workgroup_id) F(irp_workgroup_state_t, reserved) S(irp_workgroup_state_t)
  F(irp_kernel_library_t, abi_version) F(irp_kernel_library_t, entry_count)
  F(irp_kernel_library_t, entry_names) F(irp_kernel_library_t, entries) S(irp_kernel_library_t)
  printf("symbol %s\n", IRP_KERNEL_LIBRARY_QUERY_SYMBOL);
#define STATUS(code, name, meaning) printf("status %d %s %s %d\n", code, #name, meaning, IRP_KERNEL_STATUS_##name);
  IRP_KERNEL_STATUSES(STATUS)
  return 0;
}
"""


def _expected(pointer_bits: int) -> set[str]:
    lines = {f"version {kernel_abi.KERNEL_ABI_VERSION}", f"pointer_bits {pointer_bits}",
             f"symbol {kernel_abi.LIBRARY_QUERY_SYMBOL}"}
    lines |= {f"status {s.code} {s.name} {s.meaning} {s.code}" for s in kernel_abi.KERNEL_STATUSES}
    for layout in (dispatch_state_layout(pointer_bits), workgroup_state_layout(pointer_bits),
                   kernel_library_layout(pointer_bits)):
        lines |= {f"{layout.name} {field} {offset}" for field, offset in layout.offsets.items()}
        lines.add(f"{layout.name} sizeof {layout.size}")
    return lines


def _probe(tmp_path: Path, cc: str, run_prefix: list[str], extra: list[str]) -> set[str]:
    src, exe = tmp_path / "probe.c", tmp_path / "probe"
    src.write_text(PROBE)
    subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", *extra, f"-I{HEADER_DIR}", str(src),
                    "-o", str(exe)], check=True, capture_output=True, text=True)
    out = subprocess.run([*run_prefix, str(exe)], check=True, capture_output=True, text=True).stdout
    return set(out.strip().splitlines())


def test_host_layout_matches_header(tmp_path: Path) -> None:
    assert _probe(tmp_path, "gcc", [], []) == _expected(64)


def test_aarch64_layout_matches_header(tmp_path: Path) -> None:
    assert _probe(tmp_path, "aarch64-linux-gnu-gcc", ["qemu-aarch64"], ["-static"]) == _expected(64)


def test_riscv64_layout_matches_header(tmp_path: Path) -> None:
    assert _probe(tmp_path, "riscv64-linux-gnu-gcc", ["qemu-riscv64"], ["-static"]) == _expected(64)


def test_32bit_layout_matches_header(tmp_path: Path) -> None:
    """32-bit ARM Linux (the cross compiler + qemu-arm); gcc -m32 would need gcc-multilib, which
    Debian will not install beside the cross compilers."""
    assert _probe(tmp_path, "arm-linux-gnueabihf-gcc", ["qemu-arm"], ["-static"]) == _expected(32)


def test_ctypes_mirror_matches_layout() -> None:
    layout = dispatch_state_layout(ctypes.sizeof(ctypes.c_void_p) * 8)
    assert ctypes.sizeof(kernel_abi.DispatchState) == layout.size
    for field, offset in layout.offsets.items():
        assert getattr(kernel_abi.DispatchState, field).offset == offset, field
    assert ctypes.sizeof(kernel_abi.WorkgroupState) == workgroup_state_layout(64).size
    library = kernel_library_layout(ctypes.sizeof(ctypes.c_void_p) * 8)
    assert ctypes.sizeof(kernel_abi.KernelLibrary) == library.size
    for field, offset in library.offsets.items():
        assert getattr(kernel_abi.KernelLibrary, field).offset == offset, field


def test_status_table_is_well_formed() -> None:
    """Codes are distinct and 0 is success (the runtime treats any other value as a failure); the
    STATUS_ constants are the table's codes."""
    codes = [s.code for s in kernel_abi.KERNEL_STATUSES]
    assert codes == sorted(set(codes)) and codes[0] == kernel_abi.STATUS_OK == 0
    named = {s.name: s.code for s in kernel_abi.KERNEL_STATUSES}
    assert named == {name.removeprefix("STATUS_"): getattr(kernel_abi, name)
                     for name in dir(kernel_abi) if name.startswith("STATUS_")}
    assert kernel_abi.kernel_status(3).name == "INDEX_OUT_OF_RANGE" and kernel_abi.kernel_status(99) is None


def test_32bit_layout_is_smaller() -> None:
    assert dispatch_state_layout(32).size == 40
    assert dispatch_state_layout(32).offsets["bindings"] == 20
    with pytest.raises(ValueError, match="pointer_bits"):
        dispatch_state_layout(16)
