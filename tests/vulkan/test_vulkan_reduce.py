"""Reductions whose axes arrive at run time (kind reduce_rt, spirv/reduce.py) on the Vulkan target
against onnxruntime: every reducer, keepdims 0 and 1, negative and unsorted axes, an empty axes
list (all axes, or none with noop_with_empty_axes) and an empty reduction."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from harness import check_against_reference, model, run_iree, run_reference

OPS = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
       "ReduceLogSumExp", "ReduceSumSquare")


def _runtime_axes(op: str, shape: tuple[int, ...], axes_count: int, **attrs):
    m = model([helper.make_node(op, ["x", "axes"], ["y"], name="reduce", **attrs)], {"x": shape, "axes": (axes_count,)},
              ["y"], opset=18)
    m.graph.input[1].type.tensor_type.elem_type = TensorProto.INT64
    return m


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_runtime_axes_match_onnxruntime_on_vulkan(op: str, keepdims: int):
    x = np.random.default_rng(3).uniform(0.5, 2.0, (3, 4, 5)).astype(np.float32)
    m = _runtime_axes(op, (3, 4, 5), 2, keepdims=keepdims)
    check_against_reference(m, "vulkan", inputs=[x, np.array([2, -3], np.int64)])


@pytest.mark.parametrize("noop", [0, 1])
def test_empty_axes_reduce_all_or_nothing_on_vulkan(noop: int):
    x = np.random.default_rng(4).standard_normal((2, 3, 4)).astype(np.float32)
    m = _runtime_axes("ReduceLogSumExp", (2, 3, 4), 0, keepdims=1, noop_with_empty_axes=noop)
    check_against_reference(m, "vulkan", inputs=[x, np.zeros((0,), np.int64)])


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceProd", "ReduceMax"])
def test_empty_reduction_gives_the_start_value_on_vulkan(op: str):
    m = _runtime_axes(op, (2, 0, 4), 1, keepdims=1)
    inputs = [np.zeros((2, 0, 4), np.float32), np.array([1], np.int64)]
    np.testing.assert_array_equal(run_iree(m, inputs, "vulkan")[0], run_reference(m, inputs)[0])  # -inf for max
