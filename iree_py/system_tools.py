"""The programs iree-py runs that come from the system's package manager, not from pip: make and the
C compilers that build a runtime, qemu that runs one, ld.lld that links kernels. Each is looked up
on PATH before it is run; a missing one is a ToolNotFoundError naming the Debian package that
brings it, not a traceback from subprocess. scripts/setup.sh installs all of them
(tests/test_system_tools.py checks that this table and its package list agree).
"""
from __future__ import annotations

import shutil

from iree_py.errors import ToolNotFoundError

# program -> the Debian packages that bring it (those scripts/setup.sh installs).
DEBIAN_PACKAGES: dict[str, str] = {
    "make": "make",
    "cc": "gcc",
    "ld.lld": "lld",
    "aarch64-linux-gnu-gcc": "gcc-aarch64-linux-gnu libc6-dev-arm64-cross",
    "arm-linux-gnueabihf-gcc": "gcc-arm-linux-gnueabihf libc6-dev-armhf-cross",
    "riscv64-linux-gnu-gcc": "gcc-riscv64-linux-gnu libc6-dev-riscv64-cross",
    "arm-none-eabi-gcc": "gcc-arm-none-eabi libnewlib-arm-none-eabi",
    "arm-none-eabi-size": "gcc-arm-none-eabi",            # binutils-arm-none-eabi comes with it
    "riscv64-unknown-elf-gcc": "picolibc-riscv64-unknown-elf",   # brings gcc-riscv64-unknown-elf
    "riscv64-unknown-elf-size": "picolibc-riscv64-unknown-elf",
    "qemu-aarch64": "qemu-user",
    "qemu-riscv64": "qemu-user",
    "qemu-arm": "qemu-user",
    "qemu-system-arm": "qemu-system-arm",
    "qemu-system-riscv32": "qemu-system-misc",
    "spirv-val": "spirv-tools",
}


def tool_not_found(program: str, needed_for: str) -> ToolNotFoundError:
    """The error for `program` missing from PATH; `needed_for` says what wanted it."""
    package = DEBIAN_PACKAGES.get(program)
    if package:
        how = (f"install it with `apt-get install {package}` (Debian, Ubuntu; in a checkout "
               f"`bash scripts/setup.sh` installs every program iree-py uses)")
    else:
        how = "install it, or name a program that is installed in the target's file (targets/*.toml)"
    return ToolNotFoundError(f"{needed_for} needs {program}, which is not on PATH: {how}")


def require(program: str, needed_for: str) -> str:
    """The path of `program` on PATH, or a ToolNotFoundError naming the package to install."""
    path = shutil.which(program)
    if path is None:
        raise tool_not_found(program, needed_for)
    return path
