"""TFLite comparisons, logic and SELECT against the TFLite interpreter (exact: bool results)."""
from __future__ import annotations

import numpy as np
import pytest
from tflite_harness import run_iree, run_tflite
from tflite_writer import TfliteModel

COMPARE = {"LESS": np.less, "LESS_EQUAL": np.less_equal, "GREATER": np.greater,
           "GREATER_EQUAL": np.greater_equal, "EQUAL": np.equal, "NOT_EQUAL": np.not_equal}


def run_both(m: TfliteModel, inputs: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    data = m.build()
    return run_iree(data, inputs), run_tflite(data, inputs)


@pytest.mark.parametrize("op", sorted(COMPARE))
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_comparisons_broadcast(op, dtype):
    m = TfliteModel()
    a, b = m.input("a", (2, 3), dtype), m.input("b", (1, 3), dtype)
    out = m.tensor("out", (2, 3), np.bool_)
    m.op(op, [a, b], [out])
    m.output(out)
    rng = np.random.default_rng(0)
    x = rng.integers(-2, 3, (2, 3)).astype(dtype)
    y = rng.integers(-2, 3, (1, 3)).astype(dtype)
    got, want = run_both(m, [x, y])
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[0], COMPARE[op](x, y))


@pytest.mark.parametrize("op", ["LOGICAL_AND", "LOGICAL_OR", "LOGICAL_NOT"])
def test_logic(op):
    m = TfliteModel()
    a, b = m.input("a", (4,), np.bool_), m.input("b", (4,), np.bool_)
    out = m.tensor("out", (4,), np.bool_)
    m.op(op, [a] if op == "LOGICAL_NOT" else [a, b], [out])
    m.output(out)
    x, y = np.array([0, 0, 1, 1], bool), np.array([0, 1, 0, 1], bool)
    got, want = run_both(m, [x, y])
    np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("op", ["SELECT", "SELECT_V2"])
def test_select(op):
    m = TfliteModel()
    c, x, y = m.input("c", (2, 3), np.bool_), m.input("x", (2, 3)), m.input("y", (2, 3))
    out = m.tensor("out", (2, 3))
    m.op(op, [c, x, y], [out])
    m.output(out)
    rng = np.random.default_rng(1)
    inputs = [rng.integers(0, 2, (2, 3)).astype(bool), *(rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2))]
    got, want = run_both(m, inputs)
    np.testing.assert_array_equal(got[0], want[0])
