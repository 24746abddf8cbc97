"""TFLite GATHER and GATHER_ND with run-time and constant indices, against the TFLite interpreter
(exact: the ops only move data)."""
from __future__ import annotations

import numpy as np
import pytest
from tflite_harness import complete_shapes, run_iree, run_tflite
from tflite_writer import TfliteModel

from iree_py.frontends.tflite.schema import GatherOptions

RNG = np.random.default_rng(5)


def _gather_options(axis: int) -> GatherOptions.GatherOptionsT:
    opts = GatherOptions.GatherOptionsT()
    opts.axis = axis
    return opts


def _check(m: TfliteModel, inputs: list[np.ndarray]) -> None:
    data = complete_shapes(m)
    for got, want in zip(run_iree(data, inputs), run_tflite(data, inputs), strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_gather_runtime_indices(axis: int, index_dtype) -> None:
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    idx = RNG.integers(0, x.shape[axis], size=(2, 3)).astype(index_dtype)
    m = TfliteModel()
    ins = [m.input("x", x.shape), m.input("i", idx.shape, index_dtype)]
    out = m.tensor("y")
    m.op("GATHER", ins, [out], _gather_options(axis))
    m.output(out)
    _check(m, [x, idx])


def test_gather_constant_indices_int_data() -> None:
    x = RNG.integers(-9, 9, size=(6, 2)).astype(np.int32)
    m = TfliteModel()
    ins = [m.input("x", x.shape, np.int32), m.const("i", np.array([5, 0, 0, 3], np.int32))]
    out = m.tensor("y", dtype=np.int32)
    m.op("GATHER", ins, [out], _gather_options(0))
    m.output(out)
    _check(m, [x])


def test_gather_nd() -> None:
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    idx = np.array([[[2, 1], [0, 3]], [[1, 1], [2, 0]]], np.int32)
    m = TfliteModel()
    ins = [m.input("x", x.shape), m.input("i", idx.shape, np.int32)]
    out = m.tensor("y")
    m.op("GATHER_ND", ins, [out])
    m.output(out)
    _check(m, [x, idx])
