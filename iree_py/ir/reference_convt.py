"""numpy reference of ConvTranspose, QConvTranspose and LpPool (registered in reference.py's KERNELS)."""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from iree_py.ir.opdef import pool_output_size
from iree_py.ir.ops_convt import conv_transpose_full_size
from iree_py.ir.quant_math import wrap_i32
from iree_py.ir.reference_quant import _requantize


def _scatter(x: np.ndarray, w: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """Scatter each input pixel times each kernel tap into the full result, then crop by pads (f64)."""
    rank = x.ndim - 2
    group = int(attrs["group"])
    strides, dilations, pads = attrs["strides"], attrs["dilations"], attrs["pads"]
    n, c = x.shape[:2]
    cg, mg = c // group, w.shape[1]
    full = [conv_transpose_full_size(x.shape[2 + a], w.shape[2 + a], strides[a], dilations[a]) for a in range(rank)]
    extra = [max(0, -pads[rank + a]) for a in range(rank)]  # negative end pads extend the result
    y = np.zeros((n, mg * group, *(f + e for f, e in zip(full, extra))))
    for g in range(group):
        xg = x[:, g * cg:(g + 1) * cg]
        for taps in itertools.product(*(range(k) for k in w.shape[2:])):
            contrib = np.einsum("nc...,cm->nm...", xg, w[g * cg:(g + 1) * cg, :, *taps])
            where = tuple(slice(t * d, t * d + (size - 1) * s + 1, s)
                          for t, d, s, size in zip(taps, dilations, strides, x.shape[2:]))
            y[(slice(None), slice(g * mg, (g + 1) * mg), *where)] += contrib
    crop = tuple(slice(pads[a], pads[a] + full[a] + extra[a] - pads[a] - max(0, pads[rank + a]))
                 for a in range(rank))
    return y[(slice(None), slice(None), *crop)]


def conv_transpose(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    y = _scatter(ins[0].astype(np.float64), ins[1].astype(np.float64), attrs)
    if len(ins) == 3:
        y = y + ins[2].astype(np.float64).reshape(1, -1, *([1] * (y.ndim - 2)))
    return y.astype(ins[0].dtype)


def qconv_transpose(ins: list[np.ndarray], a: dict[str, Any]) -> np.ndarray:
    """Exact: the centered int8 products and their sums stay far below 2**53 in float64."""
    x = ins[0].astype(np.int64) - a["x_zero_point"]
    w = ins[1].astype(np.int64)
    group, mg = int(a["group"]), w.shape[1]
    zero_points = np.broadcast_to(np.asarray(a["w_zero_point"], dtype=np.int64), (mg * group,))
    w_zp = zero_points.reshape(group, 1, mg).repeat(w.shape[0] // group, axis=1).reshape(w.shape[0], mg)
    w = w - w_zp[:, :, None, None]
    acc = np.rint(_scatter(x.astype(np.float64), w.astype(np.float64), a)).astype(np.int64)
    if len(ins) == 3 and ins[2] is not None:
        acc = acc + ins[2].astype(np.int64).reshape(1, -1, 1, 1)
    return _requantize(wrap_i32(acc), a, 1)


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


KERNELS = {
    "ConvTranspose": conv_transpose,
    "LpPool": lp_pool,
    "QConvTranspose": qconv_transpose,
}
