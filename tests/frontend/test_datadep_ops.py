"""Ops whose output size depends on run-time data (frontends/onnx/indexing.py and sorting.py, ir/ops/data_dependent.py, the kernels of
codegen/llvm/data_dependent.py and topk.py): NonZero, Compress with a run-time condition,
Unique (sorted and not, all four outputs) and TopK with a run-time k. Each model is compiled once
and run in the C runtime on host at inputs whose result sizes differ (0 included); results must
equal onnxruntime's exactly (same dtype, shape and values: these ops only select and count), and so
must the numpy reference of the imported IR."""
from __future__ import annotations

import functools

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper

import iree_py
from iree_py.errors import IreeRuntimeError
from iree_py.frontends.onnx import import_onnx
from iree_py.ir.reference import evaluate
from tests.e2e.harness import run_onnxruntime

RNG = np.random.default_rng(7)


def _model(nodes: list, inputs: dict, outputs: dict, opset: int = 13) -> onnx.ModelProto:
    """inputs: name -> (elem type, shape); outputs: name -> elem type."""
    graph = helper.make_graph(nodes, "datadep", [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
                              [helper.make_tensor_value_info(n, t, None) for n, t in outputs.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


@functools.cache
def _module(m_bytes: bytes) -> iree_py.Module:
    return iree_py.load(iree_py.compile(m_bytes, target="host"), device="local")


def _check(m: onnx.ModelProto, *input_sets: list[np.ndarray]) -> None:
    """Compiled once; every input set gives onnxruntime's results exactly, in the runtime and in the
    numpy reference of the imported graph."""
    module = _module(m.SerializeToString())
    graph = import_onnx(m)
    for inputs in input_sets:
        expected = run_onnxruntime(m, inputs)
        for where, actual in (("runtime", module.main.call(*inputs)), ("reference", evaluate(graph, inputs))):
            assert len(actual) == len(expected)
            for i, (a, e) in enumerate(zip(actual, expected)):
                a = np.asarray(a)
                assert a.dtype == e.dtype and a.shape == e.shape and np.array_equal(a, e), \
                    f"{where} output {i} for inputs {inputs}: {a!r} != {e!r}"


def _sparse(shape: tuple[int, ...], dtype: type, density: float) -> np.ndarray:
    values = RNG.integers(1, 5, shape).astype(dtype)
    return np.where(RNG.random(shape) < density, values, np.zeros_like(values))


@pytest.mark.parametrize("elem,dtype", [(T.FLOAT, np.float32), (T.INT32, np.int32), (T.BOOL, np.bool_),
                                        (T.UINT8, np.uint8), (T.INT64, np.int64)])
def test_nonzero_of_run_time_data(elem: int, dtype: type) -> None:
    m = _model([helper.make_node("NonZero", ["x"], ["y"])], {"x": (elem, [2, 3, 4])}, {"y": T.INT64})
    _check(m, *[[_sparse((2, 3, 4), dtype, density)] for density in (0.0, 0.3, 1.0)])


def test_nonzero_of_a_symbolic_input_counts_nan_and_handles_empty_tensors() -> None:
    m = _model([helper.make_node("NonZero", ["x"], ["y"])], {"x": (T.FLOAT, ["n", 3])}, {"y": T.INT64})
    with_nan = np.array([[0, np.nan, 0], [-0.0, 2, 0]], np.float32)
    _check(m, [with_nan], [np.zeros((0, 3), np.float32)], [_sparse((5, 3), np.float32, 0.5)])


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_compress_with_a_run_time_condition(axis: int | None) -> None:
    attrs = {} if axis is None else {"axis": axis}
    length = {0: 3, 1: 2, -1: 4, None: 5}[axis]  # 1 and None: shorter than the axis (the rest is dropped)
    m = _model([helper.make_node("Compress", ["x", "c"], ["y"], **attrs)],
               {"x": (T.FLOAT, [3, 4]), "c": (T.BOOL, [length])}, {"y": T.FLOAT}, opset=11)
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    _check(m, [x, np.zeros(length, bool)], [x, np.ones(length, bool)], [x, RNG.random(length) < 0.5])


def test_compress_of_a_symbolic_input_by_a_longer_condition() -> None:
    m = _model([helper.make_node("Compress", ["x", "c"], ["y"], axis=0)],
               {"x": (T.INT64, ["n", 2]), "c": (T.BOOL, [4])}, {"y": T.INT64}, opset=11)
    x = np.arange(6, dtype=np.int64).reshape(3, 2)
    _check(m, [x, np.array([1, 0, 1, 0], bool)], [x[:0], np.array([0, 0, 0, 0], bool)])


@pytest.mark.parametrize("is_sorted", [0, 1])
@pytest.mark.parametrize("elem,dtype", [(T.INT64, np.int64), (T.FLOAT, np.float32)])
def test_unique_all_four_outputs(is_sorted: int, elem: int, dtype: type) -> None:
    m = _model([helper.make_node("Unique", ["x"], ["y", "indices", "inverse", "counts"], sorted=is_sorted)],
               {"x": (elem, [2, 5])}, {"y": elem, "indices": T.INT64, "inverse": T.INT64, "counts": T.INT64}, opset=11)
    _check(m, [np.array([[3, -1, 3, 2, -1], [5, 3, 0, 0, 2]], dtype)], [np.full((2, 5), 4, dtype)],
           [RNG.permutation(10).reshape(2, 5).astype(dtype)])


def test_unique_of_an_empty_input_and_values_only() -> None:
    m = _model([helper.make_node("Unique", ["x"], ["y"])], {"x": (T.DOUBLE, ["n"])}, {"y": T.DOUBLE}, opset=11)
    _check(m, [np.zeros(0, np.float64)], [np.array([2, 1, 2], np.float64)])


@pytest.mark.parametrize("elem,dtype", [(T.FLOAT, np.float32), (T.INT64, np.int64), (T.INT32, np.int32),
                                        (T.DOUBLE, np.float64)])
@pytest.mark.parametrize("largest", [0, 1])
def test_topk_with_a_run_time_k(elem: int, dtype: type, largest: int) -> None:
    m = _model([helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=0, largest=largest)],
               {"x": (elem, [6, 3]), "k": (T.INT64, [1])}, {"v": elem, "i": T.INT64}, opset=11)
    x = RNG.integers(0, 4, (6, 3)).astype(dtype)  # many ties: the lower index comes first
    _check(m, *[[x, np.array([k], np.int64)] for k in (0, 2, 6)])


def test_topk_k_larger_than_the_axis_fails_at_run_time_naming_the_node() -> None:
    m = _model([helper.make_node("TopK", ["x", "k"], ["v", "i"])],
               {"x": (T.FLOAT, [2, 3]), "k": (T.INT64, [1])}, {"v": T.FLOAT, "i": T.INT64}, opset=11)
    module = _module(m.SerializeToString())
    with pytest.raises(Exception, match=r"TopK.*k.*<= axis"):
        module.main.call(np.zeros((2, 3), np.float32), np.array([4], np.int64))


def test_one_module_nonzero_then_topk_at_several_sizes() -> None:
    """Positions of the non-zero entries of a run-time-sized mask, then the k best scores of x: every
    result size differs per call (0 non-zero entries included)."""
    nodes = [helper.make_node("NonZero", ["mask"], ["where"]),
             helper.make_node("TopK", ["x", "k"], ["best", "best_index"], axis=1)]
    m = _model(nodes, {"mask": (T.BOOL, ["n"]), "x": (T.FLOAT, [2, "m"]), "k": (T.INT64, [1])},
               {"where": T.INT64, "best": T.FLOAT, "best_index": T.INT64})
    sets = []
    for n, m_size, k in ((0, 1, 1), (5, 4, 0), (9, 7, 3), (3, 0, 0)):
        sets.append([RNG.random(n) < 0.5, RNG.standard_normal((2, m_size)).astype(np.float32), np.array([k], np.int64)])
    sets.append([np.zeros(4, bool), np.ones((2, 3), np.float32), np.array([3], np.int64)])
    _check(m, *sets)


@pytest.mark.parametrize("is_sorted", [0, 1])
@pytest.mark.parametrize("axis", [0, -1])
def test_unique_of_slices_along_an_axis(axis: int, is_sorted: int) -> None:
    m = _model([helper.make_node("Unique", ["x"], ["y", "indices", "inverse", "counts"], axis=axis, sorted=is_sorted)],
               {"x": (T.FLOAT, [3, "n"])}, {"y": T.FLOAT, "indices": T.INT64, "inverse": T.INT64, "counts": T.INT64},
               opset=11)
    columns = np.array([[2, 1, 2, 1, 0], [0, 3, 0, 3, 0], [1, 1, 1, 2, 0]], np.float32)
    _check(m, [columns], [columns[:, :1]], [np.ones((3, 4), np.float32)])


def test_unique_of_data_with_a_nan_fails_at_run_time() -> None:
    m = _model([helper.make_node("Unique", ["x"], ["y"])], {"x": (T.FLOAT, [3])}, {"y": T.FLOAT}, opset=11)
    with pytest.raises(IreeRuntimeError, match=r"^node '\w+' \(op UniqueCount\): an input holds a value this kernel "
                                               r"cannot compute with \(a NaN to sort, a non-finite size\) "
                                               r"\(kernel k\d+_uniquecount, code 4\)$"):
        _module(m.SerializeToString()).main.call(np.array([1, np.nan, 1], np.float32))
