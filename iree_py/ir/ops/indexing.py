"""Shape rules and numpy reference kernels of the indexing ops: Gather, GatherElements, GatherND,
ScatterElements, ScatterND and Expand (docs/ir.md, "Indexing ops").

Index tensors are i32 or i64. A negative index counts from the end of its axis. An index still
outside the axis after that is an error, as in onnxruntime: the reference raises IndexOutOfRange,
the kernels fail the call with kernel status INDEX_OUT_OF_RANGE (codegen/kernel_abi.py) and never
touch memory outside their bindings.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.ir.dim_checks import at_least, require_one_or
from iree_py.ir.opdef import ANY_DTYPE, Kernel, OpDef, static_shape
from iree_py.ir.symbols import Expr, dim
from iree_py.ir.types import Dim, DType, TensorType


INDEX_DTYPES = frozenset({DType.i32, DType.i64})


SCATTER_REDUCTIONS = ("none", "add", "mul", "max", "min")


_static = static_shape


def _check_indices(t: TensorType) -> tuple[int, ...]:
    if t.dtype not in INDEX_DTYPES:
        raise ValueError(f"indices {t} must be i32 or i64")
    return _static(t)


def _index_shape(t: TensorType) -> tuple[Dim, ...]:
    """The shape of an index operand, which may be symbolic."""
    if t.dtype not in INDEX_DTYPES:
        raise ValueError(f"indices {t} must be i32 or i64")
    return t.shape


def _check_axis(axis: int, rank: int, what: TensorType) -> None:
    if not 0 <= axis < rank:
        raise ValueError(f"axis {axis} out of range for {what}")


def gather_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    data, indices = inputs[0].shape, _index_shape(inputs[1])
    axis = attrs["axis"]
    _check_axis(axis, len(data), inputs[0])
    return [TensorType(inputs[0].dtype, (*data[:axis], *indices, *data[axis + 1:]))]


def gather_elements_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    data, indices = inputs[0].shape, _index_shape(inputs[1])
    axis = attrs["axis"]
    _check_axis(axis, len(data), inputs[0])
    if len(indices) != len(data):
        raise ValueError(f"indices {inputs[1]} must have the rank of data {inputs[0]}")
    for k, (i, d) in enumerate(zip(indices, data)):
        if k != axis:
            try:
                at_least(d, i, f"GatherElements indices axis {k} fit data")
            except ValueError:
                raise ValueError(f"indices {inputs[1]} larger than data {inputs[0]} outside axis {axis}") from None
    return [TensorType(inputs[0].dtype, indices)]


def gather_nd_shape(data: tuple[int, ...], indices: tuple[int, ...], batch_dims: int) -> tuple[int, ...]:
    """GatherND's output shape; ValueError when data and indices do not fit together."""
    if not indices:
        raise ValueError("indices must have rank >= 1")
    k = indices[-1]
    if not 0 <= batch_dims < min(len(data), len(indices)):
        raise ValueError(f"batch_dims {batch_dims} must be below the ranks of data {data} and indices {indices}")
    if data[:batch_dims] != indices[:batch_dims]:
        raise ValueError(f"batch dims differ: data {data} and indices {indices} (batch_dims {batch_dims})")
    if not 1 <= k <= len(data) - batch_dims:
        raise ValueError(f"index tuples of length {k} do not fit data {data} after {batch_dims} batch dims")
    return (*indices[:-1], *data[batch_dims + k:])


def gather_nd_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    shape = gather_nd_shape(_static(inputs[0]), _check_indices(inputs[1]), attrs["batch_dims"])
    return [TensorType(inputs[0].dtype, shape)]


def _check_reduction(attrs: dict[str, Any]) -> None:
    if attrs["reduction"] not in SCATTER_REDUCTIONS:
        raise ValueError(f"reduction {attrs['reduction']!r} is not one of {list(SCATTER_REDUCTIONS)}")


def scatter_elements_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    data, indices = _static(inputs[0]), _check_indices(inputs[1])
    _check_reduction(attrs)
    axis = attrs["axis"]
    _check_axis(axis, len(data), inputs[0])
    if inputs[2].dtype != inputs[0].dtype or _static(inputs[2]) != indices:
        raise ValueError(f"updates {inputs[2]} must have the shape of indices {inputs[1]} and the dtype of data")
    if len(indices) != len(data) or any(i > d for k, (i, d) in enumerate(zip(indices, data)) if k != axis):
        raise ValueError(f"indices {inputs[1]} must have the rank of data {inputs[0]} and fit it outside axis {axis}")
    return [inputs[0]]


def scatter_nd_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    data, indices = _static(inputs[0]), _check_indices(inputs[1])
    _check_reduction(attrs)
    want = gather_nd_shape(data, indices, 0)
    if inputs[2].dtype != inputs[0].dtype or _static(inputs[2]) != want:
        raise ValueError(f"updates {inputs[2]} should be {want} of data's dtype for data {inputs[0]} "
                         f"and indices {inputs[1]}")
    return [inputs[0]]


