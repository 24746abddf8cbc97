"""Reduce* with `axes` given at run time (frontends/onnx/reduce.py -> ReduceRuntimeAxes, the reduce_rt
kernel): one module per op and keepdims, compiled once and run in the C runtime on host at several
axes values (each giving another output shape), compared with onnxruntime within 1e-4 of the largest
reference value (tests/e2e/harness.py); the numpy reference of the IR is checked the same way."""
from __future__ import annotations

import functools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import iree_py
from iree_py.frontends.onnx import import_onnx
from iree_py.ir.reference import evaluate
from tests.e2e.harness import assert_close, run_onnxruntime

OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
       "ReduceLogSumExp", "ReduceSumSquare"]
SHAPE = (2, 3, 4)
AXES = [[1], [-1, 0], [2, 0]]  # one axis, a negative one, and two that are not one contiguous run


def reduce_model(op: str, keepdims: int, axes_count: int, noop: int = 0, elem: int = TensorProto.FLOAT,
                 shape: tuple[int, ...] = SHAPE) -> onnx.ModelProto:
    opset = 13 if op == "ReduceSum" else 18
    node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims, noop_with_empty_axes=noop)
    graph = helper.make_graph([node], "rt_reduce", [
        helper.make_tensor_value_info("x", elem, list(shape)),
        helper.make_tensor_value_info("axes", TensorProto.INT64, [axes_count])],
        [helper.make_tensor_value_info("y", elem, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


@functools.cache
def compiled(op: str, keepdims: int, axes_count: int, noop: int = 0) -> bytes:
    return iree_py.compile(reduce_model(op, keepdims, axes_count, noop).SerializeToString(), target="host")


def data(op: str, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)
    return np.abs(x) + 0.5 if op == "ReduceLogSum" else x  # log of a positive sum


@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("op", OPS)
def test_one_module_serves_every_axes_value(op: str, keepdims: int) -> None:
    x = data(op)
    for count in (1, 2):
        module = iree_py.load(compiled(op, keepdims, count), device="local")
        for axes in (a for a in AXES if len(a) == count):
            inputs = [x, np.array(axes, np.int64)]
            assert_close(module.main.call(*inputs), run_onnxruntime(reduce_model(op, keepdims, count), inputs))


def test_the_same_module_gives_different_output_shapes() -> None:
    module = iree_py.load(compiled("ReduceSum", 0, 1), device="local")
    x = data("ReduceSum")
    shapes = [module.main.call(x, np.array([axis], np.int64))[0].shape for axis in (0, 1, -1)]
    assert shapes == [(3, 4), (2, 4), (2, 3)]


@pytest.mark.parametrize("noop", [0, 1])
@pytest.mark.parametrize("op", ["ReduceSum", "ReduceL2"])
def test_empty_axes(op: str, noop: int) -> None:
    inputs = [data(op), np.zeros(0, np.int64)]
    module = iree_py.load(compiled(op, 1, 0, noop), device="local")
    assert_close(module.main.call(*inputs), run_onnxruntime(reduce_model(op, 1, 0, noop), inputs))


def test_a_repeated_axis_counts_once_with_keepdims() -> None:
    inputs = [data("ReduceSum"), np.array([1, -2], np.int64)]
    module = iree_py.load(compiled("ReduceSum", 1, 2), device="local")
    assert_close(module.main.call(*inputs), run_onnxruntime(reduce_model("ReduceSum", 1, 2), inputs))


@pytest.mark.parametrize("keepdims, axes", [(1, [3]), (1, [-4, 0]), (0, [1, 1])])
def test_bad_axes_fail_at_run_time(keepdims: int, axes: list[int]) -> None:
    module = iree_py.load(compiled("ReduceSum", keepdims, len(axes)), device="local")
    with pytest.raises(Exception, match="axes given at run time must lie in"):
        module.main.call(data("ReduceSum"), np.array(axes, np.int64))


def test_empty_reduced_axis_gives_the_start_values() -> None:
    shape = (2, 0, 3)
    x = np.zeros(shape, np.float32)
    for op in ("ReduceSum", "ReduceProd", "ReduceMax", "ReduceL2"):
        m = reduce_model(op, 1, 1, shape=shape)
        module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device="local")
        inputs = [x, np.array([1], np.int64)]
        actual, expected = module.main.call(*inputs)[0], run_onnxruntime(m, inputs)[0]
        assert actual.shape == expected.shape == (2, 1, 3)
        np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_bool_max_and_min(op: str) -> None:
    m = reduce_model(op, 0, 1, elem=TensorProto.BOOL, shape=(4, 3))
    x = np.random.default_rng(3).integers(0, 2, (4, 3)).astype(bool)
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device="local")
    reduce = np.max if op == "ReduceMax" else np.min  # numpy: onnxruntime has no bool ReduceMax before opset 20
    for axis in (0, 1):
        np.testing.assert_array_equal(module.main.call(x, np.array([axis], np.int64))[0], reduce(x, axis=axis))


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceLogSumExp"])
def test_numpy_reference_of_the_ir(op: str) -> None:
    graph = import_onnx(reduce_model(op, 0, 2).SerializeToString())
    inputs = [data(op), np.array([2, 0], np.int64)]
    assert_close(evaluate(graph, inputs), run_onnxruntime(reduce_model(op, 0, 2), inputs))


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax"])
def test_keepdims_0_over_every_axis_gives_a_scalar(op: str) -> None:
    module = iree_py.load(compiled(op, 0, 3), device="local")
    x = data(op)
    for axes in ([0, 1, 2], [2, -3, 1]):
        inputs = [x, np.array(axes, np.int64)]
        assert_close(module.main.call(*inputs), run_onnxruntime(reduce_model(op, 0, 3), inputs))
    with pytest.raises(Exception, match="be unique"):
        module.main.call(x, np.array([0, 1, 1], np.int64))


def test_more_axes_than_the_rank_with_keepdims_0_is_refused_at_compile_time() -> None:
    with pytest.raises(Exception, match="keepdims=0 with 4 axes given at run time for rank 3"):
        iree_py.compile(reduce_model("ReduceSum", 0, 4).SerializeToString(), target="host")


def test_symbolic_input_with_run_time_axes_is_refused_at_compile_time() -> None:
    m = reduce_model("ReduceSum", 1, 1)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    with pytest.raises(Exception, match="symbolic dims.*over axes given at run time"):
        iree_py.compile(m.SerializeToString(), target="host")
