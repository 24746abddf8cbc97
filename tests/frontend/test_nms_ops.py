"""NonMaxSuppression (two passes: frontends/onnx/detection.py, ir/ops/detection.py, codegen/llvm/detection.py) and RoiAlign
(the same files). Each model is compiled once and run in the C runtime on host at several
inputs; NMS results (selected indices) must equal onnxruntime's exactly, RoiAlign's within 1e-5
(both f32, same operation order), and so must the numpy reference of the imported IR."""
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

RNG = np.random.default_rng(11)


def _model(node: onnx.NodeProto, inputs: dict, opset: int, out: int) -> onnx.ModelProto:
    graph = helper.make_graph([node], "nms", [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
                              [helper.make_tensor_value_info(node.output[0], out, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


@functools.cache
def _module(m_bytes: bytes) -> iree_py.Module:
    return iree_py.load(iree_py.compile(m_bytes, target="host"), device="local")


def _check(m: onnx.ModelProto, input_sets: list[list[np.ndarray]], exact: bool) -> None:
    module = _module(m.SerializeToString())
    graph = import_onnx(m)
    for inputs in input_sets:
        expected = run_onnxruntime(m, inputs)[0]
        for where, actual in (("runtime", module.main.call(*inputs)[0]), ("reference", evaluate(graph, inputs)[0])):
            actual = np.asarray(actual)
            assert actual.dtype == expected.dtype and actual.shape == expected.shape, f"{where}: {actual!r} != {expected!r}"
            if exact:
                assert np.array_equal(actual, expected), f"{where}: {actual!r} != {expected!r}"
            else:
                np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5, err_msg=where)


def _boxes(batches: int, n: int) -> np.ndarray:
    """Boxes on a small grid (many overlaps, some identical), corners in either order."""
    corners = RNG.integers(0, 6, (batches, n, 2)).astype(np.float32)            # [y1, x1]
    far = corners + RNG.integers(1, 4, (batches, n, 2)).astype(np.float32)      # [y2, x2]
    flip = (RNG.random((batches, n, 1)) < 0.3)
    return np.concatenate([np.where(flip, far, corners), np.where(flip, corners, far)], axis=-1)


def _scores(batches: int, classes: int, n: int) -> np.ndarray:
    return (RNG.integers(0, 10, (batches, classes, n)) / 10).astype(np.float32)  # ties on purpose


NMS_INPUTS = ("boxes", "scores", "max_output", "iou", "threshold")


def _nms_model(n: int | str, classes: int, inputs: int, center: int = 0) -> onnx.ModelProto:
    types = {"boxes": (T.FLOAT, [2, n, 4]), "scores": (T.FLOAT, [2, classes, n]), "max_output": (T.INT64, [1]),
             "iou": (T.FLOAT, [1]), "threshold": (T.FLOAT, [1])}
    node = helper.make_node("NonMaxSuppression", list(NMS_INPUTS[:inputs]), ["selected"], center_point_box=center)
    return _model(node, {k: types[k] for k in NMS_INPUTS[:inputs]}, 11, T.INT64)


def _nms_inputs(n: int, classes: int, max_output: int, iou: float, threshold: float, center: bool = False) -> list:
    boxes = _boxes(2, n)
    if center:  # [x_center, y_center, width, height]
        boxes = np.concatenate([RNG.integers(0, 6, (2, n, 2)), RNG.integers(1, 4, (2, n, 2))], -1).astype(np.float32)
    return [boxes, _scores(2, classes, n), np.array([max_output], np.int64), np.array([iou], np.float32),
            np.array([threshold], np.float32)]


def test_nms_static_boxes_at_several_limits_and_thresholds() -> None:
    m = _nms_model(7, 3, 5)
    _check(m, [_nms_inputs(7, 3, k, iou, t) for k, iou, t in
               ((0, 0.5, 0.0), (2, 0.5, 0.3), (100, 0.3, 0.0), (100, 0.0, 0.5), (3, 1.0, 0.95))], exact=True)


def test_nms_symbolic_box_count_center_format_and_missing_score_threshold() -> None:
    _check(_nms_model("n", 2, 4, center=1), [_nms_inputs(n, 2, 5, 0.4, 0.0, center=True)[:4] for n in (1, 6, 12)],
           exact=True)
    _check(_nms_model("n", 2, 4), [_nms_inputs(n, 2, 4, 0.5, 0.0)[:4] for n in (3, 9)], exact=True)


def _roi_model(mode: str, transform: str, ratio: int, opset: int = 16) -> onnx.ModelProto:
    extra = {"coordinate_transformation_mode": transform} if opset >= 16 else {}
    node = helper.make_node("RoiAlign", ["x", "rois", "batch"], ["y"], mode=mode, output_height=3, output_width=4,
                            sampling_ratio=ratio, spatial_scale=0.5, **extra)
    return _model(node, {"x": (T.FLOAT, [2, 3, 8, 9]), "rois": (T.FLOAT, [5, 4]), "batch": (T.INT64, [5])}, opset, T.FLOAT)


def _roi_inputs(batch: list[int] | None = None) -> list[np.ndarray]:
    x = RNG.standard_normal((2, 3, 8, 9)).astype(np.float32)
    start = RNG.uniform(-4, 16, (5, 2))
    rois = np.concatenate([start, start + RNG.uniform(0.5, 12, (5, 2))], 1).astype(np.float32)  # some leave the image
    return [x, rois, np.array(batch if batch is not None else RNG.integers(0, 2, 5), np.int64)]


@pytest.mark.parametrize("mode,transform,ratio,opset", [("avg", "half_pixel", 0, 16), ("max", "half_pixel", 2, 16),
                                                        ("avg", "output_half_pixel", 2, 16), ("max", "", 0, 10)])
def test_roi_align_with_run_time_rois(mode: str, transform: str, ratio: int, opset: int) -> None:
    _check(_roi_model(mode, transform, ratio, opset), [_roi_inputs(), _roi_inputs()], exact=False)


def test_roi_align_refuses_a_batch_index_out_of_range_at_run_time() -> None:
    module = _module(_roi_model("avg", "half_pixel", 0).SerializeToString())
    with pytest.raises(IreeRuntimeError, match=r"^node '\w+' \(op RoiAlign\): an index is outside the range of its "
                                               r"axis \(kernel k\d+_roialign, code 3\)$"):
        module.main.call(*_roi_inputs([0, 1, 2, 0, 1]))
