"""Emulated boards for bare-metal targets: build a target's firmware (runtime_c/firmware/) and run
it under qemu-system with the board's UART bridged to a TCP port, where the device server answers
(SerialDevice on `socket://127.0.0.1:PORT`).

The firmware is built with runtime_c/Makefile into firmware/<target>/ of the build folder (build/
in a checkout, the per-user cache for an installed package: runtime/build.py's build_root) and
rebuilt when a runtime source is newer than it (make then rebuilds only what changed).

qemu runs with -icount, so the cycle counts a board reports do not depend on the host's load:
- MPS2 boards (Cortex-M): shift=5, one instruction per 32 ns of virtual time (about 31 MIPS,
  close to the real 25 MHz FPGA boards); the firmware counts cycles with SysTick on the 25 MHz
  CPU clock.
- riscv virt: shift=0, one instruction per virtual nanosecond; the firmware counts mcycle, which
  under -icount is that virtual nanosecond count: cycles = instructions, at 1 GHz.
While the firmware waits for the host it sleeps in WFI, and qemu (icount sleep=on, its default)
then lets virtual time follow real time, so the server's timeouts are real-time ones.
"""
from __future__ import annotations

import ctypes
import fcntl
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from iree_py.targets import Target, available_targets, load_target
from iree_py.errors import IreePyError
from iree_py.resources import runtime_sources
from iree_py.runtime.build import build_root, newest_source_mtime
from iree_py.system_tools import require

if TYPE_CHECKING:
    from iree_py.runtime.serial_device import SerialDevice


@dataclass(frozen=True)
class BoardSpec:
    """How qemu emulates one board of runtime_c/firmware/boards/."""

    machine: str                  # qemu -M
    icount_shift: int             # qemu -icount shift=N: 2**N ns of virtual time per instruction
    cycles_per_second: int        # the rate of the firmware's cycle counter (HELLO reports it too)
    extra_args: tuple[str, ...] = ()


BOARDS = {
    "mps2-an386": BoardSpec("mps2-an386", icount_shift=5, cycles_per_second=25_000_000),
    "mps2-an500": BoardSpec("mps2-an500", icount_shift=5, cycles_per_second=25_000_000),
    "riscv32-virt": BoardSpec("virt", icount_shift=0, cycles_per_second=1_000_000_000, extra_args=("-bios", "none")),
}


def board_spec(target: Target) -> BoardSpec:
    if target.runtime != "bare-metal" or target.run != "qemu-system":
        raise IreePyError(f"target {target.name} runs {target.run!r} with a {target.runtime!r} runtime: "
                          f"only bare-metal targets run on an emulated board")
    spec = BOARDS.get(target.board)
    if spec is None:
        raise IreePyError(f"target {target.name}: no emulated board {target.board!r}; known boards: "
                          f"{', '.join(sorted(BOARDS))}")
    return spec


def board_cycles_per_second(target: Target) -> int:
    return board_spec(target).cycles_per_second


# --- building ------------------------------------------------------------------------------

def build_dir(target: Target) -> Path:
    return build_root() / "firmware" / target.name


def make_variables(target: Target, out: Path) -> list[str]:
    """runtime_c/Makefile's bare-metal variables for `target` (see the Makefile's bare-metal block)."""
    board_spec(target)
    return [f"BUILD_DIR={out}", f"BOARD={target.board}", f"BARE_CC={target.cross_cc}",
            f"BARE_CFLAGS={target.cross_cflags}", f"FIRMWARE_RAM_BYTES={target.ram_bytes}",
            f"FIRMWARE_STORAGE_BYTES={target.flash_bytes}"]


def run_make(target: Target, goals: list[str], out: Path | None = None) -> str:
    """Runs make for `goals` of the bare-metal block; returns its stdout."""
    out = out or build_dir(target)
    variables = make_variables(target, out)
    needed_for = f"building {' '.join(goals)} for {target.name}"
    require(target.cross_cc, needed_for)
    make = require("make", needed_for)
    out.mkdir(parents=True, exist_ok=True)
    cmd = [make, "-s", "-C", str(runtime_sources()), *variables, *goals]
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # pytest workers may build the same target at once
        result = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "MAKEFLAGS": ""})
    if result.returncode != 0:
        raise IreePyError(f"building {' '.join(goals)} for {target.name} failed ({' '.join(cmd)}):\n"
                          f"{result.stdout}{result.stderr}")
    return result.stdout


def build_firmware(target: Target, echo: bool = False) -> Path:
    """The firmware ELF for the target's board (echo: the diagnostic image without the server)."""
    out = build_dir(target)
    elf = out / ("firmware-echo.elf" if echo else "firmware.elf")
    if elf.exists() and elf.stat().st_mtime >= newest_source_mtime():
        return elf
    run_make(target, ["firmware-echo" if echo else "firmware"], out)
    os.utime(elf)  # make may have had nothing to do: mark it checked against the sources
    return elf


def static_library(target: Target) -> Path:
    """The bare-metal runtime (VM, loader, CPU HAL) for `target` as a static library."""
    run_make(target, ["bare-lib"])
    return build_dir(target) / "bare" / "libiree_py_runtime.a"


SECTIONS = (".text", ".rodata", ".data", ".bss")


def runtime_size(target: Target) -> dict[str, int]:
    """Bytes per section (.text/.rodata/.data/.bss) of the bare-metal runtime library: every function
    of the VM, loader and CPU HAL built with -Os and status messages, linked or not."""
    line = run_make(target, ["bare-size"]).strip().splitlines()[-1]
    words = line.split(":", 1)[1].split()
    sizes = dict(zip(words[0::2], map(int, words[1::2])))
    if set(sizes) != set(SECTIONS):
        raise IreePyError(f"unexpected size line from make bare-size: {line!r}")
    return sizes


