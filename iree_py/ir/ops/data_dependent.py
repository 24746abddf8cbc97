"""Ops whose output size depends on the data (ONNX NonZero, Compress and Unique; TopK with a k
read at run time is the TopK op of topk.py). Each is computed in two passes: a count op
writes the size into an i64[1] tensor, the lowering reads it into a symbol
(`graph.symbol_sources`), the output is allocated at its real size, and the op writes it.

  NonZeroCount  X (any numeric or bool dtype) -> i64[1]: the number of non-zero elements
  NonZero       X, count (the NonZeroCount result) -> i64[rank, n]; attrs count (the symbol n
                read from the count tensor): the coordinates of the non-zero elements in
                row-major order, one row per axis (ONNX NonZero)
  UniqueCount   X -> i64[1]; attrs axis: the number of distinct slices X[..., j, ...] along axis
                (ONNX Unique without axis is this on the flattened X with axis 0)
  Unique        X, count -> attrs axis, result (values, indices, inverse, counts), sorted (0/1),
                count (the symbol u): values (X's shape with u at axis, X's dtype), indices [u],
                inverse [X.shape[axis]], counts [u] (i64); sorted: slices in lexicographic order
Shape rules and numpy references.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.ir.opdef import Kernel, OpDef
from iree_py.ir.symbols import Expr, dim
from iree_py.ir.types import DType, TensorType


# The element types the data-dependent kernels compare (bool and integers as integers, f16/bf16 as f32).
DATADEP_DTYPES = frozenset({DType.f32, DType.f64, DType.f16, DType.bf16, DType.bool, DType.i8, DType.u8, DType.i16, DType.u16,
                            DType.i32, DType.u32, DType.i64, DType.u64})


UNIQUE_RESULTS = ("values", "indices", "inverse", "counts")


def _count_tensor(t: TensorType, what: str) -> None:
    if t.dtype != DType.i64 or t.shape != (1,):
        raise ValueError(f"{what}: the count input must be the i64[1] count tensor, got {t}")


def _count_attr(attrs: dict[str, Any], what: str) -> int | Expr:
    count = attrs["count"]
    count = dim(count) if isinstance(count, Expr) else int(count)
    if isinstance(count, int) and count < 0:
        raise ValueError(f"{what}: count {count} is negative")
    return count


def _nonzero_count(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    return [TensorType(DType.i64, (1,))]


def _nonzero(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x, count_t = inputs
    _count_tensor(count_t, "NonZero")
    return [TensorType(DType.i64, (x.rank, _count_attr(attrs, "NonZero")))]


def _unique_axis(x: TensorType, attrs: dict[str, Any], what: str) -> int:
    axis = int(attrs["axis"])
    if not 0 <= axis < x.rank:
        raise ValueError(f"{what}: axis {axis} out of range for {x}")
    return axis


def _unique_count(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    _unique_axis(inputs[0], attrs, "UniqueCount")
    return [TensorType(DType.i64, (1,))]


def _unique(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x, count_t = inputs
    _count_tensor(count_t, "Unique")
    axis = _unique_axis(x, attrs, "Unique")
    if attrs["result"] not in UNIQUE_RESULTS or attrs["sorted"] not in (0, 1):
        raise ValueError(f"Unique: result {attrs['result']!r} must be one of {list(UNIQUE_RESULTS)}, sorted 0/1")
    count = _count_attr(attrs, "Unique")
    if attrs["result"] == "values":
        return [TensorType(x.dtype, tuple(count if i == axis else d for i, d in enumerate(x.shape)))]
    return [TensorType(DType.i64, (x.shape[axis] if attrs["result"] == "inverse" else count,))]


# --- numpy reference -------------------------------------------------------------------------------

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


OP_DEFS = [
    OpDef("NonZeroCount", (), 1, 1, _nonzero_count, dtypes=DATADEP_DTYPES),
    OpDef("NonZero", ("count",), 2, 2, _nonzero, dtypes=DATADEP_DTYPES),
    OpDef("UniqueCount", ("axis",), 1, 1, _unique_count, dtypes=DATADEP_DTYPES),
    OpDef("Unique", ("axis", "count", "result", "sorted"), 2, 2, _unique, dtypes=DATADEP_DTYPES),
]

KERNELS: dict[str, Kernel] = {
    "NonZeroCount": nonzero_count,
    "NonZero": nonzero,
    "UniqueCount": unique_count,
    "Unique": unique,
}
