"""`iree-py build-runtime --target=T -o DIR`: the C runtime for a target, ready to link or to run.

Bare-metal targets (cortex-m4, cortex-m7, riscv32):
  DIR/lib/libiree_py_runtime.a    the VM, loader and CPU HAL (-Os, status messages kept)
  DIR/include/                    iree_py_runtime.h, iree_py_base.h, kernel_abi.h, device_server.h
  DIR/firmware/BOARD.elf, .bin    the firmware for the target's emulated board (device server inside)
Linux targets:
  host: DIR/lib/libiree_py_runtime.so; cross (arm64, riscv64): DIR/lib/libiree_py_runtime.a;
  both: DIR/bin/irp-run (the runner) and DIR/include/ (iree_py_runtime.h, iree_py_base.h, kernel_abi.h).
Prints what it wrote and a size table.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

from iree_py.targets import Target, load_target
from iree_py.errors import IreePyError
from iree_py.resources import runtime_sources
from iree_py.runtime import board
from iree_py.runtime.build import LIBRARY_NAME, RUNNER_NAME, build_runtime

# Installed side by side in DIR/include/; the public header includes base/iree_py_base.h.
PUBLIC_HEADERS = ("api/iree_py_runtime.h", "base/iree_py_base.h", "hal/kernel_abi.h")
DEVICE_HEADERS = ("device/device_server.h",)
RUNTIME_INCLUDE = re.compile(r'^#include "\.\./[a-z_]+/([A-Za-z0-9_]+\.h)"', re.MULTILINE)


def build_runtime_into(target_name: str, out: Path) -> str:
    """Writes the runtime for `target_name` into `out`; returns the report to print."""
    target = load_target(target_name)
    if target.runtime == "bare-metal":
        return _bare_metal(target, out)
    return _linux(target, out)


def _copy(source: Path, dest_dir: Path, name: str | None = None) -> Path:
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / (name or source.name)
    shutil.copyfile(source, dest)
    return dest


def _install_headers(names: tuple[str, ...], dest_dir: Path) -> list[Path]:
    """Copies runtime_c/NAME for each name into dest_dir, flat: an include of another runtime
    header ("../base/iree_py_base.h") becomes an include of its installed copy, which must be one
    of `names`."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    installed = {Path(n).name for n in names}
    paths = []
    for name in names:
        text = (runtime_sources() / name).read_text()
        for included in RUNTIME_INCLUDE.findall(text):
            if included not in installed:
                raise IreePyError(f"runtime_c/{name} includes {included}, which build-runtime does not install")
        dest = dest_dir / Path(name).name
        dest.write_text(RUNTIME_INCLUDE.sub(r'#include "\1"', text))
        paths.append(dest)
    return paths


def _bare_metal(target: Target, out: Path) -> str:
    library = _copy(board.static_library(target), out / "lib")
    headers = _install_headers(PUBLIC_HEADERS + DEVICE_HEADERS, out / "include")
    elf = board.build_firmware(target)
    firmware = [_copy(elf, out / "firmware", f"{target.board}.elf"),
                _copy(elf.with_suffix(".bin"), out / "firmware", f"{target.board}.bin")]
    runtime = board.runtime_size(target)
    sections = board.elf_size(target, elf)
    lines = [f"runtime for {target.name} ({target.arch}, bare metal) in {out}:"]
    lines += [f"  {p.relative_to(out)}" for p in [library, *headers, *firmware]]
    lines.append(format_runtime_sizes({target.name: runtime}))
    lines.append(format_firmware_size(target, sections))
    return "\n".join(lines) + "\n"


def _linux(target: Target, out: Path) -> str:
    if target.runtime == "native":
        built = build_runtime(target.name)
        library = _copy(built / LIBRARY_NAME, out / "lib")
    else:
        if not target.cross_cc:
            raise IreePyError(f"target {target.name}: runtime {target.runtime!r} needs cross_cc")
        built = build_runtime(target.name, target.cross_cc, cflags=target.cross_cflags)
        library = _copy(built / "libiree_py_runtime.a", out / "lib")
    runner = _copy(built / RUNNER_NAME, out / "bin")
    runner.chmod(0o755)
    headers = _install_headers(PUBLIC_HEADERS, out / "include")
    lines = [f"runtime for {target.name} ({target.arch}, Linux) in {out}:"]
    lines += [f"  {p.relative_to(out)}  {p.stat().st_size} bytes" for p in [library, runner, *headers]]
    return "\n".join(lines) + "\n"


def format_runtime_sizes(sizes: dict[str, dict[str, int]]) -> str:
    """The size table of the bare-metal runtime (VM, loader, CPU HAL), one row per target."""
    header = f"  {'runtime (-Os)':<14}" + "".join(f"{s:>9}" for s in board.SECTIONS) + f"{'code':>9}"
    rows = [header]
    for name, s in sizes.items():
        code = s[".text"] + s[".rodata"]
        rows.append(f"  {name:<14}" + "".join(f"{s[k]:>9}" for k in board.SECTIONS) + f"{code:>9}")
    return "\n".join(rows)


def format_firmware_size(target: Target, sections: dict[str, int]) -> str:
    flash = sum(v for k, v in sections.items() if k in (".text", ".ARM.exidx", ".data"))
    ram = sum(v for k, v in sections.items() if k in (".data", ".bss", ".stack"))
    return (f"  firmware {target.board}: {flash} bytes of flash (code and data image), {ram} bytes of RAM "
            f"(data, bss, stack) + {sections.get('.noinit', 0)} for the runtime + "
            f"{sections.get('.module_storage', 0)} of module storage")