def elf_size(target: Target, elf: Path) -> dict[str, int]:
    """Bytes per section group of a linked image, from `size -A`: code (.text, read-only data and the
    .data image, what the flash holds) and RAM (.data, .bss, .noinit (the runtime's region), .stack)."""
    tool = require(target.cross_cc.removesuffix("gcc") + "size", f"measuring the firmware of {target.name}")
    result = subprocess.run([tool, "-A", str(elf)], capture_output=True, text=True, check=True)
    sections = {}
    for line in result.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].startswith(".") and parts[1].isdigit():
            sections[parts[0]] = int(parts[1])
    return sections


# --- running --------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """Runs in the qemu child before exec: Linux kills it when the Python process dies, so a crashed
    or killed test run leaves no emulator behind."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class QemuBoard:
    """One emulated board running `firmware`; `url` is where its UART answers. A context manager:
    qemu is stopped on exit, on close(), when the object is collected, and when Python exits.
    link="tcp": the UART on a local TCP port (socket://127.0.0.1:PORT); link="pty": on a
    pseudo-terminal, a real tty device as a USB serial adapter would be (serial:///dev/pts/N)."""

    def __init__(self, target: Target, firmware: Path | None = None, boot_timeout: float = 10.0,
                 link: str = "tcp") -> None:
        if link not in ("tcp", "pty"):
            raise IreePyError(f"QemuBoard link must be 'tcp' or 'pty', got {link!r}")
        self.target = target
        self.spec = board_spec(target)
        require(target.qemu, f"running the {target.board} board of {target.name}")
        self.firmware = firmware or build_firmware(target)
        self.port = _free_port() if link == "tcp" else 0
        self.url = f"socket://127.0.0.1:{self.port}"
        self._log = tempfile.TemporaryFile(prefix="iree-py-qemu-")
        serial = f"tcp:127.0.0.1:{self.port},server=on,wait=off,nodelay=on" if link == "tcp" else "pty"
        self.command = [target.qemu, "-M", self.spec.machine, "-nographic", "-monitor", "none",
                        "-icount", f"shift={self.spec.icount_shift}", *self.spec.extra_args,
                        "-kernel", str(self.firmware), "-serial", serial]
        started = time.monotonic()
        self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=self._log,
                                        stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        self._finalizer = weakref.finalize(self, _stop, self.process)
        try:
            if link == "tcp":
                self._wait_for_port(boot_timeout)
            else:
                self.url = f"serial://{self._wait_for_pty(boot_timeout)}"
        except BaseException:
            self.close()
            raise
        self.boot_seconds = time.monotonic() - started

    def _wait_for_port(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise IreePyError(f"{self.target.qemu} exited with status {self.process.returncode} before "
                                  f"its UART port opened ({' '.join(self.command)}):\n{self.log()}")
            try:
                # qemu's server socket takes one client at a time: probing with a connection
                # would occupy it, so look for the listening socket instead.
                if _listening(self.port):
                    return
            except OSError:
                pass
            time.sleep(0.01)
        raise IreePyError(f"{self.target.qemu} did not open its UART port {self.port} within {timeout:.0f} s "
                          f"({' '.join(self.command)}):\n{self.log()}")

    def _wait_for_pty(self, timeout: float) -> str:
        """The pseudo-terminal qemu announces ("char device redirected to /dev/pts/N")."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = re.search(r"redirected to (/dev/pts/\d+)", self.log())
            if match:
                return match.group(1)
            if self.process.poll() is not None:
                raise IreePyError(f"{self.target.qemu} exited with status {self.process.returncode} before "
                                  f"its UART pty opened ({' '.join(self.command)}):\n{self.log()}")
            time.sleep(0.01)
        raise IreePyError(f"{self.target.qemu} did not announce its UART pty within {timeout:.0f} s "
                          f"({' '.join(self.command)}):\n{self.log()}")

    def log(self) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-4000:]

    def close(self) -> None:
        self._finalizer()
        self._log.close()

    def __enter__(self) -> "QemuBoard":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _listening(port: int) -> bool:
    """Whether some socket listens on 127.0.0.1:port (from /proc/net/tcp: state 0A = LISTEN)."""
    needle = f"0100007F:{port:04X}"
    with open("/proc/net/tcp") as f:
        return any(fields[1] == needle and fields[3] == "0A" for fields in (line.split() for line in f.readlines()[1:]))


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.kill()
    process.wait()


# --- as a device of iree_py.load -------------------------------------------------------------

def board_target_for(arch: str, name: str = "") -> Target | None:
    """The bare-metal target whose emulated board runs modules of `arch`: the target `name` when
    given, else the first by name (a module records only its arch: thumbv7em modules go to
    cortex-m4's board unless device='qemu:cortex-m7' asks for the other). None when no board runs
    `arch` and no name was given."""
    if name:
        target = load_target(name)
        board_spec(target)
        if target.arch != arch:
            raise IreePyError(f"this module was compiled for {arch}; target {name}'s board runs {target.arch}")
        return target
    candidates = [t for t in map(load_target, available_targets())
                  if t.arch == arch and t.runtime == "bare-metal" and t.run == "qemu-system"]
    return candidates[0] if candidates else None


def open_board_device(target: Target, module: bytes, arch: str) -> "SerialDevice":
    """Starts the target's board, uploads `module` and returns the SerialDevice that runs it. The
    emulator lives as long as the device object (device.board) and stops with it."""
    from iree_py.runtime.serial_device import SerialDevice
    board = QemuBoard(target)
    try:
        device = SerialDevice(board.url)
        device.ensure_module(module, arch)
    except BaseException:
        board.close()
        raise
    device.board = board
    return device
