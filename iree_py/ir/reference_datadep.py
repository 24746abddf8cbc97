"""numpy reference of the data-dependent ops of ops_datadep.py (registered in reference.py's KERNELS)."""
from __future__ import annotations

from typing import Any

import numpy as np


def nonzero_count(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    return np.array([np.count_nonzero(ins[0])], np.int64)


def nonzero(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    return np.array(np.nonzero(ins[0]), np.int64).reshape(ins[0].ndim, -1)


def unique_count(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    return np.array([np.unique(ins[0], axis=attrs["axis"]).shape[attrs["axis"]]], np.int64)


def unique(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """ONNX Unique along attrs axis: slices in lexicographic order, or in the order of their first
    occurrence (sorted 0)."""
    x, axis = ins[0], attrs["axis"]
    values, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True,
                                               axis=axis)
    inverse = inverse.reshape(-1)
    if not attrs["sorted"]:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        values, first, counts, inverse = np.take(values, order, axis=axis), first[order], counts[order], rank[inverse]
    if attrs["result"] == "values":
        return values.astype(x.dtype)
    return {"indices": first, "inverse": inverse, "counts": counts}[attrs["result"]].astype(np.int64).reshape(-1)


KERNELS = {
    "NonZeroCount": nonzero_count,
    "NonZero": nonzero,
    "UniqueCount": unique_count,
    "Unique": unique,
}
