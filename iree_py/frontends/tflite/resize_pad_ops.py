"""TFLite PAD / PADV2 / MIRROR_PAD, ARG_MAX / ARG_MIN and RESIZE_BILINEAR /
RESIZE_NEAREST_NEIGHBOR -> normalized ops (registered in ops.py's CONVERTERS).

Tensors stay NHWC: Pad and Resize work on any axes, so no transposes are needed. The resize
tap tables follow TFLite's reference kernels (align_corners, half_pixel_centers), computed in
float32 as they are.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.tflite.schema.ArgMaxOptions import ArgMaxOptionsT
from iree_py.frontends.tflite.schema.ArgMinOptions import ArgMinOptionsT
from iree_py.frontends.tflite.schema.BuiltinOperator import BuiltinOperator as B
from iree_py.frontends.tflite.schema.MirrorPadMode import MirrorPadMode
from iree_py.frontends.tflite.schema.MirrorPadOptions import MirrorPadOptionsT
from iree_py.frontends.tflite.schema.ResizeBilinearOptions import ResizeBilinearOptionsT
from iree_py.frontends.tflite.schema.ResizeNearestNeighborOptions import ResizeNearestNeighborOptionsT
from iree_py.frontends.tflite.schema.TensorType import TensorType as TflType
from iree_py.ir.graph import Value
from iree_py.ir.resize_math import Rows, pack_tables

if TYPE_CHECKING:
    from iree_py.frontends.tflite.importer import TfliteContext

F32 = np.float32


def _shape(v: Value) -> tuple[int, ...]:
    return tuple(int(d) for d in v.type.shape)


# --------------------------------------------------------------------------------------------- pad

def _paddings(ctx: "TfliteContext", x: Value) -> list[int]:
    """TFLite paddings [[before, after], ...] as the Pad op's [begins..., ends...]."""
    paddings = ctx.const_input(1, "paddings").reshape(-1, 2)
    if paddings.shape[0] != x.type.rank or (paddings < 0).any():
        raise ctx.error(f"paddings {paddings.tolist()} do not fit {x.type} (one non-negative pair per axis)")
    return [int(p) for p in paddings[:, 0]] + [int(p) for p in paddings[:, 1]]


def pad(ctx: "TfliteContext") -> list[Value]:
    """PAD / PADV2 (constant_values: a one-element constant, default 0)."""
    x = ctx.input(0)
    pads = _paddings(ctx, x)
    value = ctx.const_input(2, "constant_values").reshape(-1)[0].item() if ctx.has_input(2) else 0
    if not any(pads):
        return [ctx.reshape(x, ctx.output_shape(0), out=0)]
    return [ctx.emit("Pad", [x], {"mode": "constant", "pads": pads, "value": value}, out=0)]


def mirror_pad(ctx: "TfliteContext") -> list[Value]:
    x = ctx.input(0)
    pads = _paddings(ctx, x)
    mode = ctx.options(MirrorPadOptionsT).mode
    name = {MirrorPadMode.REFLECT: "reflect", MirrorPadMode.SYMMETRIC: "symmetric"}.get(mode)
    if name is None:
        raise ctx.error(f"MIRROR_PAD mode {mode} is not REFLECT (0) or SYMMETRIC (1)")
    shape = _shape(x)
    limit = 1 if name == "reflect" else 0
    rank = len(shape)
    if any(p > d - limit for i, d in enumerate(shape) for p in (pads[i], pads[rank + i])):
        raise ctx.error(f"MIRROR_PAD {name} paddings {pads} too large for {x.type}")
    if not any(pads):
        return [ctx.reshape(x, ctx.output_shape(0), out=0)]
    return [ctx.emit("Pad", [x], {"mode": name, "pads": pads, "value": 0.0}, out=0)]


# --------------------------------------------------------------------------------- ARG_MAX/ARG_MIN

