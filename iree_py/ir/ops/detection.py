"""NonMaxSuppression as two data-dependent passes (the pattern of data_dependent.py): a selection op
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
  RoiAlign   ONNX RoiAlign (X, rois f32[R, 4], batch_indices) -> f32[R, C, output_height, output_width]

The references compute in f32 as onnxruntime does.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.ir.opdef import Kernel, OpDef
from iree_py.ir.ops.data_dependent import _count_attr, _count_tensor
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


# --- numpy reference -------------------------------------------------------------------------------

def _corners(box: np.ndarray, center_point_box: int) -> tuple[np.float32, ...]:
    """(x_min, x_max, y_min, y_max) of one box."""
    if center_point_box:
        x, y, w, h = (np.float32(v) for v in box)
        half_w, half_h = w / np.float32(2), h / np.float32(2)
        return x - half_w, x + half_w, y - half_h, y + half_h
    y1, x1, y2, x2 = (np.float32(v) for v in box)
    return min(x1, x2), max(x1, x2), min(y1, y2), max(y1, y2)


def suppresses(a: np.ndarray, b: np.ndarray, center_point_box: int, iou_threshold: np.float32) -> bool:
    """True when boxes a and b overlap by IoU > iou_threshold (onnxruntime's SuppressByIOU)."""
    ax0, ax1, ay0, ay1 = _corners(a, center_point_box)
    bx0, bx1, by0, by1 = _corners(b, center_point_box)
    ix0, ix1, iy0, iy1 = max(ax0, bx0), min(ax1, bx1), max(ay0, by0), min(ay1, by1)
    if ix1 <= ix0 or iy1 <= iy0:
        return False
    inter = (ix1 - ix0) * (iy1 - iy0)
    area_a, area_b = (ax1 - ax0) * (ay1 - ay0), (bx1 - bx0) * (by1 - by0)
    union = area_a + area_b - inter
    if inter <= 0 or area_a <= 0 or area_b <= 0 or union <= 0:
        return False
    return bool(inter / union > iou_threshold)


def nms_select(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    boxes, scores = ins[0].astype(np.float32), ins[1].astype(np.float32)
    max_output = max(int(np.asarray(ins[2]).reshape(-1)[0]), 0)
    iou, threshold = np.float32(np.asarray(ins[3]).reshape(-1)[0]), np.float32(np.asarray(ins[4]).reshape(-1)[0])
    batches, classes, n = scores.shape
    out = np.zeros((batches, classes, n), np.int64)
    for b in range(batches):
        for c in range(classes):
            s = scores[b, c]
            order = sorted((j for j in range(n) if not np.isnan(s[j])
                            and (not attrs["use_score_threshold"] or s[j] > threshold)), key=lambda j: (-s[j], j))
            kept: list[int] = []
            for j in order:
                if len(kept) >= max_output:
                    break
                if not any(suppresses(boxes[b, k], boxes[b, j], attrs["center_point_box"], iou) for k in kept):
                    kept.append(j)
            out[b, c, :len(kept)] = np.array(kept, np.int64) + 1
    return out


def nms_output(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    b, c, k = np.nonzero(ins[0])
    return np.stack([b, c, ins[0][b, c, k] - 1], axis=1).astype(np.int64).reshape(-1, 3)


def _bilinear_terms(y: np.float32, x: np.float32, height: int, width: int) -> list[tuple[np.float32, int, int]]:
    """(weight, row, column) of the four neighbours of (y, x), onnxruntime's RoiAlign rules; no terms
    outside [-1, size]."""
    f = np.float32
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return []
    y, x = max(y, f(0)), max(x, f(0))
    y_low, x_low = int(y), int(x)
    if y_low >= height - 1:
        y_low = y_high = height - 1
        y = f(y_low)
    else:
        y_high = y_low + 1
    if x_low >= width - 1:
        x_low = x_high = width - 1
        x = f(x_low)
    else:
        x_high = x_low + 1
    ly, lx = f(y - f(y_low)), f(x - f(x_low))
    hy, hx = f(1) - ly, f(1) - lx
    return [(hy * hx, y_low, x_low), (hy * lx, y_low, x_high), (ly * hx, y_high, x_low), (ly * lx, y_high, x_high)]


def roi_align(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    f = np.float32
    x, rois, batch_indices = ins[0].astype(f), ins[1].astype(f), ins[2]
    oh, ow, ratio = int(attrs["output_height"]), int(attrs["output_width"]), int(attrs["sampling_ratio"])
    scale, offset = f(attrs["spatial_scale"]), f(0.5 if attrs["half_pixel"] else 0.0)
    _, channels, height, width = x.shape
    out = np.zeros((rois.shape[0], channels, oh, ow), f)
    for r in range(rois.shape[0]):
        if not 0 <= batch_indices[r] < x.shape[0]:
            raise ValueError(f"RoiAlign: batch index {batch_indices[r]} out of range for {x.shape[0]} images")
        x0, y0, x1, y1 = (f(v) * scale - offset for v in rois[r])
        roi_w, roi_h = x1 - x0, y1 - y0
        if not attrs["half_pixel"]:
            roi_w, roi_h = max(roi_w, f(1)), max(roi_h, f(1))
        bin_h, bin_w = f(roi_h / f(oh)), f(roi_w / f(ow))
        grid_h = ratio if ratio > 0 else int(np.ceil(f(roi_h / f(oh))))
        grid_w = ratio if ratio > 0 else int(np.ceil(f(roi_w / f(ow))))
        count = f(max(grid_h * grid_w, 1))
        image = x[batch_indices[r]]
        for ph in range(oh):
            for pw in range(ow):
                terms = []
                for iy in range(grid_h):
                    yy = f(y0 + f(ph) * bin_h + f(f(iy + 0.5) * bin_h) / f(grid_h))
                    for ix in range(grid_w):
                        xx = f(x0 + f(pw) * bin_w + f(f(ix + 0.5) * bin_w) / f(grid_w))
                        terms.append(_bilinear_terms(yy, xx, height, width))
                for c in range(channels):
                    values = [[f(w * image[c, i, j]) for w, i, j in t] or [f(0)] * 4 for t in terms]
                    if attrs["mode"] == "avg":
                        out[r, c, ph, pw] = f(sum((f(v[0] + v[1] + v[2] + v[3]) if len(v) == 4 else f(0)
                                                   for v in values), f(0)) / count) if values else f(0)
                    else:
                        out[r, c, ph, pw] = max(max(v) for v in values) if values else f(0)
    return out


OP_DEFS = [
    OpDef("NmsSelect", ("center_point_box", "use_score_threshold"), 5, 5, _nms_select),
    OpDef("NmsOutput", ("count",), 2, 2, _nms_output, dtypes=frozenset({DType.i64})),
    OpDef("RoiAlign", ROI_ALIGN_ATTRS, 3, 3, _roi_align),
]

KERNELS: dict[str, Kernel] = {
    "NmsSelect": nms_select,
    "NmsOutput": nms_output,
    "RoiAlign": roi_align,
}
