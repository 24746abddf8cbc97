"""ONNX Resize (opsets 10-19) and Upsample (7, 9).

Static scales/sizes/roi and dims: the per-axis coordinate math runs at import
(iree_py/ir/resize_math.py) and the Resize op gets the tap tables as constant inputs.

When scales, sizes or roi are given at run time,
or the input has symbolic dims -> the ResizeRuntime op (iree_py/ir/ops/resize.py), whose kernel
computes coordinates and weights per output index (SYMBOLIC_CONVERTERS below).

Output dims, one per resized axis (`axes`, opset 18+; else every axis):
  sizes given   the sizes' elements (constants, dims folded at import, or symbols read at run time);
                scale = f32(out) / f32(in), computed in the kernel (onnxruntime's rule).
  scales given  out = trunc(f32(scale) * f32(in)) (onnxruntime: static_cast<int64_t>(scale * in)):
                folded when scale and dim are constants or the scale is a whole number, else
                computed by small nodes (Mul, Cast, Max 0) whose result the symbols are read from.
  keep_aspect_ratio_policy (opset 18+, with sizes): scale = min/max of f32(size) / f32(in) over the
                axes, out = floor(scale * in + 0.5), computed the same way.
roi (tf_crop_and_resize only) is passed as an f32 tensor, starts then ends, one pair per axis.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx.compose import Converter, checked_axis, optional_const
from iree_py.frontends.onnx.dims import dims_of
from iree_py.frontends.onnx.symbolic import SymbolicConverter, runtime_symbols, shape_input
from iree_py.ir.graph import Value
from iree_py.ir.resize_math import COORDINATE_MODES, MODES, AxisResize, ResizeMethod, resize_tables
from iree_py.ir.symbols import Expr
from iree_py.ir.types import Dim, DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


F32 = np.float32


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
    axes = [checked_axis(ctx, int(a), rank, "axes") for a in axes]
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
    shape = dims_of(x)
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
    roi_given = optional_const(ctx, 1, "roi") if uses_roi else None  # only tf_crop_and_resize reads it
    scales_given = optional_const(ctx, 2, "scales")
    sizes_given = optional_const(ctx, 3, "sizes")
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
        shape = dims_of(x)
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


# --- run-time scales, sizes or roi, or symbolic dims: ResizeRuntime -------------------------------

def _given(ctx: "OnnxContext", i: int) -> bool:
    """Input i is present and not empty ('' and [] both mean 'not given')."""
    if not ctx.has_input(i):
        return False
    count = ctx.input(i).type.element_count
    return not (isinstance(count, int) and count == 0)


def _f32_dims(ctx: "OnnxContext", dims: list[Dim]) -> Value:
    """A f32[K] tensor of the dims: a constant when static, else each symbolic dim counted at run
    time as the sum of `dim` ones (exact below 2**24, the reach of an f32 size)."""
    if all(isinstance(d, int) for d in dims):
        return ctx.const(np.array(dims, dtype=F32), "resize_in_dims")
    parts = []
    for d in dims:
        if isinstance(d, int):
            parts.append(ctx.const(np.array([d], dtype=F32), "resize_in_dim"))
            continue
        ones = ctx.emit("Expand", [ctx.const(np.array(1.0, dtype=F32), "one")], {"shape": [d]}, hint="resize_ones")
        parts.append(ctx.emit("Reduce", [ones], {"axes": [0], "keepdims": 1, "kind": "sum"}, hint="resize_in_dim"))
    return parts[0] if len(parts) == 1 else ctx.emit("Concat", parts, {"axis": 0}, hint="resize_in_dims")


def _read_sizes(ctx: "OnnxContext", out_f32: Value, what: str) -> list[Dim]:
    """Symbols read at run time from max(0, trunc(out_f32)) (an i64 tensor)."""
    as_int = ctx.emit("Cast", [out_f32], {"to": DType.i64.value}, hint="resize_out_i64")
    sizes = ctx.emit("Max", [as_int, ctx.const(np.array([0], dtype=np.int64), "zero")], hint=f"{ctx.node_name}_sizes")
    return runtime_symbols(ctx, sizes, what)


def _f32_input(ctx: "OnnxContext", i: int, what: str, count: int) -> Value:
    v = ctx.input(i)
    if v.type.element_count != count:
        raise ctx.error(f"{what} '{v.name}' is {v.type}; it needs {count} values (one per resized axis)")
    if v.type.dtype not in (DType.f32, DType.f16, DType.f64, DType.bf16):
        raise ctx.error(f"{what} '{v.name}' is {v.type}; expected a float tensor")
    if v.type.rank != 1:
        v = ctx.emit("Reshape", [v], {"shape": [count]}, hint=f"{v.name}_flat")
    return v if v.type.dtype == DType.f32 else ctx.emit("Cast", [v], {"to": DType.f32.value}, hint=f"{v.name}_f32")


def _from_scales(ctx: "OnnxContext", scales: Value, in_dims: list[Dim]) -> list[Dim]:
    """Output dims trunc(f32(scale) * f32(in)) for the resized axes."""
    if scales.is_const:
        values = [F32(s) for s in np.asarray(scales.const).reshape(-1)]
        if any(not s > 0 for s in values):
            raise ctx.error(f"scales {[float(s) for s in values]} must be positive")
        folded: list[Dim | None] = []
        for s, d in zip(values, in_dims):
            if isinstance(d, int):
                folded.append(int(s * F32(d)))
            elif float(s).is_integer():
                folded.append(Expr.of(d) * int(s))
            else:
                folded.append(None)
        rest = [j for j, d in enumerate(folded) if d is None]
        if rest:  # only the axes that do not fold are computed at run time
            subset = ctx.const(np.array([values[j] for j in rest], dtype=F32), "resize_scales")
            read = iter(_read_sizes(ctx, ctx.emit("Mul", [subset, _f32_dims(ctx, [in_dims[j] for j in rest])],
                                                  hint="resize_out_f32"), "Resize output size"))
            folded = [next(read) if d is None else d for d in folded]
        return folded  # type: ignore[return-value]
    return _read_sizes(ctx, ctx.emit("Mul", [scales, _f32_dims(ctx, in_dims)], hint="resize_out_f32"),
                       "Resize output size")


def _keep_aspect(ctx: "OnnxContext", sizes: list[Dim], sizes_runtime: bool, in_dims: list[Dim],
                 policy: str) -> tuple[list[Dim], Value]:
    """(output dims, scales f32[K]) under keep_aspect_ratio_policy not_larger / not_smaller."""
    reduce_kind = "min" if policy == "not_larger" else "max"
    if not sizes_runtime and all(isinstance(d, int) for d in (*sizes, *in_dims)):
        ratios = [F32(o) / F32(d) for o, d in zip(sizes, in_dims)]
        scale = F32(min(ratios) if policy == "not_larger" else max(ratios))
        out = [int(np.floor(float(scale * F32(d)) + 0.5)) for d in in_dims]
        return out, ctx.const(np.full(len(in_dims), scale, dtype=F32), "resize_scales")
    if not sizes_runtime:
        raise ctx.error(f"keep_aspect_ratio_policy {policy} with sizes computed from symbolic dims is not supported")
    dims_f32 = _f32_dims(ctx, in_dims)
    sizes_f32 = ctx.emit("Cast", [ctx.input(3)], {"to": DType.f32.value}, hint="resize_sizes_f32")
    ratios = ctx.emit("Div", [ctx.emit("Reshape", [sizes_f32], {"shape": [len(in_dims)]}), dims_f32])
    scale = ctx.emit("Reduce", [ratios], {"axes": [0], "keepdims": 1, "kind": reduce_kind}, hint="resize_scale")
    scales = ctx.emit("Expand", [scale], {"shape": [len(in_dims)]}, hint="resize_scales")
    rounded = ctx.emit("Floor", [ctx.emit("Add", [ctx.emit("Mul", [scales, dims_f32]),
                                                  ctx.const(np.array([0.5], dtype=F32), "half")])])
    return _read_sizes(ctx, rounded, "Resize output size"), scales


def _resize_runtime(upsample: bool):
    def convert(ctx: "OnnxContext") -> list[Value]:
        x = ctx.input(0)
        method = _method(ctx, upsample)
        shape = list(dims_of(x))
        rank = len(shape)
        old = upsample or ctx.opset == 10
        axes = list(range(rank)) if old else _axes(ctx, rank)
        in_dims = [shape[a] for a in axes]
        k = len(axes)
        scales_given = (not old and _given(ctx, 2)) or (old and (ctx.opset >= 9 or not upsample))
        sizes_given = not old and _given(ctx, 3)
        if not old and scales_given == sizes_given:
            raise ctx.error("exactly one of scales and sizes must be given")
        policy = ctx.attr("keep_aspect_ratio_policy", "stretch") if ctx.opset >= 18 else "stretch"
        if policy not in ("stretch", "not_larger", "not_smaller"):
            raise ctx.bad_attr("keep_aspect_ratio_policy", policy, "expected stretch, not_larger or not_smaller")
        from_sizes = 0
        if upsample and ctx.opset < 9:
            scales = ctx.const(np.array(ctx.attr("scales", []), dtype=F32), "resize_scales")
            if scales.type.element_count != rank:
                raise ctx.error(f"scales {ctx.attr('scales', [])} need one value per axis of {x.type}")
            out = _from_scales(ctx, scales, in_dims)
        elif scales_given:
            scales = _f32_input(ctx, 1 if old else 2, "scales", k)
            out = _from_scales(ctx, scales, in_dims)
        else:
            sizes, runtime = shape_input(ctx, 3, "sizes")
            if len(sizes) != k:
                raise ctx.error(f"sizes has {len(sizes)} values; it needs one per resized axis {axes}")
            if policy == "stretch":
                out, from_sizes = sizes, 1
                scales = ctx.const(np.ones(k, dtype=F32), "resize_scales")
            else:
                out, scales = _keep_aspect(ctx, sizes, runtime, in_dims, policy)
        uses_roi = method.coordinate_mode == "tf_crop_and_resize" and not old and _given(ctx, 1)
        roi = _f32_input(ctx, 1, "roi", 2 * k) if uses_roi else \
            ctx.const(np.array([0.0] * k + [1.0] * k, dtype=F32), "resize_roi")
        sizes_attr = list(shape)
        for a, d in zip(axes, out):
            sizes_attr[a] = d
        attrs = {"axes": axes, "sizes": sizes_attr, "scales_from_sizes": from_sizes, "mode": method.mode,
                 "coordinate_mode": method.coordinate_mode, "nearest_mode": method.nearest_mode,
                 "cubic_coeff_a": method.cubic_coeff_a, "exclude_outside": int(method.exclude_outside),
                 "antialias": int(method.antialias),
                 "extrapolation_value": float(F32(ctx.attr("extrapolation_value", 0.0)))}
        return [ctx.emit("ResizeRuntime", [x, scales, roi], attrs, out=0)]
    return convert


CONVERTERS: dict[str, Converter] = {
    "Resize": _resize_like(upsample=False),
    "Upsample": _resize_like(upsample=True),
}

# Run-time scales / sizes / roi, or symbolic dims: ResizeRuntime.
SYMBOLIC_CONVERTERS: dict[str, SymbolicConverter] = {
    "Resize": _resize_runtime(upsample=False),
    "Upsample": _resize_runtime(upsample=True),
}

SHAPE_INPUTS: dict[str, tuple[int, ...]] = {"Resize": (1, 2, 3), "Upsample": (1,)}
