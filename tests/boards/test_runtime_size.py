"""The bare-metal runtime library: exactly the VM, loader and CPU HAL, and within the code budget."""
from __future__ import annotations

import subprocess

import pytest

from iree_py.cli.build_runtime import format_runtime_sizes
from iree_py.resources import runtime_sources
from iree_py.runtime import board
from tests.boards.conftest import board_target

# The goal: the VM, loader and CPU HAL for cortex-m4, -Os, status messages kept.
CODE_BUDGET_BYTES = 32 * 1024


def test_cortex_m4_runtime_fits_the_code_budget():
    sizes = board.runtime_size(board_target("cortex-m4"))
    print("\n" + format_runtime_sizes({"cortex-m4": sizes}))
    code = sizes[".text"] + sizes[".rodata"]
    assert code <= CODE_BUDGET_BYTES, f"runtime code {code} bytes (.text {sizes['.text']} + .rodata " \
                                      f"{sizes['.rodata']}) is over the {CODE_BUDGET_BYTES}-byte budget"
    # A runtime without its code would pass any budget: it must hold the VM at least.
    assert sizes[".text"] > 4096
    # Nothing writable: all state lives in what the caller's allocator hands out.
    assert sizes[".data"] == 0 and sizes[".bss"] == 0


@pytest.mark.parametrize("name", ["cortex-m7", "riscv32"])
def test_runtime_builds_without_writable_globals(name):
    sizes = board.runtime_size(board_target(name))
    assert sizes[".text"] > 4096
    assert sizes[".data"] == 0 and sizes[".bss"] == 0


def test_static_library_holds_exactly_the_vm_loader_and_cpu_hal(target):
    library = board.static_library(target)
    archiver = target.cross_cc.removesuffix("gcc") + "ar"
    members = set(subprocess.run([archiver, "t", str(library)], capture_output=True, text=True,
                                 check=True).stdout.split())
    expected = {p.with_suffix(".o").name for folder in ("base", "vm", "hal", "api")
                for p in (runtime_sources() / folder).glob("*.c")}
    assert members == expected
