"""ONNX NonMaxSuppression -> the two-pass ops of iree_py/ir/ops/detection.py : NmsSelect, NonZeroCount of the selection read into a symbol
(graph.symbol_sources), NmsOutput. Missing optional inputs: max_output_boxes_per_class -> no
boxes (an empty [0, 3] constant), iou_threshold -> 0, score_threshold -> every box a candidate.
Constant inputs fold through the numpy reference.
RoiAlign: the RoiAlign op.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx.compose import Converter
from iree_py.frontends.onnx.indexing import _count_symbol
from iree_py.ir.graph import Value
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


def _scalar(ctx: "OnnxContext", i: int, dtype: DType, default: float, name: str) -> Value:
    if not ctx.has_input(i):
        return ctx.const(np.array([default], dtype.numpy), hint=name)
    v = ctx.input(i)
    if v.type.dtype != dtype or v.type.shape not in ((), (1,)):
        raise ctx.error(f"{name} (input {i}) must be a single {dtype.value} element, got {v.type}")
    return v


def non_max_suppression(ctx: "OnnxContext") -> list[Value]:
    boxes, scores = ctx.input(0), ctx.input(1)
    center_point_box = int(ctx.attr("center_point_box", 0))
    if center_point_box not in (0, 1):
        raise ctx.bad_attr("center_point_box", center_point_box, "must be 0 or 1")
    for what, v in (("boxes", boxes), ("scores", scores)):
        if v.type.dtype != DType.f32 or v.type.rank != 3:
            raise ctx.error(f"{what} {v.type} is not supported: iree-py takes f32 rank-3 boxes and scores")
    if not ctx.has_input(2):  # ONNX: no max_output_boxes_per_class selects nothing
        return [ctx.const(np.zeros((0, 3), np.int64), out=0)]
    max_output = ctx.input(2)
    if max_output.type.dtype != DType.i64 or max_output.type.shape not in ((), (1,)):
        raise ctx.error(f"max_output_boxes_per_class {max_output.type} must be a single i64 element")
    iou = _scalar(ctx, 3, DType.f32, 0.0, "iou_threshold")
    threshold = _scalar(ctx, 4, DType.f32, 0.0, "score_threshold")
    attrs = {"center_point_box": center_point_box, "use_score_threshold": int(ctx.has_input(4))}
    selection = ctx.emit("NmsSelect", [boxes, scores, max_output, iou, threshold], attrs,
                         hint=f"{ctx.node_name}_selection")
    if selection.is_const:
        count = int(np.count_nonzero(selection.const))
        return [ctx.emit("NmsOutput", [selection, ctx.const(np.array([count], np.int64))], {"count": count}, out=0)]
    count = ctx.emit("NonZeroCount", [selection], hint=f"{ctx.node_name}_count")
    return [ctx.emit("NmsOutput", [selection, count], {"count": _count_symbol(ctx, count)}, out=0)]


def roi_align(ctx: "OnnxContext") -> list[Value]:
    """ONNX RoiAlign (opset 10: output_half_pixel coordinates; 16+: coordinate_transformation_mode,
    default half_pixel) -> the RoiAlign op (iree_py/ir/ops/detection.py)."""
    x, rois, batch_indices = ctx.input(0), ctx.input(1), ctx.input(2)
    if x.type.dtype != DType.f32 or rois.type.dtype != DType.f32:
        raise ctx.error(f"RoiAlign of X {x.type} and rois {rois.type} is not supported: iree-py takes f32")
    mode = ctx.attr("mode", "avg")
    if mode not in ("avg", "max"):
        raise ctx.bad_attr("mode", mode, "must be avg or max")
    transform = ctx.attr("coordinate_transformation_mode", "half_pixel" if ctx.opset >= 16 else "output_half_pixel")
    if transform not in ("half_pixel", "output_half_pixel"):
        raise ctx.bad_attr("coordinate_transformation_mode", transform, "must be half_pixel or output_half_pixel")
    if batch_indices.type.dtype != DType.i64:
        batch_indices = ctx.emit("Cast", [batch_indices], {"to": DType.i64.value}, hint=f"{ctx.node_name}_batch")
    attrs = {"mode": mode, "output_height": int(ctx.attr("output_height", 1)),
             "output_width": int(ctx.attr("output_width", 1)), "sampling_ratio": int(ctx.attr("sampling_ratio", 0)),
             "spatial_scale": float(ctx.attr("spatial_scale", 1.0)), "half_pixel": int(transform == "half_pixel")}
    return [ctx.emit("RoiAlign", [x, rois, batch_indices], attrs, out=0)]


CONVERTERS: dict[str, Converter] = {
    "NonMaxSuppression": non_max_suppression,
    "RoiAlign": roi_align,
}
