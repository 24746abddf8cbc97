"""Timing shared by the in-process benchmarks."""
from __future__ import annotations

import time
from typing import Callable


def time_calls(call: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median, min) milliseconds of `repeat` calls after one warm-up call."""
    call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    times.sort()
    return 1e3 * times[len(times) // 2], 1e3 * times[0]
