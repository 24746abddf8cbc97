"""Resize coordinate math, done once at compile time: for each output index along an axis, the
source indices it reads and their weights (a "tap table").

The normalized `Resize` op (docs/ir.md) carries these tables as constant inputs, so its kernel is
a gather-and-blend: out[o...] = sum over taps of prod_axis(weight) * x[index...], or the
extrapolation value where some axis maps outside the input (tf_crop_and_resize).

The arithmetic follows onnxruntime's CPU kernel, in float32 where it computes in float32, so that
nearest-neighbour rounding picks the same pixels, with one exception where onnxruntime departs from
the ONNX spec: align_corners and tf_crop_and_resize divide by `length_resized - 1`, and the spec
defines `scale = length_resized / length_original`, so with `scales` given length_resized is
scale * length_original, fractional when the output length is floored (ONNX's reference and its
expected data: 4 -> 2 at scale 0.6 divides by 2.4 - 1, not 2 - 1 as onnxruntime does).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

F32 = np.float32
COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_half_pixel_for_nn", "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")
MODES = ("nearest", "linear", "cubic")
OUTSIDE = -1  # index of a tap whose output position takes the extrapolation value


@dataclass(frozen=True)
class AxisResize:
    """How one axis is resized; `scale` is the float32 scale onnxruntime uses."""

    in_size: int
    out_size: int
    scale: float
    roi_start: float = 0.0
    roi_end: float = 1.0
    length_resized: float | None = None  # scale * in_size when scales were given; None: out_size

    @property
    def spec_length(self) -> float:
        """The spec's length_resized: scale * length_original (scales given) or the output size."""
        return float(self.out_size) if self.length_resized is None else self.length_resized


@dataclass(frozen=True)
class ResizeMethod:
    mode: str = "nearest"
    coordinate_mode: str = "half_pixel"
    nearest_mode: str = "round_prefer_floor"
    cubic_coeff_a: float = -0.75
    exclude_outside: bool = False
    antialias: bool = False


def original_coordinate(x: int, axis: AxisResize, coordinate_mode: str) -> float:
    """The source coordinate of output index x (float32 arithmetic, as onnxruntime)."""
    xr, scale = F32(x), F32(axis.scale)
    length_resized, length_original = F32(axis.spec_length), F32(axis.in_size)
    many = axis.spec_length > 1
    half = F32(0.5)
    if coordinate_mode == "asymmetric":
        return float(xr / scale)
    if coordinate_mode == "pytorch_half_pixel":
        return float((xr + half) / scale - half) if axis.out_size > 1 else 0.0
    if coordinate_mode == "tf_half_pixel_for_nn":
        return float((xr + half) / scale)
    if coordinate_mode == "align_corners":
        return float(xr * (length_original - F32(1)) / (length_resized - F32(1))) if many else 0.0
    if coordinate_mode == "tf_crop_and_resize":
        start, end = F32(axis.roi_start), F32(axis.roi_end)
        if many:
            return float(start * (length_original - F32(1))
                         + (xr * (end - start) * (length_original - F32(1))) / (length_resized - F32(1)))
        return float(F32(0.5 * float(start + end) * float(length_original - F32(1))))
    if coordinate_mode == "half_pixel_symmetric":
        output_width = scale * length_original
        adjustment = F32(axis.out_size) / output_width  # output_width_int / output_width
        offset = (length_original / F32(2)) * (F32(1) - adjustment)
        return float(F32(float(offset) + (float(xr) + 0.5) / float(scale) - 0.5))
    if coordinate_mode == "half_pixel":
        return float((xr + half) / scale - half)
    raise ValueError(f"coordinate_transformation_mode {coordinate_mode!r} is not one of {list(COORDINATE_MODES)}")


def nearest_index(x: float, nearest_mode: str, downsampling: bool) -> int:
    if nearest_mode == "simple":  # Resize-10 and Upsample
        return math.ceil(x) if downsampling else int(x)
    if nearest_mode == "round_prefer_ceil":
        return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))  # C round(): half away from 0
    if nearest_mode == "floor":
        return math.floor(x)
    if nearest_mode == "ceil":
        return math.ceil(x)
    if nearest_mode == "round_prefer_floor":
        if float(F32(x)) == float(F32(float(int(x)) + 0.5)):
            return math.floor(x)
        return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))
    raise ValueError(f"nearest_mode {nearest_mode!r} is not one of {list(NEAREST_MODES)}")


def cubic_weights(ratio: float, a: float) -> list[float]:
    """Keys cubic convolution weights for taps floor-1 .. floor+2, ratio = x - floor(x)."""
    def kernel(s: float) -> float:
        s = abs(s)
        if s <= 1:
            return ((a + 2) * s - (a + 3)) * s * s + 1
        if s < 2:
            return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a
        return 0.0
    return [kernel(ratio + 1), kernel(ratio), kernel(1 - ratio), kernel(2 - ratio)]


def _antialias_filter(t: float, method: ResizeMethod) -> float:
    t = abs(t)
    if method.mode == "linear":
        return max(0.0, 1.0 - t)
    a = method.cubic_coeff_a
    if t < 1:
        return ((a + 2) * t - (a + 3)) * t * t + 1
    if t < 2:
        return (((t - 5) * t + 8) * t - 4) * a
    return 0.0


