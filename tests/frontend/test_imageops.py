"""CenterCropPad, AffineGrid, Col2Im (sizes given at run time) and DeformConv (static), built from
normalized ops in iree_py/frontends/onnx_imageops*.py. Each model is compiled ONCE with
iree_py.compile and run by the C runtime on the host, for the run-time-size ops with several sizes,
against the ONNX reference evaluator (float32 results within 1e-5 of the largest magnitude)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import iree_py
from iree_py.errors import IreePyError

from tests.e2e.harness import DEVICE

F, I64 = TensorProto.FLOAT, TensorProto.INT64
# the reference divides by size - 1 for a size-1 axis with align_corners (its result is still right)
pytestmark = pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")


def _model(op: str, inputs: list[tuple[str, int, list]], opset: int, **attrs) -> onnx.ModelProto:
    node = helper.make_node(op, [n for n, _, _ in inputs], ["y"], name=f"{op}_node", **attrs)
    graph = helper.make_graph([node], "imageops", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info("y", F, None)])
    opset_id = helper.make_opsetid("", opset)
    m = helper.make_model(graph, opset_imports=[opset_id])
    m.ir_version = helper.find_min_ir_version_for([opset_id])
    return m


def _load(m: onnx.ModelProto) -> iree_py.Module:
    return iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device=DEVICE["host"])


def _check(m: onnx.ModelProto, feeds: list[list[np.ndarray]]) -> None:
    """Compile once, run every feed, compare with the ONNX reference."""
    module = _load(m)
    reference = ReferenceEvaluator(m)
    names = [i.name for i in m.graph.input]
    for inputs in feeds:
        (actual,) = module.main.call(*inputs)
        (expected,) = reference.run(None, dict(zip(names, inputs)))
        params = [p.tolist() for p in inputs[1:] if p.dtype == np.int64]
        assert actual.shape == expected.shape, (actual.shape, expected.shape, params)
        scale = max(float(np.abs(expected).max(initial=0.0)), 1.0)
        np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-5 * scale, err_msg=str(params))


def _x(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _i(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def test_center_crop_pad_shape_at_run_time() -> None:
    x = _x(7, 6, 3)
    m = _model("CenterCropPad", [("x", F, [7, 6, 3]), ("shape", I64, [2])], opset=18, axes=[0, -2])
    _check(m, [[x, _i(4, 3)], [x, _i(10, 9)], [x, _i(7, 6)], [x, _i(5, 11)], [x, _i(1, 0)]])


def test_affine_grid_size_at_run_time() -> None:
    theta = _x(2, 2, 3)
    for align in (0, 1):
        m = _model("AffineGrid", [("theta", F, [2, 2, 3]), ("size", I64, [4])], opset=20, align_corners=align)
        _check(m, [[theta, _i(2, 1, 3, 4)], [theta, _i(2, 1, 1, 5)], [theta, _i(2, 3, 6, 2)]])


def test_affine_grid_3d_size_at_run_time() -> None:
    theta = _x(1, 3, 4)
    m = _model("AffineGrid", [("theta", F, [1, 3, 4]), ("size", I64, [5])], opset=20, align_corners=1)
    _check(m, [[theta, _i(1, 1, 2, 3, 4)], [theta, _i(1, 2, 4, 1, 2)]])


def test_col2im_sizes_at_run_time() -> None:
    # input [1, 6, 6]: C * B = 6 and L = 6 fit several (image_shape, block_shape) pairs
    x = _x(1, 6, 6)
    m = _model("Col2Im", [("x", F, [1, 6, 6]), ("image_shape", I64, [2]), ("block_shape", I64, [2])], opset=18,
               strides=[1, 2], pads=[0, 1, 0, 1], dilations=[1, 1])
    _check(m, [[x, _i(3, 5), _i(2, 3)], [x, _i(2, 4), _i(1, 1)], [x, _i(5, 2), _i(3, 1)]])


def test_col2im_inconsistent_sizes_fail_at_run_time() -> None:
    m = _model("Col2Im", [("x", F, [1, 6, 6]), ("image_shape", I64, [2]), ("block_shape", I64, [2])], opset=18)
    module = _load(m)
    with pytest.raises(Exception, match="Col2Im_node"):
        module.main.call(_x(1, 6, 6), _i(5, 5), _i(2, 2))  # C * 4 != 6


def test_deform_conv_groups_strides_dilations_mask_bias() -> None:
    x, w = _x(2, 4, 6, 5, seed=1), _x(6, 2, 2, 3, seed=2)
    offset = 1.5 * _x(2, 2 * 2 * 6, 3, 2, seed=3)
    mask, bias = np.abs(_x(2, 2 * 6, 3, 2, seed=4)), _x(6, seed=5)
    m = _model("DeformConv", [("X", F, [2, 4, 6, 5]), ("W", F, [6, 2, 2, 3]), ("offset", F, [2, 24, 3, 2]),
                              ("B", F, [6]), ("mask", F, [2, 12, 3, 2])], opset=19,
               group=2, offset_group=2, strides=[2, 2], dilations=[2, 1], pads=[1, 0, 1, 1], kernel_shape=[2, 3])
    _check(m, [[x, w, offset, bias, mask]])


def test_deform_conv_rejects_f64_at_compile_time() -> None:
    node = helper.make_node("DeformConv", ["X", "W", "offset"], ["y"], name="DeformConv_node", kernel_shape=[1, 1])
    d = TensorProto.DOUBLE
    graph = helper.make_graph([node], "imageops", [helper.make_tensor_value_info("X", d, [1, 1, 2, 2]),
                                                   helper.make_tensor_value_info("W", d, [1, 1, 1, 1]),
                                                   helper.make_tensor_value_info("offset", d, [1, 2, 2, 2])],
                              [helper.make_tensor_value_info("y", d, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    with pytest.raises(IreePyError, match="DeformConv_node.*only float32"):
        iree_py.compile(m.SerializeToString(), target="host")
