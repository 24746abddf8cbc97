"""CumSum, CumProd, ArgMax, ArgMin and Hardmax on the Vulkan target (spirv/cumulative.py,
argminmax.py, softmax.py) against onnxruntime: exclusive and reverse running sums in f32, f64, i32
and i64, the tie rules of select_last_index on inputs with repeated values, Hardmax's first
maximum on ties along every axis, and TopK (spirv/topk.py) on f32, f64, i32, i64 and u64 with ties
(the lower index first), largest and smallest, values and indices, and NaN never picked."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from harness import check_against_reference, model, run_iree
from test_ops import retyped

rng = np.random.default_rng(11)


def _cumulative(op: str, shape: tuple[int, ...], dtype: int, axis: int, **attrs):
    m = model([helper.make_node(op, ["x", "a"], ["y"], name="scan", **attrs)], {"x": shape}, ["y"],
              {"a": np.array(axis, np.int64)}, opset=14)
    return retyped(m, x=dtype, y=dtype)


def _values(shape: tuple[int, ...], dtype: int) -> np.ndarray:
    if dtype in (TensorProto.FLOAT, TensorProto.DOUBLE):
        return rng.standard_normal(shape).astype(helper.tensor_dtype_to_np_dtype(dtype))
    return rng.integers(-50, 50, shape).astype(helper.tensor_dtype_to_np_dtype(dtype))


CUMULATIVE = {
    "cumsum_f32_axis1": ("CumSum", (3, 5, 4), TensorProto.FLOAT, 1, {}),
    "cumsum_f32_exclusive_reverse": ("CumSum", (4, 6), TensorProto.FLOAT, -1, {"exclusive": 1, "reverse": 1}),
    "cumsum_i32_reverse": ("CumSum", (7,), TensorProto.INT32, 0, {"reverse": 1}),
    "cumsum_i64_exclusive": ("CumSum", (2, 5), TensorProto.INT64, 1, {"exclusive": 1}),
    "cumsum_f64_reverse": ("CumSum", (3, 4), TensorProto.DOUBLE, 0, {"reverse": 1}),
    "cumsum_f64_exclusive": ("CumSum", (9,), TensorProto.DOUBLE, 0, {"exclusive": 1}),
}


@pytest.mark.parametrize("case", sorted(CUMULATIVE))
def test_cumulative_matches_onnxruntime_on_vulkan(case: str):
    op, shape, dtype, axis, attrs = CUMULATIVE[case]
    check_against_reference(_cumulative(op, shape, dtype, axis, **attrs), "vulkan", inputs=[_values(shape, dtype)])


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("last", [0, 1])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_argminmax_ties_match_onnxruntime_on_vulkan(op: str, last: int, axis: int):
    m = model([helper.make_node(op, ["x"], ["y"], name="arg", axis=axis, keepdims=1, select_last_index=last)],
              {"x": (3, 4, 5)}, ["y"], opset=13)
    m.graph.output[0].type.tensor_type.elem_type = TensorProto.INT64
    x = rng.integers(0, 3, (3, 4, 5)).astype(np.float32)  # many ties
    check_against_reference(m, "vulkan", inputs=[x])


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_hardmax_takes_the_first_maximum_on_vulkan(axis: int):
    m = model([helper.make_node("Hardmax", ["x"], ["y"], name="hardmax", axis=axis)], {"x": (3, 4, 5)}, ["y"],
              opset=13)
    x = rng.integers(0, 3, (3, 4, 5)).astype(np.float32)  # many ties
    check_against_reference(m, "vulkan", inputs=[x])


TOPK = {
    "f32_axis1_ties": ((3, 6, 4), TensorProto.FLOAT, 1, 3, 1),
    "f32_last_axis_smallest": ((2, 3, 7), TensorProto.FLOAT, -1, 4, 0),
    "f64_axis0": ((5, 3), TensorProto.DOUBLE, 0, 2, 1),
    "i32_smallest": ((4, 9), TensorProto.INT32, 1, 5, 0),
    "i64_all": ((6,), TensorProto.INT64, 0, 6, 1),
}


def _topk(shape: tuple[int, ...], dtype: int, axis: int, k: int, largest: int):
    m = model([helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", axis=axis, largest=largest)],
              {"x": shape}, ["v", "i"], {"k": np.array([k], np.int64)}, opset=11)
    m.graph.output[1].type.tensor_type.elem_type = TensorProto.INT64
    return retyped(m, x=dtype, v=dtype)


@pytest.mark.parametrize("case", sorted(TOPK))
def test_topk_matches_onnxruntime_on_vulkan(case: str):
    shape, dtype, axis, k, largest = TOPK[case]
    x = rng.integers(0, 4, shape).astype(helper.tensor_dtype_to_np_dtype(dtype))  # many ties
    check_against_reference(_topk(shape, dtype, axis, k, largest), "vulkan", inputs=[x])


def test_topk_never_picks_nan_on_vulkan():
    x = np.array([[1.0, np.nan, 3.0, 2.0], [np.nan, np.nan, 5.0, np.nan]], np.float32)
    values, indices = run_iree(_topk((2, 4), TensorProto.FLOAT, 1, 2, 1), [x], "vulkan")
    assert np.array_equal(indices, [[2, 3], [2, -1]]) and np.array_equal(values, [[3.0, 2.0], [5.0, 0.0]])


def test_topk_u64_compares_unsigned_on_vulkan():
    """onnxruntime has no u64 TopK at opset 11: numpy's stable order (values past 2**63 too)."""
    x = np.array([[3, 2**63 + 5, 7, 2**64 - 1, 7], [0, 1, 2**63, 1, 2]], np.uint64)
    values, indices = run_iree(_topk((2, 5), TensorProto.UINT64, 1, 3, 1), [x], "vulkan")
    order = np.array([sorted(range(5), key=lambda j: (-int(row[j]), j))[:3] for row in x])
    assert np.array_equal(indices, order) and np.array_equal(values, np.take_along_axis(x, order, 1))
