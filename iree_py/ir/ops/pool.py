"""Pooling: MaxPool (and MaxPoolIndices, ONNX MaxPool's Indices output), AveragePool,
GlobalAveragePool and LpPool: shape rules and numpy references (2-D, NCHW; the ONNX frontend runs
1-D and 3-D pools as 2-D ones)."""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from iree_py.ir.opdef import Kernel, OpDef, pool_output_dim, pool_output_size, pool_rule
from iree_py.ir.ops.conv import _pad_nchw, _windows
from iree_py.ir.types import DType, TensorType


def _global_pool(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = inputs[0].shape
    if len(x) < 3:
        raise ValueError(f"GlobalAveragePool wants rank >= 3, got {inputs[0]}")
    return [TensorType(inputs[0].dtype, (x[0], x[1], *([1] * (len(x) - 2))))]


def _lp_pool(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = inputs[0].shape
    if len(x) != 4:
        raise ValueError(f"LpPool wants rank 4 input, got {inputs[0]}")
    if int(attrs["p"]) < 1:
        raise ValueError(f"LpPool p must be an integer >= 1, got {attrs['p']}")
    (kh, kw), (sh, sw), (pt, pl, pb, pr), (dh, dw) = attrs["kernel"], attrs["strides"], attrs["pads"], attrs["dilations"]
    oh = pool_output_dim(x[2], kh, sh, pt, pb, dh, attrs["ceil_mode"])
    ow = pool_output_dim(x[3], kw, sw, pl, pr, dw, attrs["ceil_mode"])
    return [TensorType(inputs[0].dtype, (x[0], x[1], oh, ow))]


# --- numpy reference -------------------------------------------------------------------------------

def _pool_padded_extent(x: np.ndarray, attrs: dict[str, Any], out_hw: tuple[int, int]) -> list[int]:
    """Pads extended at the bottom/right so every ceil_mode window lies inside the array."""
    (kh, kw), strides, pads = attrs["kernel"], attrs["strides"], attrs["pads"]
    dil = attrs.get("dilations", [1, 1])
    need_h = (out_hw[0] - 1) * strides[0] + dil[0] * (kh - 1) + 1
    need_w = (out_hw[1] - 1) * strides[1] + dil[1] * (kw - 1) + 1
    extra_b = max(0, need_h - (x.shape[2] + pads[0] + pads[2]))
    extra_r = max(0, need_w - (x.shape[3] + pads[1] + pads[3]))
    return [pads[0], pads[1], pads[2] + extra_b, pads[3] + extra_r]


def _pool_out_hw(x: np.ndarray, attrs: dict[str, Any]) -> tuple[int, int]:
    (kh, kw), s, p = attrs["kernel"], attrs["strides"], attrs["pads"]
    d = attrs.get("dilations", [1, 1])
    return (pool_output_size(x.shape[2], kh, s[0], p[0], p[2], d[0], attrs["ceil_mode"]),
            pool_output_size(x.shape[3], kw, s[1], p[1], p[3], d[1], attrs["ceil_mode"]))


def max_pool_indices(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """The flat index in X of each window's first maximum (padding never wins)."""
    x = ins[0]
    n, c, h, w = x.shape
    out_hw = _pool_out_hw(x, attrs)
    ext = _pool_padded_extent(x, attrs, out_hw)
    plane = np.arange(h * w).reshape(h, w) if not attrs["storage_order"] else np.arange(h * w).reshape(w, h).T
    flat = (np.arange(n * c).reshape(n, c, 1, 1) * (h * w) + plane).astype(np.float64)
    xp = np.ascontiguousarray(_pad_nchw(x.astype(np.float64), ext, -np.inf))
    ip = np.ascontiguousarray(_pad_nchw(flat, ext, -1.0))
    kernel, strides, dilations = tuple(attrs["kernel"]), attrs["strides"], attrs["dilations"]
    values = _windows(xp, kernel, strides, dilations, out_hw).reshape(n, c, *out_hw, -1)
    indices = _windows(ip, kernel, strides, dilations, out_hw).reshape(n, c, *out_hw, -1)
    first = values.argmax(axis=-1)[..., None]
    return np.take_along_axis(indices, first, axis=-1)[..., 0].astype(np.int64)


def max_pool(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x = ins[0]
    out_hw = _pool_out_hw(x, attrs)
    lowest = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min  # quant: i8/u8 too
    xp = np.ascontiguousarray(_pad_nchw(x, _pool_padded_extent(x, attrs, out_hw), lowest))
    win = _windows(xp, tuple(attrs["kernel"]), attrs["strides"], attrs["dilations"], out_hw)
    return win.max(axis=(4, 5)).astype(x.dtype)


def average_pool(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """count_include_pad counts the declared pads but never the ceil_mode overhang."""
    x = ins[0]
    out_hw = _pool_out_hw(x, attrs)
    ext = _pool_padded_extent(x, attrs, out_hw)
    xp = np.ascontiguousarray(_pad_nchw(x.astype(np.float64), ext, 0.0))
    dilations = attrs["dilations"]
    win = _windows(xp, tuple(attrs["kernel"]), attrs["strides"], dilations, out_hw)
    sums = win.sum(axis=(4, 5))
    pads = attrs["pads"]
    h, w = x.shape[2], x.shape[3]
    if attrs["count_include_pad"]:
        mask = _pad_nchw(np.zeros((1, 1, h, w)), pads, 0.0) + 1.0
    else:
        mask = _pad_nchw(np.ones((1, 1, h, w)), pads, 0.0)
    mask = np.ascontiguousarray(_pad_nchw(mask, [0, 0, ext[2] - pads[2], ext[3] - pads[3]], 0.0))
    counts = _windows(mask, tuple(attrs["kernel"]), attrs["strides"], dilations, out_hw).sum(axis=(4, 5))
    return (sums / counts).astype(x.dtype)


def lp_pool(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x = ins[0]
    p = int(attrs["p"])
    (kh, kw), (sh, sw), (pt, pl, pb, pr), (dh, dw) = attrs["kernel"], attrs["strides"], attrs["pads"], attrs["dilations"]
    h, w = x.shape[2:]
    oh = pool_output_size(h, kh, sh, pt, pb, dh, attrs["ceil_mode"])
    ow = pool_output_size(w, kw, sw, pl, pr, dw, attrs["ceil_mode"])
    powered = np.abs(x.astype(np.float64)) ** p
    y = np.zeros((*x.shape[:2], oh, ow))
    for oy, ox, i, j in itertools.product(range(oh), range(ow), range(kh), range(kw)):
        iy, ix = oy * sh - pt + i * dh, ox * sw - pl + j * dw
        if 0 <= iy < h and 0 <= ix < w:
            y[:, :, oy, ox] += powered[:, :, iy, ix]
    return (y ** (1.0 / p)).astype(x.dtype)


OP_DEFS = [
    OpDef("MaxPool", ("ceil_mode", "dilations", "kernel", "pads", "strides"), 1, 1, pool_rule,
          dtypes=frozenset({DType.f32, DType.i8, DType.u8})),  # quant: max commutes with the affine map
    # The Indices output of ONNX MaxPool: the flat index in X of each window's first maximum
    # (storage_order 0: row-major over N, C, H, W; 1: H and W swapped, column-major per plane).
    OpDef("MaxPoolIndices", ("ceil_mode", "dilations", "kernel", "pads", "storage_order", "strides"), 1, 1,
          lambda inputs, attrs: [TensorType(DType.i64, t.shape) for t in pool_rule(inputs, attrs)]),
    OpDef("AveragePool", ("ceil_mode", "count_include_pad", "dilations", "kernel", "pads", "strides"), 1, 1, pool_rule),
    OpDef("GlobalAveragePool", (), 1, 1, _global_pool),
    # (sum over the window of |x|^p)^(1/p); positions outside the input count as 0.
    OpDef("LpPool", ("ceil_mode", "dilations", "kernel", "p", "pads", "strides"), 1, 1, _lp_pool),
]

KERNELS: dict[str, Kernel] = {
    "MaxPool": max_pool,
    "MaxPoolIndices": max_pool_indices,
    "AveragePool": average_pool,
    "GlobalAveragePool": lambda ins, a: ins[0].mean(axis=tuple(range(2, ins[0].ndim)), keepdims=True,
                                                    dtype=np.float64).astype(ins[0].dtype),
    "LpPool": lp_pool,
}
