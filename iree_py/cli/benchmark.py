"""`iree-py benchmark`: latency of a module's function, and with --profile the time per kernel."""
from __future__ import annotations

import time

import numpy as np

from iree_py.errors import IreePyError
from iree_py.runtime.devices import LocalDevice
from iree_py.runtime.module import LoadedModule


def benchmark(module: LoadedModule, function: str, inputs: list[np.ndarray], repeat: int, profile: bool) -> str:
    fn = getattr(module, function)
    fn.call(*inputs)  # warm up: first touch of the arena and the kernels
    device = module.device
    if profile:
        if not isinstance(device, LocalDevice):
            raise IreePyError("--profile needs the local device")
        device.set_profiling(True)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn.call(*inputs)
        times.append(time.perf_counter() - start)
    times.sort()
    lines = [f"{function}: {repeat} runs, median {1e3 * times[len(times) // 2]:.3f} ms, min {1e3 * times[0]:.3f} ms"]
    if profile:
        device.set_profiling(False)
        lines += _profile_table(module, device, repeat)
    return "\n".join(lines) + "\n"


def _profile_table(module: LoadedModule, device: LocalDevice, repeat: int) -> list[str]:
    sources = {}
    for d in module.module.debug_info or []:
        exe = module.module.executables[d.executable]
        sources[exe.entry_points[d.entry_point].name] = ", ".join(d.source_nodes)
    rows = sorted(device.profile(), key=lambda p: -p.nanoseconds)
    total = sum(p.nanoseconds for p in rows) or 1
    lines = ["", f"{'kernel':<24}{'calls/run':>10}{'ms/run':>10}{'share':>8}  source nodes"]
    for p in rows:
        lines.append(f"{p.entry_point:<24}{p.dispatches / repeat:>10.0f}{p.nanoseconds / repeat / 1e6:>10.3f}"
                     f"{100 * p.nanoseconds / total:>7.1f}%  {sources.get(p.entry_point, '')}")
    lines.append(f"{'all kernels':<24}{sum(p.dispatches for p in rows) / repeat:>10.0f}{total / repeat / 1e6:>10.3f}")
    return lines
