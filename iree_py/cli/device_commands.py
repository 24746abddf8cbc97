"""The `iree-py` commands for a board running the device server (docs/device_protocol.md):
`flash`, and `run` / `benchmark` with `--device=serial://...|socket://...`."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from iree_py.errors import IreePyError
from iree_py.module.reader import read_module
from iree_py.runtime import protocol as p
from iree_py.runtime.serial_device import DEVICE_URL_SCHEMES, RunResult, SerialDevice


def is_device_url(device: str) -> bool:
    return device.startswith(DEVICE_URL_SCHEMES)


def on_board(module) -> bool:
    """Whether a loaded module runs on a board speaking the device protocol (serial://, socket://,
    or the emulated board that --device=qemu starts for a bare-metal module)."""
    return isinstance(module.device, SerialDevice)


def module_arch(data: bytes, source: str) -> str:
    archs = {e.arch for e in read_module(data, payloads=False).executables}
    if len(archs) != 1:
        raise IreePyError(f"{source}: a board runs modules for one architecture; this one has {sorted(archs) or 'none'}")
    return archs.pop()


def flash(module_path: str, url: str) -> str:
    data = Path(module_path).read_bytes()
    board = SerialDevice(url)
    report = board.upload(data, module_arch(data, module_path))
    lines = [f"{line}" for line in report.events]
    where = f"{board.info.board} ({board.info.arch}) at {url}"
    if report.skipped:
        lines.append(f"{module_path}: {report.size} bytes, already on {where}")
    else:
        lines.append(f"{module_path}: {report.size} bytes flashed to {where} in {report.seconds:.3f} s "
                     f"({report.bytes_per_second / 1024:.1f} KiB/s)")
    return "\n".join(lines) + "\n"


def _cycles_text(cycles: int, rate: int) -> str:
    return f"{cycles} cycles ({1e3 * cycles / rate:.3f} ms at {rate / 1e6:g} MHz)" if rate else f"{cycles} cycles"


def profile_table(entries: list[p.EntryPointCycles], total_cycles: int, rate: int) -> str:
    kernel_total = sum(e.cycles for e in entries) or 1
    lines = [f"total: {_cycles_text(total_cycles, rate)}",
             f"{'kernel':<24}{'dispatches':>11}{'cycles':>14}{'share':>8}"]
    for e in sorted(entries, key=lambda e: -e.cycles):
        lines.append(f"{e.entry_point:<24}{e.dispatches:>11}{e.cycles:>14}{100 * e.cycles / kernel_total:>7.1f}%")
    return "\n".join(lines) + "\n"


def traced_board_runs(module, function: str, inputs: list[np.ndarray], dtypes: list[int], runs: int,
                      path: str) -> RunResult:
    """`runs` traced runs of `function` on the module's board, written to `path` as Chrome trace
    events (cli/trace.py); the last run's result."""
    from iree_py.cli.trace import board_call_trace, chrome_trace, write_trace
    board: SerialDevice = module.device
    rate = board.info.cycles_per_second
    results = [board.run(function, inputs, dtypes, trace=True) for _ in range(runs)]
    calls = [board_call_trace(r, rate) for r in results]
    write_trace(path, chrome_trace(module, function, calls, module.module.memory_plan.arena_size,
                                   {"board": board.info.board, "cycles per second": rate}))
    return results[-1]


def benchmark_on_board(board: SerialDevice, function: str, inputs: list[np.ndarray], dtypes: list[int],
                       repeat: int, profile: bool) -> str:
    first = board.run(function, inputs, dtypes, profile=profile)
    result = board.benchmark(repeat)
    rate = board.info.cycles_per_second
    lines = [f"{function}: {result.runs} runs on {board.info.board}, median {_cycles_text(result.median_cycles, rate)}, "
             f"min {result.min_cycles}, max {result.max_cycles} cycles"]
    text = "\n".join(lines) + "\n"
    if profile:
        text += "\n" + profile_table(first.profile, first.cycles, rate)
    return text
