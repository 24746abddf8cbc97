"""The indexing kernels on the Vulkan target (spirv/gather_scatter.py) against onnxruntime: wrapped
negative indices, i32 and i64 indices, 4- and 8-byte elements, GatherND's batch dims and
ScatterElements' and ScatterND's reductions over duplicate indices (applied in index order); and
NonZero (spirv/nonzero.py: count, then coordinates) on f32 with NaN, bool, i64 and an all-zero input
against numpy exactly."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from harness import check_against_reference, model, run_iree
from test_ops import retyped

rng = np.random.default_rng(7)


def _indexing_model(op: str, data_shape: tuple[int, ...], indices: np.ndarray, dtype: int = TensorProto.FLOAT,
                    updates: tuple[int, ...] | None = None, **attrs):
    inputs = {"x": data_shape} if updates is None else {"x": data_shape, "u": updates}
    ins = ["x", "i"] if updates is None else ["x", "i", "u"]
    m = model([helper.make_node(op, ins, ["y"], name=f"{op.lower()}_node", **attrs)], inputs, ["y"], {"i": indices},
              opset=18)
    return retyped(m, y=dtype, **{name: dtype for name in inputs})


def _data(shape: tuple[int, ...], dtype: int) -> np.ndarray:
    if dtype == TensorProto.FLOAT:
        return rng.standard_normal(shape).astype(np.float32)
    return rng.integers(-2**40 if dtype == TensorProto.INT64 else -1000, 1000, shape).astype(
        helper.tensor_dtype_to_np_dtype(dtype))


CASES = {
    "gather_elements_axis1_i64_negative": ("GatherElements", (3, 4, 5), np.array(
        rng.integers(-4, 4, (3, 2, 5)), np.int64), TensorProto.FLOAT, None, {"axis": 1}),
    "gather_elements_axis0_i32_on_i64": ("GatherElements", (4, 3), rng.integers(-4, 4, (2, 3)).astype(np.int32),
                                         TensorProto.INT64, None, {"axis": 0}),
    "gather_nd_batch1": ("GatherND", (2, 3, 4), np.array([[[1, 2], [0, -1]], [[2, 0], [-3, 3]]], np.int64),
                         TensorProto.FLOAT, None, {"batch_dims": 1}),
    "gather_nd_slices_i64_data": ("GatherND", (3, 4, 2), np.array([[2], [0], [-1]], np.int64), TensorProto.INT64,
                                  None, {}),
    "scatter_elements_none": ("ScatterElements", (4, 5), np.array([[1, -1, 0], [3, 2, 0]], np.int64),
                              TensorProto.FLOAT, (2, 3), {"axis": 0}),
    "scatter_elements_add_duplicates": ("ScatterElements", (3, 4), np.array([[1, 1, -1], [0, 0, 0]], np.int64),
                                        TensorProto.FLOAT, (2, 3), {"axis": 1, "reduction": "add"}),
    "scatter_elements_max_i32": ("ScatterElements", (3, 4), np.array([[1, 1, 2], [0, 0, 3]], np.int32),
                                 TensorProto.INT32, (2, 3), {"axis": 1, "reduction": "max"}),
    "scatter_nd_rows_mul_duplicates": ("ScatterND", (4, 3), np.array([[1], [-1], [1]], np.int64), TensorProto.FLOAT,
                                       (3, 3), {"reduction": "mul"}),
    "scatter_nd_elements_none_i64": ("ScatterND", (3, 4), np.array([[0, 1], [2, -1]], np.int64), TensorProto.INT64,
                                     (2,), {}),
    "scatter_elements_none_i64": ("ScatterElements", (5,), np.array([4, 0, -2], np.int64), TensorProto.INT64, (3,),
                                  {"axis": 0}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_indexing_kernel_matches_onnxruntime_on_vulkan(case: str):
    op, shape, indices, dtype, updates, attrs = CASES[case]
    m = _indexing_model(op, shape, indices, dtype, updates, **attrs)
    inputs = [_data(shape, dtype)] + ([] if updates is None else [_data(updates, dtype)])
    check_against_reference(m, "vulkan", inputs=inputs)


NONZERO = {
    "f32_nan": (np.array([[0.0, np.nan, 2.0], [-0.0, 0.0, -1.5]], np.float32), TensorProto.FLOAT),
    "bool_rank3": (rng.integers(0, 2, (2, 3, 4)).astype(bool), TensorProto.BOOL),
    "i64": (rng.integers(-2, 3, (5, 2)).astype(np.int64), TensorProto.INT64),
    "all_zero": (np.zeros((3, 2), np.float32), TensorProto.FLOAT),
}


@pytest.mark.parametrize("case", sorted(NONZERO))
def test_nonzero_matches_numpy_on_vulkan(case: str):
    x, dtype = NONZERO[case]
    m = model([helper.make_node("NonZero", ["x"], ["y"], name="nonzero")], {"x": x.shape}, ["y"], opset=13)
    m = retyped(m, x=dtype, y=TensorProto.INT64)
    (y,) = run_iree(m, [x], "vulkan")
    assert np.array_equal(y, np.array(np.nonzero(x), np.int64).reshape(x.ndim, -1))