def expand_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    shape = tuple(dim(d) if isinstance(d, Expr) else int(d) for d in attrs["shape"])
    x = inputs[0].shape
    if len(x) > len(shape):
        raise ValueError(f"{inputs[0]} does not broadcast to {list(shape)}")
    padded = (1,) * (len(shape) - len(x)) + tuple(x)
    for axis, (d, want) in enumerate(zip(padded, shape)):
        try:  # each input dim is 1 or the target's: broadcasting gives exactly `shape`
            require_one_or(d, want, f"Expand axis {axis}")
        except ValueError:
            raise ValueError(f"{inputs[0]} does not broadcast to {list(shape)}") from None
    return [TensorType(inputs[0].dtype, shape)]


class IndexOutOfRange(ValueError):
    """An index outside its axis. Folding leaves such a node to run time (where it may never run:
    an If branch not taken), where its kernel fails the call."""


def _wrap(indices: np.ndarray, dim: int | np.ndarray) -> np.ndarray:
    """Indices with negatives counted from the end of `dim`; IndexOutOfRange for one outside
    [-dim, dim - 1] (dim: one size, or one per last axis of `indices`)."""
    idx = indices.astype(np.int64)
    size = np.broadcast_to(np.asarray(dim, np.int64), idx.shape)
    bad = (idx < -size) | (idx >= size)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        n = int(size[at])
        where = ", ".join(map(str, at))
        raise IndexOutOfRange(f"indices[{where}] = {int(idx[at])} is outside the range [{-n}, {n - 1}] of its axis")
    return np.where(idx < 0, idx + size, idx)


def gather(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    data, axis = ins[0], attrs["axis"]
    return np.take(data, _wrap(ins[1], data.shape[axis]), axis=axis)


def gather_elements(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    data, axis = ins[0], attrs["axis"]
    window = tuple(slice(None) if k == axis else slice(0, n) for k, n in enumerate(ins[1].shape))
    return np.take_along_axis(data[window], _wrap(ins[1], data.shape[axis]), axis=axis)


def _nd_rows(data_shape: tuple[int, ...], indices: np.ndarray, batch_dims: int):
    """Yield (batch index, position in indices[..., :], data index tuple)."""
    k = indices.shape[-1]
    wrapped = _wrap(indices, np.array(data_shape[batch_dims:batch_dims + k], np.int64))
    for pos in np.ndindex(*indices.shape[:-1]):
        yield pos[:batch_dims], pos, tuple(int(i) for i in wrapped[pos])


def gather_nd(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    data, indices, b = ins[0], ins[1], attrs["batch_dims"]
    out = np.zeros(gather_nd_shape(data.shape, indices.shape, b), data.dtype)
    for batch, pos, where in _nd_rows(data.shape, indices, b):
        out[pos] = data[batch + where]
    return out


def _combine(reduction: str, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    if reduction == "none":
        return new
    if reduction == "add":
        return old + new
    if reduction == "mul":
        return old * new
    return np.maximum(old, new) if reduction == "max" else np.minimum(old, new)


def scatter_elements(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    data, indices, updates = ins
    axis, reduction = attrs["axis"], attrs["reduction"]
    out = data.copy()
    idx = _wrap(indices, data.shape[axis])
    with np.errstate(all="ignore"):
        for pos in np.ndindex(*indices.shape):
            at = pos[:axis] + (int(idx[pos]),) + pos[axis + 1:]
            out[at] = _combine(reduction, out[at], updates[pos])
    return out


def scatter_nd(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    data, indices, updates = ins
    out = data.copy()
    with np.errstate(all="ignore"):
        for _, pos, where in _nd_rows(data.shape, indices, 0):
            out[where] = _combine(attrs["reduction"], out[where], updates[pos])
    return out


def expand(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    return np.broadcast_to(ins[0], tuple(attrs["shape"])).copy()


OP_DEFS = [
    OpDef("Gather", ("axis",), 2, 2, gather_rule, dtypes=ANY_DTYPE),
    OpDef("GatherElements", ("axis",), 2, 2, gather_elements_rule, dtypes=ANY_DTYPE),
    OpDef("GatherND", ("batch_dims",), 2, 2, gather_nd_rule, dtypes=ANY_DTYPE),
    OpDef("ScatterElements", ("axis", "reduction"), 3, 3, scatter_elements_rule, dtypes=ANY_DTYPE),
    OpDef("ScatterND", ("reduction",), 3, 3, scatter_nd_rule, dtypes=ANY_DTYPE),
    OpDef("Expand", ("shape",), 1, 1, expand_rule, dtypes=ANY_DTYPE),
]

KERNELS: dict[str, Kernel] = {
    "Gather": gather,
    "GatherElements": gather_elements,
    "GatherND": gather_nd,
    "ScatterElements": scatter_elements,
    "ScatterND": scatter_nd,
    "Expand": expand,
}
