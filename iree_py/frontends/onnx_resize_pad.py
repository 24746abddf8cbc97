"""ONNX Resize/Upsample, Pad, ArgMax/ArgMin and TopK -> normalized ops (registered in
onnx_ops.py's CONVERTERS).

Resize: scales/sizes/roi must be constants; the per-axis coordinate math runs here
(iree_py/ir/resize_math.py) and the IR op gets the tap tables as constant inputs.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx_dims import dims_of
from iree_py.frontends.onnx_symbolic import sign_of
from iree_py.ir.graph import Value
from iree_py.ir.ops.pad import PAD_MODES
from iree_py.ir.resize_math import COORDINATE_MODES, MODES, AxisResize, ResizeMethod, resize_tables
from iree_py.ir.symbols import Expr, dim
from iree_py.ir.types import Dim

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

F32 = np.float32


def _shape(v: Value) -> tuple[Dim, ...]:
    return dims_of(v)


def _axis(ctx: "OnnxContext", axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise ctx.bad_attr(what, axis, f"out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _optional_const(ctx: "OnnxContext", i: int, what: str) -> np.ndarray | None:
    """A constant input, or None when absent or empty (Resize's '' and [] both mean 'not given')."""
    if not ctx.has_input(i):
        return None
    array = ctx.const_input(i, what)
    return None if array.size == 0 else array


# ------------------------------------------------------------------------------------------ Resize

def _method(ctx: "OnnxContext", upsample: bool) -> ResizeMethod:
    mode = ctx.attr("mode", "nearest")
    if mode == "bilinear" and upsample:  # Upsample-7 spelling
        mode = "linear"
    if mode not in MODES or (upsample and mode == "cubic"):
        raise ctx.bad_attr("mode", mode, f"expected one of {list(MODES[:2] if upsample else MODES)}")
    old = upsample or ctx.opset < 11
    coordinate_mode = "asymmetric" if old else ctx.attr("coordinate_transformation_mode", "half_pixel")
    if coordinate_mode not in COORDINATE_MODES:
        raise ctx.bad_attr("coordinate_transformation_mode", coordinate_mode, f"expected one of {list(COORDINATE_MODES)}")
    nearest_mode = "simple" if old else ctx.attr("nearest_mode", "round_prefer_floor")
    exclude_outside = bool(int(ctx.attr("exclude_outside", 0)))
    antialias = bool(int(ctx.attr("antialias", 0))) if ctx.opset >= 18 else False
    if exclude_outside and mode != "cubic" and not (antialias and mode == "linear"):
        raise ctx.bad_attr("exclude_outside", 1, f"only with mode cubic (or linear with antialias), mode is {mode}")
    if antialias and mode == "nearest":
        raise ctx.bad_attr("antialias", 1, "antialias needs mode linear or cubic")
    return ResizeMethod(mode, coordinate_mode, nearest_mode, float(ctx.attr("cubic_coeff_a", -0.75)),
                        exclude_outside, antialias)


def _axes(ctx: "OnnxContext", rank: int) -> list[int]:
    axes = ctx.attr("axes") if ctx.opset >= 18 else None
    if axes is None:
        return list(range(rank))
    axes = [_axis(ctx, int(a), rank, "axes") for a in axes]
    if len(set(axes)) != len(axes):
        raise ctx.bad_attr("axes", axes, "an axis is repeated")
    return axes


def _scatter(ctx: "OnnxContext", values: np.ndarray, axes: list[int], fill: list, what: str) -> list:
    values = list(values.reshape(-1))
    if len(values) != len(axes):
        raise ctx.error(f"{what} {values} need one value per axis {axes}")
    out = list(fill)
    for a, v in zip(axes, values):
        out[a] = v
    return out


def _keep_aspect_ratio(ctx: "OnnxContext", shape: tuple[int, ...], sizes: list[int], axes: list[int],
                       scales: list[float]) -> tuple[list[int], list[float]]:
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch") if ctx.opset >= 18 else "stretch"
    if policy == "stretch":
        return sizes, scales
    if policy not in ("not_larger", "not_smaller"):
        raise ctx.bad_attr("keep_aspect_ratio_policy", policy, "expected stretch, not_larger or not_smaller")
    ratios = [F32(sizes[a]) / F32(shape[a]) for a in axes]
    scale = F32(min(ratios) if policy == "not_larger" else max(ratios))
    sizes, scales = list(sizes), list(scales)
    for a in axes:
        sizes[a] = int(math.floor(float(scale * F32(shape[a])) + 0.5))
        scales[a] = float(scale)
    return sizes, scales


Geometry = tuple[list[int], list[float], list[float], list["float | None"]]


def _spec_lengths(scales: list[float], shape: list[int]) -> list["float | None"]:
    """The spec's length_resized per axis when scales are given: scale * length (resize_math.py)."""
    return [float(F32(s) * F32(d)) for s, d in zip(scales, shape)]


def _resize_geometry(ctx: "OnnxContext", x: Value, upsample: bool, uses_roi: bool) -> Geometry:
    """(output sizes, float32 scales, roi [starts..., ends...], the spec's length_resized or None
    where sizes were given) for every axis."""
    shape = _shape(x)
    rank = len(shape)
    if upsample or ctx.opset == 10:
        if upsample and ctx.opset < 9:
            scales_given = np.array(ctx.attr("scales", []), dtype=F32)
        else:
            scales_given = ctx.const_input(1, "scales").astype(F32)
        if scales_given.size != rank:
            raise ctx.error(f"scales {scales_given.tolist()} need one value per axis of {x.type}")
        scales = [float(s) for s in scales_given]
        return ([int(F32(s) * F32(d)) for s, d in zip(scales, shape)], scales, [0.0] * rank + [1.0] * rank,
                _spec_lengths(scales, shape))
    axes = _axes(ctx, rank)
    roi_given = _optional_const(ctx, 1, "roi") if uses_roi else None  # only tf_crop_and_resize reads it
    scales_given = _optional_const(ctx, 2, "scales")
    sizes_given = _optional_const(ctx, 3, "sizes")
    if (scales_given is None) == (sizes_given is None):
        raise ctx.error("exactly one of scales and sizes must be given (as a constant)")
    roi = [0.0] * rank + [1.0] * rank
    if roi_given is not None:
        flat = [float(v) for v in roi_given.reshape(-1)]
        if len(flat) != 2 * len(axes):
            raise ctx.error(f"roi {flat} needs {2 * len(axes)} values")
        for k, a in enumerate(axes):
            roi[a], roi[rank + a] = flat[k], flat[len(axes) + k]
    if scales_given is not None:
        scales = [float(s) for s in _scatter(ctx, scales_given.astype(F32), axes, [F32(1)] * rank, "scales")]
        if any(s <= 0 for s in scales):
            raise ctx.error(f"scales {scales} must be positive")
        return [int(F32(s) * F32(d)) for s, d in zip(scales, shape)], scales, roi, _spec_lengths(scales, shape)
    sizes = [int(v) for v in _scatter(ctx, sizes_given.astype(np.int64), axes, list(shape), "sizes")]
    scales = [float(F32(o) / F32(d)) if d else 1.0 for o, d in zip(sizes, shape)]
    sizes, scales = _keep_aspect_ratio(ctx, shape, sizes, axes, scales)
    return sizes, scales, roi, [None] * rank


def _resize_like(upsample: bool):
    def convert(ctx: "OnnxContext") -> list[Value]:
        x = ctx.input(0)
        method = _method(ctx, upsample)
        sizes, scales, roi, lengths = _resize_geometry(ctx, x, upsample, method.coordinate_mode == "tf_crop_and_resize")
        shape = _shape(x)
        rank = len(shape)
        if any(d == 0 for d in shape) or any(s <= 0 for s in sizes):
            raise ctx.error(f"empty input {x.type} or output {sizes} is not supported")
        axes = [AxisResize(d, o, s, roi[i], roi[rank + i], length)
                for i, (d, o, s, length) in enumerate(zip(shape, sizes, scales, lengths))]
        taps, indices, weights = resize_tables(axes, method)
        if not any(taps):
            return [x]
        attrs = {"sizes": sizes, "taps": taps,
                 "extrapolation_value": float(F32(ctx.attr("extrapolation_value", 0.0)))}
        return [ctx.emit("Resize", [x, ctx.const(indices, "resize_index"), ctx.const(weights, "resize_weight")],
                         attrs, out=0)]
    return convert


# --------------------------------------------------------------------------------------------- Pad

def pad(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    rank = x.type.rank
    mode = ctx.attr("mode", "constant")
    onnx_modes = PAD_MODES[:4] if ctx.opset >= 19 else PAD_MODES[:3]
    if mode not in onnx_modes:
        raise ctx.bad_attr("mode", mode, f"expected one of {list(onnx_modes)}")
    if ctx.opset < 11:
        pads = [int(p) for p in ctx.attr("pads", ctx.attr("paddings", []))]
        value = float(ctx.attr("value", 0.0))
        axes = list(range(rank))
    else:
        pads = [int(p) for p in ctx.const_input(1, "pads").reshape(-1)]
        value_given = _optional_const(ctx, 2, "constant_value")
        value = 0.0 if value_given is None else value_given.reshape(-1)[0].item()
        axes_given = _optional_const(ctx, 3, "axes") if ctx.opset >= 18 else None
        axes = list(range(rank)) if axes_given is None else \
            [_axis(ctx, int(a), rank, "axes") for a in axes_given.reshape(-1)]
    if len(pads) != 2 * len(axes):
        raise ctx.error(f"pads {pads} need {2 * len(axes)} values (axes {axes})")
    full = [0] * (2 * rank)
    for k, a in enumerate(axes):
        full[a], full[rank + a] = pads[k], pads[len(axes) + k]
    if not any(full):
        return [x]
    # Dims may be symbolic: what sign_of cannot decide here, the Pad op's rule checks at run time
    # (a reflect pad below its axis, an axis left non-empty by the crop).
    shape = _shape(x)
    kept = [dim(Expr.of(d) - max(-full[i], 0) - max(-full[rank + i], 0)) for i, d in enumerate(shape)]
    if mode == "reflect" and any(sign_of(ctx, p, Expr.of(k) - 1) == 1
                                 for i, k in enumerate(kept) for p in (full[i], full[rank + i])):
        raise ctx.error(f"reflect pads {full} exceed the (cropped) dims - 1 of {x.type}")
    grown = [Expr.of(d) + full[i] + full[rank + i] for i, d in enumerate(shape)]
    if mode != "constant" and any(sign_of(ctx, k, 0) in (-1, 0) and sign_of(ctx, out, 0) == 1
                                  for k, out in zip(kept, grown)):
        raise ctx.error(f"mode {mode} cannot pad an empty (or cropped to nothing) axis of {x.type}, pads {full}")
    if x.type.dtype.numpy.kind in "iub":
        value = int(value)
    return [ctx.emit("Pad", [x], {"mode": mode, "pads": full, "value": value}, out=0)]


# ------------------------------------------------------------------------------------------ ArgMax

def _arg(op: str):
    def convert(ctx: "OnnxContext") -> list[Value]:
        x = ctx.input(0)
        attrs = {"axis": _axis(ctx, int(ctx.attr("axis", 0)), x.type.rank), "keepdims": int(ctx.attr("keepdims", 1)),
                 "select_last_index": int(ctx.attr("select_last_index", 0)) if ctx.opset >= 12 else 0}
        return [ctx.emit(op, [x], attrs, out=0)]
    return convert


def topk(ctx: "OnnxContext") -> list[Value]:
    """Each used output (values, indices) is its own TopK node."""
    x = ctx.input(0)
    axis = _axis(ctx, int(ctx.attr("axis", -1)), x.type.rank)
    k = int(ctx.attr("k")) if ctx.opset < 10 else int(ctx.const_input(1, "k").reshape(-1)[0])
    # sorted=0 lets the outputs come in any order (ONNX); the sorted order is one of them.
    attrs = {"axis": axis, "k": k, "largest": int(ctx.attr("largest", 1)) if ctx.opset >= 11 else 1}
    if not 0 <= k <= _shape(x)[axis]:
        raise ctx.error(f"k {k} out of range for axis {axis} of {x.type}")
    results: list[Value] = []
    for i, result in enumerate(("values", "indices")):
        results.append(ctx.emit("TopK", [x], {**attrs, "result": result}, out=i) if ctx.output_used(i) or i == 0
                       else None)
    return results


RESIZE_PAD_CONVERTERS = {
    "Resize": _resize_like(upsample=False),
    "Upsample": _resize_like(upsample=True),
    "Pad": pad,
    "ArgMax": _arg("ArgMax"),
    "ArgMin": _arg("ArgMin"),
    "TopK": topk,
}