def _arg(op: str, options: type):
    def convert(ctx: "TfliteContext") -> list[Value]:
        x = ctx.input(0)
        rank = x.type.rank
        axis = int(ctx.const_input(1, "axis").reshape(-1)[0])
        if not -rank <= axis < rank:
            raise ctx.error(f"axis {axis} out of range for {x.type}")
        output_type = ctx.options(options).outputType
        if output_type not in (TflType.INT32, TflType.INT64):
            raise ctx.error(f"output_type {output_type} is not INT32 (2) or INT64 (4)")
        attrs = {"axis": axis % rank, "keepdims": 0, "select_last_index": 0}
        if output_type == TflType.INT64:
            return [ctx.emit(op, [x], attrs, out=0)]
        return [ctx.emit("Cast", [ctx.emit(op, [x], attrs)], {"to": "i32"}, out=0)]
    return convert


# ------------------------------------------------------------------------------------------ resize

def _scale(in_size: int, out_size: int, align_corners: bool) -> F32:
    if align_corners and out_size > 1:
        return F32(in_size - 1) / F32(out_size - 1)
    return F32(in_size) / F32(out_size)


def bilinear_rows(in_size: int, out_size: int, align_corners: bool, half_pixel_centers: bool) -> Rows:
    """TFLite's ResizeBilinear along one axis: lower = max(floor(v), 0), upper = min(ceil(v), n - 1),
    weights 1 - (v - lower) and v - lower."""
    scale = _scale(in_size, out_size, align_corners)
    rows = []
    for o in range(out_size):
        v = (F32(o) + F32(0.5)) * scale - F32(0.5) if half_pixel_centers else F32(o) * scale
        lower = max(int(math.floor(v)), 0)
        upper = min(int(math.ceil(v)), in_size - 1)
        frac = float(v - F32(lower))
        rows.append([(lower, 1.0 - frac), (upper, frac)])
    return rows


def nearest_rows(in_size: int, out_size: int, align_corners: bool, half_pixel_centers: bool) -> Rows:
    """TFLite's ResizeNearestNeighbor along one axis (align_corners rounds half away from zero)."""
    scale = _scale(in_size, out_size, align_corners)
    offset = F32(0.5) if half_pixel_centers else F32(0.0)
    rows = []
    for o in range(out_size):
        v = float((F32(o) + offset) * scale)
        i = int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1) if align_corners else math.floor(v)
        i = min(i, in_size - 1)
        rows.append([(max(i, 0) if half_pixel_centers else i, 1.0)])
    return rows


def _resize(rows_of, options: type):
    def convert(ctx: "TfliteContext") -> list[Value]:
        x = ctx.input(0)
        shape = _shape(x)
        if len(shape) != 4:
            raise ctx.error(f"input {x.type} must be NHWC (rank 4)")
        size = [int(v) for v in ctx.const_input(1, "size").reshape(-1)]
        if len(size) != 2 or min(size) <= 0:
            raise ctx.error(f"size {size} must be two positive values (new height, new width)")
        opts = ctx.options(options)
        align_corners, half_pixel = bool(opts.alignCorners), bool(opts.halfPixelCenters)
        if align_corners and half_pixel:
            raise ctx.error("align_corners and half_pixel_centers cannot both be set")
        n, h, w, c = shape
        rows = [[[(i, 1.0)] for i in range(n)], rows_of(h, size[0], align_corners, half_pixel),
                rows_of(w, size[1], align_corners, half_pixel), [[(i, 1.0)] for i in range(c)]]
        taps, indices, weights = pack_tables(rows, list(shape))
        if not any(taps):
            return [ctx.reshape(x, ctx.output_shape(0), out=0)]
        attrs = {"sizes": [n, size[0], size[1], c], "taps": taps, "extrapolation_value": 0.0}
        return [ctx.emit("Resize", [x, ctx.const(indices, "resize_index"), ctx.const(weights, "resize_weight")],
                         attrs, out=0)]
    return convert


TFLITE_RESIZE_PAD_CONVERTERS = {
    B.PAD: pad,
    B.PADV2: pad,
    B.MIRROR_PAD: mirror_pad,
    B.ARG_MAX: _arg("ArgMax", ArgMaxOptionsT),
    B.ARG_MIN: _arg("ArgMin", ArgMinOptionsT),
    B.RESIZE_BILINEAR: _resize(bilinear_rows, ResizeBilinearOptionsT),
    B.RESIZE_NEAREST_NEIGHBOR: _resize(nearest_rows, ResizeNearestNeighborOptionsT),
}
