"""Compare iree-py's outputs with a case's expected outputs the way onnx's backend test runner does
(onnx.backend.test.runner.Runner.assert_similar_outputs), written out here:

- the number of outputs must match;
- each output's shape must match exactly; strings compare exactly;
- the dtype must match exactly (a float64 result for a float32 reference fails);
- values: |actual - expected| <= atol + rtol * |expected| element-wise (numpy assert_allclose),
  NaN equals NaN (at the same positions), an infinity only equals the same infinity;
  bfloat16 uses rtol >= 2**-6 (two bfloat16 ulps).

Returns None when similar, else a one-line reason naming the output and what differed.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

BFLOAT16_MIN_RTOL = 2.0 ** -6


def compare_outputs(actual: Sequence[Any], expected: Sequence[Any], rtol: float, atol: float) -> str | None:
    if len(actual) != len(expected):
        return f"{len(actual)} outputs, expected {len(expected)}"
    for i, (a, e) in enumerate(zip(actual, expected)):
        reason = compare_value(a, e, rtol, atol)
        if reason is not None:
            return f"output {i}: {reason}"
    return None


def compare_value(actual: Any, expected: Any, rtol: float, atol: float) -> str | None:
    if isinstance(expected, (list, tuple)) or isinstance(actual, (list, tuple)):
        if not (isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple))):
            return f"got {type(actual).__name__}, expected {type(expected).__name__} (sequence vs tensor)"
        return compare_outputs(actual, expected, rtol, atol)
    if expected is None or actual is None:
        return None if expected is None and actual is None else "optional value present on one side only"
    a, e = np.asarray(actual), np.asarray(expected)
    if a.shape != e.shape:
        return f"shape {a.shape}, expected {e.shape}"
    if e.dtype == object or e.dtype.kind in "US":
        return None if np.array_equal(a, e) else "strings differ"
    if a.dtype != e.dtype:
        return f"dtype {a.dtype}, expected {e.dtype}"
    if e.dtype.name == "bfloat16":
        rtol = max(rtol, BFLOAT16_MIN_RTOL)
        a, e = a.astype(np.float32), e.astype(np.float32)
    return _compare_numbers(a, e, rtol, atol)


def _compare_numbers(a: np.ndarray, e: np.ndarray, rtol: float, atol: float) -> str | None:
    if a.size == 0:
        return None
    wide = np.complex128 if np.iscomplexobj(e) else np.float64
    a, e = a.astype(wide), e.astype(wide)
    a_nan, e_nan = np.isnan(a), np.isnan(e)
    a_inf, e_inf = np.isinf(a), np.isinf(e)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.abs(a - e) <= atol + rtol * np.abs(e)
    close = np.where(a_nan | e_nan, a_nan & e_nan, close)
    close = np.where(a_inf | e_inf, a == e, close)
    bad = np.flatnonzero(~close)
    if bad.size == 0:
        return None
    first = np.unravel_index(bad[0], e.shape)
    finite = ~(a_nan | e_nan | a_inf | e_inf)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(a - e)[finite]
    worst = f", max |error| {float(err.max()):.3g}" if err.size else ""
    return (f"{bad.size} of {e.size} elements differ (rtol {rtol:g}, atol {atol:g}){worst}; "
            f"first at {tuple(int(j) for j in first)}: got {a[first].item()!r}, expected {e[first].item()!r}")
