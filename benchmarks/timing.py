"""Timing shared by the in-process benchmarks."""
from __future__ import annotations

import time
from typing import Callable


def time_calls(call: Callable[[], object], repeat: int, min_seconds: float = 0.0) -> tuple[float, float]:
    """(median, min) milliseconds of `repeat` calls after one warm-up call; with `min_seconds`, of
    as many more calls as that takes at the warm-up call's pace (a median of 30 calls of 20 us
    spans under a millisecond: one burst of load from elsewhere moves it)."""
    start = time.perf_counter()
    call()
    first = time.perf_counter() - start
    if min_seconds > 0:
        repeat = max(repeat, min(int(min_seconds / max(first, 1e-7)), 100_000))
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    times.sort()
    return 1e3 * times[len(times) // 2], 1e3 * times[0]
