"""NonMaxSuppression as two data-dependent passes (the pattern of ops_datadep.py): a selection op
writes, per batch and class, the chosen box indices; NonZeroCount of that selection is read into a
symbol n (`graph.symbol_sources`); an output op writes the [n, 3] triples.

  NmsSelect  boxes f32[B, N, 4], scores f32[B, C, N], max_output i64 (1 element), iou_threshold f32
             (1 element), score_threshold f32 (1 element) -> i64[B, C, N]; attrs center_point_box
             (0: [y1, x1, y2, x2] of any two opposite corners, 1: [x_center, y_center, width, height]),
             use_score_threshold (0: every box is a candidate). Entry [b, c, k] is 1 + the index of
             the k-th box selected for batch b and class c, 0 past the last one (ONNX
             NonMaxSuppression: candidates by score descending, ties by lower index; a box is kept
             when its IoU with every kept box is <= iou_threshold; at most max(max_output, 0) per class)
  NmsOutput  selection i64[B, C, N] (NmsSelect), count i64[1] (NonZeroCount of the selection);
             attrs count (the symbol n) -> i64[n, 3]: (batch, class, box) in batch, class, selection order
"""
from __future__ import annotations

from typing import Any

from iree_py.ir.opdef import OpDef
from iree_py.ir.ops_datadep import _count_attr, _count_tensor
from iree_py.ir.symbols import dim
from iree_py.ir.types import DType, TensorType


def _scalar(t: TensorType, dtype: DType, what: str) -> None:
    if t.dtype != dtype or t.shape not in ((), (1,)):
        raise ValueError(f"NmsSelect: {what} must be a single {dtype.value} element, got {t}")


def _nms_select(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    boxes, scores, max_output, iou, score_threshold = inputs
    if boxes.rank != 3 or boxes.shape[2] != 4:
        raise ValueError(f"NmsSelect: boxes must be [batch, boxes, 4], got {boxes}")
    if scores.dtype != DType.f32 or scores.rank != 3:
        raise ValueError(f"NmsSelect: scores must be f32 [batch, classes, boxes], got {scores}")
    if dim(scores.shape[0]) != dim(boxes.shape[0]) or dim(scores.shape[2]) != dim(boxes.shape[1]):
        raise ValueError(f"NmsSelect: scores {scores} do not match boxes {boxes} (batch and box counts)")
    _scalar(max_output, DType.i64, "max_output_boxes_per_class")
    _scalar(iou, DType.f32, "iou_threshold")
    _scalar(score_threshold, DType.f32, "score_threshold")
    if attrs["center_point_box"] not in (0, 1) or attrs["use_score_threshold"] not in (0, 1):
        raise ValueError(f"NmsSelect: center_point_box {attrs['center_point_box']} and use_score_threshold "
                         f"{attrs['use_score_threshold']} must be 0 or 1")
    return [TensorType(DType.i64, (boxes.shape[0], scores.shape[1], boxes.shape[1]))]


def _nms_output(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    selection, count_t = inputs
    if selection.dtype != DType.i64 or selection.rank != 3:
        raise ValueError(f"NmsOutput: selection must be i64 [batch, classes, boxes], got {selection}")
    _count_tensor(count_t, "NmsOutput")
    return [TensorType(DType.i64, (_count_attr(attrs, "NmsOutput"), 3))]


NMS_OP_DEFS = [
    OpDef("NmsSelect", ("center_point_box", "use_score_threshold"), 5, 5, _nms_select),
    OpDef("NmsOutput", ("count",), 2, 2, _nms_output, dtypes=frozenset({DType.i64})),
]


def _roi_align(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    """RoiAlign  X f32[N, C, H, W], rois f32[R, 4] ([x1, y1, x2, y2]), batch_indices i64[R] -> f32[R, C,
    output_height, output_width]; attrs mode (avg/max), output_height, output_width, sampling_ratio (0:
    ceil(roi size / output size) samples per bin), spatial_scale, half_pixel (1: coordinates shifted by
    -0.5, ONNX half_pixel; 0: output_half_pixel, roi sizes at least 1)."""
    x, rois, batch_indices = inputs
    if x.rank != 4:
        raise ValueError(f"RoiAlign: X must be [N, C, H, W], got {x}")
    if rois.dtype != DType.f32 or rois.rank != 2 or rois.shape[1] != 4:
        raise ValueError(f"RoiAlign: rois must be f32 [num_rois, 4], got {rois}")
    if batch_indices.dtype != DType.i64 or batch_indices.rank != 1 or dim(batch_indices.shape[0]) != dim(rois.shape[0]):
        raise ValueError(f"RoiAlign: batch_indices must be i64 [num_rois] matching rois {rois}, got {batch_indices}")
    if attrs["mode"] not in ("avg", "max") or attrs["half_pixel"] not in (0, 1):
        raise ValueError(f"RoiAlign: mode {attrs['mode']!r} must be avg or max, half_pixel 0 or 1")
    height, width, ratio = int(attrs["output_height"]), int(attrs["output_width"]), int(attrs["sampling_ratio"])
    if height < 1 or width < 1 or ratio < 0:
        raise ValueError(f"RoiAlign: output {height}x{width} must be positive, sampling_ratio {ratio} >= 0")
    return [TensorType(DType.f32, (rois.shape[0], x.shape[1], height, width))]


ROI_ALIGN_ATTRS = ("mode", "output_height", "output_width", "sampling_ratio", "spatial_scale", "half_pixel")
NMS_OP_DEFS.append(OpDef("RoiAlign", ROI_ALIGN_ATTRS, 3, 3, _roi_align))
