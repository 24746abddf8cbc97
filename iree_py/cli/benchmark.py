"""`iree-py benchmark`: latency of a module's function, and with --profile the time per kernel."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from iree_py.errors import IreePyError
from iree_py.runtime.devices import KernelProfile, LocalDevice
from iree_py.runtime.module import LoadedModule


COMPARE_ROUNDS = 3  # --compare: the two engines take turns this many times; each keeps its best median


def benchmark(module: LoadedModule, function: str, inputs: list[np.ndarray], repeat: int, profile: bool,
              compare: str | None = None, trace: str | None = None) -> str:
    fn = getattr(module, function)
    run = lambda: fn.call(*inputs)
    run()  # warm up: first touch of the arena and the kernels
    device = module.device
    if trace is not None:  # the timed runs below are plain; the traced ones follow them
        from iree_py.cli.trace import chrome_trace, start_tracing, write_trace
        traced = start_tracing(module)
        calls = []
        for _ in range(repeat):
            run()
            calls.append(traced.trace())
        traced.set_trace(0)
        write_trace(trace, chrome_trace(module, function, calls, traced.arena_size()))
    if profile:
        if not isinstance(device, LocalDevice):
            raise IreePyError("--profile needs the local device")
        device.set_profiling(True)
    times = _times(run, repeat)
    if profile:
        device.set_profiling(False)
    lines = [f"{function}: {repeat} runs, median {1e3 * _median(times):.3f} ms, min {1e3 * times[0]:.3f} ms"]
    if compare is not None:
        threads = device.thread_count() if isinstance(device, LocalDevice) else 1
        lines += _compare(run, compare, inputs, repeat, _median(times), threads)
    if profile:
        lines += _profile_table(module, device, repeat)
    return "\n".join(lines) + "\n"


def _times(run: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return sorted(times)


def _median(times: list[float]) -> float:
    return times[len(times) // 2]


def _compare(ours: Callable[[], object], compare: str, inputs: list[np.ndarray], repeat: int, first: float,
             threads: int) -> list[str]:
    """The peer's median beside ours at the same thread count, the two taking turns (COMPARE_ROUNDS),
    best median of each:
    a burst of load from elsewhere then hits one round rather than one engine."""
    from iree_py.cli.peers import parse_compare, peer_runner
    engine, model = parse_compare(compare)
    peer = peer_runner(engine, model, inputs, threads)
    peer()  # warm up
    best_ours, best_peer = first, float("inf")
    for _ in range(COMPARE_ROUNDS):
        best_peer = min(best_peer, _median(_times(peer, repeat)))
        best_ours = min(best_ours, _median(_times(ours, repeat)))
    return [f"{engine} ({model.name}): median {1e3 * best_peer:.3f} ms; iree-py {1e3 * best_ours:.3f} ms "
            f"(best median of {COMPARE_ROUNDS + 1} rounds, {threads} thread{'s' if threads > 1 else ''} each): ratio {best_ours / best_peer:.2f} "
            f"({'faster' if best_ours < best_peer else 'slower'} than {engine})"]


def _profile_table(module: LoadedModule, device: LocalDevice, repeat: int) -> list[str]:
    from iree_py.cli.trace import source_nodes
    sources = source_nodes(module)
    profile = device.profile()
    # A device that times its own work (Vulkan: timestamp queries) only records a dispatch when it
    # is called; its own times are the kernels' times.
    on_device = any(p.device_nanoseconds for p in profile)

    def time_of(p: KernelProfile) -> int:
        return p.device_nanoseconds if on_device else p.nanoseconds
    rows = sorted(profile, key=lambda p: -time_of(p))
    total = sum(time_of(p) for p in rows) or 1
    unit = "device ms/run" if on_device else "ms/run"
    width = max(10, len(unit) + 1)
    lines = ["", f"{'kernel':<24}{'calls/run':>10}{unit:>{width}}{'share':>8}  source nodes"]
    for p in rows:
        lines.append(f"{p.entry_point:<24}{p.dispatches / repeat:>10.0f}{time_of(p) / repeat / 1e6:>{width}.3f}"
                     f"{100 * time_of(p) / total:>7.1f}%  {sources.get(p.entry_point, '')}")
    lines.append(f"{'all kernels':<24}{sum(p.dispatches for p in rows) / repeat:>10.0f}{total / repeat / 1e6:>{width}.3f}")
    if on_device:
        lines.append("(times from the device's timestamp queries: each kernel's own run, without the recording)")
    return lines
