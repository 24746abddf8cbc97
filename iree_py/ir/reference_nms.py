"""numpy reference of the NonMaxSuppression ops of ops_nms.py (registered in reference.py's KERNELS),
computed in f32 as onnxruntime does."""
from __future__ import annotations

from typing import Any

import numpy as np


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


KERNELS = {
    "NmsSelect": nms_select,
    "NmsOutput": nms_output,
}


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


KERNELS["RoiAlign"] = roi_align
