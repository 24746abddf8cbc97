"""numpy reference of Resize, Pad, ArgMax/ArgMin, CumSum and TopK (registered in reference.py's KERNELS)."""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.ir.resize_math import OUTSIDE, split_tables


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


def pad(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """Negative pads crop first; then numpy's pad modes (ONNX reflect = numpy reflect, symmetric,
    edge = edge, wrap = wrap)."""
    x = ins[0]
    rank = x.ndim
    pads = [int(p) for p in attrs["pads"]]
    crop = tuple(slice(max(-pads[i], 0), x.shape[i] - max(-pads[rank + i], 0)) for i in range(rank))
    x = x[crop]
    widths = [(max(pads[i], 0), max(pads[rank + i], 0)) for i in range(rank)]
    if attrs["mode"] == "constant":
        return np.pad(x, widths, mode="constant", constant_values=np.array(attrs["value"]).astype(x.dtype))
    return np.pad(x, widths, mode=attrs["mode"])


def _arg(pick: str):
    def run(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
        x, axis = ins[0], attrs["axis"]
        fn = np.argmax if pick == "max" else np.argmin
        if attrs["select_last_index"]:
            n = x.shape[axis]
            y = n - 1 - fn(np.flip(x, axis=axis), axis=axis)
        else:
            y = fn(x, axis=axis)
        y = y.astype(np.int64)
        return np.expand_dims(y, axis) if attrs["keepdims"] else y
    return run


def cumsum(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x, axis = ins[0].astype(np.float64), attrs["axis"]
    if attrs["reverse"]:
        x = np.flip(x, axis=axis)
    y = np.cumsum(x, axis=axis)
    if attrs["exclusive"]:
        y = y - x
    if attrs["reverse"]:
        y = np.flip(y, axis=axis)
    return y.astype(ins[0].dtype)


def topk(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """The k largest (smallest) along axis, in order; ties: lower index first (stable sort)."""
    x, axis, k = ins[0], attrs["axis"], attrs["k"]
    order = np.argsort(-x.astype(np.float64) if attrs["largest"] else x, axis=axis, kind="stable")
    order = np.take(order, np.arange(k), axis=axis)
    if attrs["result"] == "indices":
        return order.astype(np.int64)
    return np.take_along_axis(x, order, axis=axis)


KERNELS = {
    "Resize": resize,
    "Pad": pad,
    "ArgMax": _arg("max"),
    "ArgMin": _arg("min"),
    "CumSum": cumsum,
    "TopK": topk,
}
