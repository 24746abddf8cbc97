"""Resize and ResizeRuntime: shape rules and numpy references.

Resize carries tap tables computed at compile time (iree_py/ir/resize_math.py) as inputs X, index
(i32) and weight (f32): one run of `taps` entries per output index and axis; the kernel is a
gather-and-blend. ResizeRuntime is ONNX Resize/Upsample whose scales, sizes or roi are known only at
run time, or whose input has symbolic dims (iree_py/frontends/onnx/resize.py): its kernel
(iree_py/codegen/llvm/resize.py, resize_rt) computes source coordinates and weights per output index.

ResizeRuntime inputs: X (any rank R), scales (f32[K]) and roi (f32[2K]: starts then ends), one entry
per resized axis. Attributes:
  axes               the K resized axes (sorted or not, unique); the others are copied
  sizes              the R output dims (ints, or symbols read at run time)
  scales_from_sizes  1: the scale of axis a is f32(out) / f32(in) (ONNX `sizes` given), scales unread
  mode, coordinate_mode, nearest_mode, cubic_coeff_a, exclude_outside, extrapolation_value
  antialias          as ONNX Resize (iree_py/ir/resize_math.py)
X is f32, or any dtype with mode nearest (elements are moved).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.ir.dim_checks import DimCheck, record
from iree_py.ir.opdef import ANY_DTYPE, Kernel, OpDef, static_shape
from iree_py.ir.resize_math import (COORDINATE_MODES, MODES, NEAREST_MODES, OUTSIDE, AxisResize, ResizeMethod,
                                    axis_taps, pack_tables, split_tables)
from iree_py.ir.symbols import call, dim
from iree_py.ir.types import Dim, DType, TensorType


_static = static_shape


def _resize(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x, index, weight = inputs
    shape = _static(x)
    sizes, taps = [int(d) for d in attrs["sizes"]], [int(n) for n in attrs["taps"]]
    if len(sizes) != len(shape) or len(taps) != len(shape):
        raise ValueError(f"Resize sizes {sizes} and taps {taps} need one entry per axis of {x}")
    if index.dtype != DType.i32 or weight.dtype != DType.f32:
        raise ValueError(f"Resize tables must be i32 indices and f32 weights, got {index} and {weight}")
    if x.dtype != DType.f32 and any(n > 1 for n in taps):
        raise ValueError(f"Resize of {x} blends several taps; only f32 does (other dtypes: nearest only)")
    for axis, (n, size, dim) in enumerate(zip(taps, sizes, shape)):
        if n < 0 or size < 0 or (n == 0 and size != dim):
            raise ValueError(f"Resize axis {axis}: {n} taps for {dim} -> {size}")
    entries = sum(n * size for n, size in zip(taps, sizes))
    if _static(index) != (entries,) or _static(weight) != (entries,):
        raise ValueError(f"Resize tables {index} and {weight} should have {entries} entries")
    return [TensorType(x.dtype, tuple(sizes))]


def resize(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """Separable gather-and-blend over the tap tables; outside positions take extrapolation_value."""
    x, indices, weights = ins
    sizes = tuple(int(d) for d in attrs["sizes"])
    gather_only = all(n <= 1 for n in attrs["taps"])  # nearest: exact for every dtype
    y = x if gather_only else x.astype(np.float64)
    outside = np.zeros(sizes, dtype=bool)
    for axis, table in enumerate(split_tables(list(attrs["taps"]), sizes, indices, weights)):
        if table is None:
            continue
        idx, w = table
        shape = [1] * x.ndim
        shape[axis] = -1
        if gather_only:
            y = np.take(y, np.maximum(idx[:, 0], 0), axis=axis)
            outside |= (idx[:, 0] == OUTSIDE).reshape(shape)
            continue
        acc = 0.0
        for t in range(idx.shape[1]):
            acc = acc + np.take(y, np.maximum(idx[:, t], 0), axis=axis) * w[:, t].astype(np.float64).reshape(shape)
        y = acc
        outside |= (idx[:, 0] == OUTSIDE).reshape(shape)
    fill = np.array(attrs["extrapolation_value"]).astype(x.dtype)
    return np.where(outside, fill, y.astype(x.dtype))


# --- ResizeRuntime ---------------------------------------------------------------------------------

RT_RESIZE_ATTRS = ("antialias", "axes", "coordinate_mode", "cubic_coeff_a", "exclude_outside", "extrapolation_value",
                   "mode", "nearest_mode", "scales_from_sizes", "sizes")


def method_of(attrs: dict[str, Any]) -> ResizeMethod:
    return ResizeMethod(attrs["mode"], attrs["coordinate_mode"], attrs["nearest_mode"], float(attrs["cubic_coeff_a"]),
                        bool(attrs["exclude_outside"]), bool(attrs["antialias"]))


def rt_resize_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x, scales, roi = inputs
    rank = len(x.shape)
    axes = [int(a) for a in attrs["axes"]]
    sizes = list(attrs["sizes"])
    if attrs["mode"] not in MODES or attrs["coordinate_mode"] not in COORDINATE_MODES \
            or attrs["nearest_mode"] not in NEAREST_MODES:
        raise ValueError(f"ResizeRuntime mode {attrs['mode']!r} / coordinate_mode {attrs['coordinate_mode']!r} / "
                         f"nearest_mode {attrs['nearest_mode']!r}: expected one of {list(MODES)} / "
                         f"{list(COORDINATE_MODES)} / {list(NEAREST_MODES)}")
    if len(sizes) != rank or len(set(axes)) != len(axes) or not all(0 <= a < rank for a in axes):
        raise ValueError(f"ResizeRuntime sizes {sizes} / axes {axes} do not fit {x}")
    k = len(axes)
    if scales.dtype != DType.f32 or tuple(scales.shape) != (k,) or roi.dtype != DType.f32 \
            or tuple(roi.shape) != (2 * k,):
        raise ValueError(f"ResizeRuntime scales must be f32[{k}] and roi f32[{2 * k}] (axes {axes}), "
                         f"got {scales} and {roi}")
    if attrs["antialias"] and attrs["mode"] == "nearest":
        raise ValueError("ResizeRuntime antialias needs mode linear or cubic")
    if x.dtype != DType.f32 and attrs["mode"] != "nearest":
        raise ValueError(f"ResizeRuntime of {x} with mode {attrs['mode']}: only f32 blends (other dtypes: nearest)")
    for a in range(rank):
        if a not in axes:
            if dim(sizes[a]) != dim(x.shape[a]):
                raise ValueError(f"ResizeRuntime axis {a} is not resized but its size {sizes[a]} != {x.shape[a]}")
        elif not (isinstance(x.shape[a], int) and x.shape[a] > 0):
            _nonempty_source(x.shape[a], sizes[a], f"ResizeRuntime axis {a}: an empty input axis cannot be resized "
                                                   f"to a non-empty one")
    return [TensorType(x.dtype, tuple(sizes))]


def _nonempty_source(in_dim: Dim, out_dim: Dim, what: str) -> None:
    """in_dim > 0 or out_dim == 0 (else the kernel would read an empty axis): a run-time check."""
    if isinstance(in_dim, int) and isinstance(out_dim, int):
        if in_dim == 0 and out_dim != 0:
            raise ValueError(f"{what}: {in_dim} -> {out_dim}")
        return
    record(DimCheck(((dim(call("min", in_dim, 1)), 1), (dim(out_dim), 0)), what))


def rt_resize_reference(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """numpy: the static tap tables (resize_math) built from the run-time scales and roi."""
    x, scales, roi = ins
    axes = [int(a) for a in attrs["axes"]]
    sizes = [int(d) for d in attrs["sizes"]]
    k = len(axes)
    method = method_of(attrs)
    rows, in_sizes = [], []
    for a in range(x.ndim):
        d, o = x.shape[a], sizes[a]
        if a not in axes:
            rows.append([[(i, 1.0)] for i in range(d)])
        else:
            j = axes.index(a)
            from_sizes = bool(attrs["scales_from_sizes"])
            scale = float(np.float32(o) / np.float32(d)) if from_sizes and d else float(scales[j])
            length = None if from_sizes else float(np.float32(scale) * np.float32(d))  # resize_math docstring
            rows.append(axis_taps(AxisResize(d, o, scale, float(roi[j]), float(roi[k + j]), length), method))
        in_sizes.append(d)
    if any(d == 0 for d in x.shape) or any(o == 0 for o in sizes):
        return np.zeros(sizes, dtype=x.dtype)
    taps, indices, weights = pack_tables(rows, in_sizes)
    return resize([x, indices, weights], {"sizes": sizes, "taps": taps,
                                          "extrapolation_value": attrs["extrapolation_value"]})


OP_DEFS = [
    OpDef("Resize", ("extrapolation_value", "sizes", "taps"), 3, 3, _resize, dtypes=ANY_DTYPE),
    OpDef("ResizeRuntime", RT_RESIZE_ATTRS, 3, 3, rt_resize_rule, dtypes=ANY_DTYPE),
]

KERNELS: dict[str, Kernel] = {
    "Resize": resize,
    "ResizeRuntime": rt_resize_reference,
}