def _antialias_taps(o: int, axis: AxisResize, method: ResizeMethod) -> list[tuple[int, float]]:
    """A filter stretched by 1/scale when downsampling (Pillow-style, as onnxruntime). Without
    exclude_outside, the weight of taps past an edge moves to the edge pixel."""
    inv = F32(1) / F32(axis.scale)  # onnxruntime's "scale": input pixels per output pixel
    support_size = 2.0 if method.mode == "linear" else 4.0
    support = float(F32(support_size * 0.5) * inv) if inv >= 1 else support_size * 0.5
    inv_scale = float(F32(1) / inv) if inv >= 1 else 1.0
    x = float(o) if inv == 1 else original_coordinate(o, axis, method.coordinate_mode)
    center = float(F32(0.5) + F32(x))
    lo = math.floor(center - support + 0.5)
    hi = math.floor(center + support + 0.5)
    if method.exclude_outside:
        lo, hi = max(lo, 0), min(hi, axis.in_size)
    raw = [(i, float(F32(_antialias_filter(float((F32(i) - F32(center) + F32(0.5)) * F32(inv_scale)), method))))
           for i in range(lo, hi)]
    total = sum(w for _, w in raw)
    norm = 1.0 if total == 0 else 1.0 / total
    last = axis.in_size - 1
    merged: dict[int, float] = {}
    for i, w in raw:
        key = min(max(i, 0), last)
        merged[key] = merged.get(key, 0.0) + w * norm
    return sorted(merged.items())


def axis_taps(axis: AxisResize, method: ResizeMethod) -> list[list[tuple[int, float]]]:
    """For each output index: [(source index, weight), ...]; [(OUTSIDE, 0.0)] when the output
    position takes the extrapolation value."""
    result = []
    last = axis.in_size - 1
    for o in range(axis.out_size):
        x = original_coordinate(o, axis, method.coordinate_mode)
        if method.coordinate_mode == "tf_crop_and_resize" and (x < 0 or x > last):
            result.append([(OUTSIDE, 0.0)])
            continue
        if method.mode == "nearest":
            i = nearest_index(x, method.nearest_mode, axis.scale < 1)
            result.append([(min(max(i, 0), last), 1.0)])
        elif method.antialias:
            result.append(_antialias_taps(o, axis, method))
        elif method.mode == "linear":
            xc = min(max(x, 0.0), float(last))
            i1 = min(int(xc), last)
            i2 = min(i1 + 1, last)
            if i1 == i2:
                result.append([(i1, 1.0)])
            else:
                d1 = float(abs(F32(xc) - F32(i1)))
                d2 = float(abs(F32(xc) - F32(i2)))
                result.append([(i1, d2), (i2, d1)])
        else:
            base = math.floor(x)
            weights = cubic_weights(float(F32(x) - F32(base)), method.cubic_coeff_a)
            idx = [base - 1, base, base + 1, base + 2]
            if method.exclude_outside:
                weights = [w if 0 <= i <= last else 0.0 for i, w in zip(idx, weights)]
                total = sum(weights)
                weights = [w / total for w in weights]
            result.append([(min(max(i, 0), last), w) for i, w in zip(idx, weights)])
    return result


def is_identity(taps: list[list[tuple[int, float]]], in_size: int) -> bool:
    """True when output index o reads exactly input index o with weight 1."""
    if len(taps) != in_size:
        return False
    for o, row in enumerate(taps):
        live = [(i, w) for i, w in row if w != 0.0]
        if live != [(o, 1.0)]:
            return False
    return True


Rows = list[list[tuple[int, float]]]  # per output index: [(source index, weight), ...]


def resize_tables(axes: list[AxisResize], method: ResizeMethod) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The tables of ONNX Resize over `axes` (one AxisResize per axis): see pack_tables."""
    return pack_tables([axis_taps(axis, method) for axis in axes], [axis.in_size for axis in axes])


def pack_tables(rows_per_axis: list[Rows], in_sizes: list[int]) -> tuple[list[int], np.ndarray, np.ndarray]:
    """(taps per axis, int32 source-index table, float32 weight table). An axis whose rows are
    the identity gets 0 taps and no table rows; the others get out_size * taps entries, rows padded
    with weight-0 taps, axes concatenated in order."""
    counts, indices, weights = [], [], []
    for rows, in_size in zip(rows_per_axis, in_sizes, strict=True):
        if is_identity(rows, in_size):
            counts.append(0)
            continue
        width = max(len(r) for r in rows)
        counts.append(width)
        for row in rows:
            padded = row + [(row[0][0], 0.0)] * (width - len(row))
            indices.extend(i for i, _ in padded)
            weights.extend(w for _, w in padded)
    return counts, np.array(indices, dtype=np.int32), np.array(weights, dtype=np.float32)


def split_tables(taps: list[int], out_shape: tuple[int, ...], indices: np.ndarray,
                 weights: np.ndarray) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """Per axis: ([out, taps] indices, [out, taps] weights), or None for a copied axis."""
    result: list[tuple[np.ndarray, np.ndarray] | None] = []
    offset = 0
    for n, size in zip(taps, out_shape):
        if n == 0:
            result.append(None)
            continue
        count = n * size
        result.append((indices[offset:offset + count].reshape(size, n), weights[offset:offset + count].reshape(size, n)))
        offset += count
    return result
