"""Reductions over axes and along one axis: Reduce (kind sum, mean, max, min, prod, l1, l2, logsum,
logsumexp, sumsquare over sorted axes), ReduceRuntimeAxes, ArgMax / ArgMin, and the running ones,
CumSum and CumProd: shape rules and numpy references.

ReduceRuntimeAxes: a Reduce whose axes are known only at run time (ONNX Reduce* with a run-time
`axes` input, iree_py/frontends/onnx/reduce.py). Inputs: X (f32, any rank R) and mask (i64[R], 1
where the axis is reduced, else 0). Attributes:
  kind      one of the Reduce kinds
  keepdims  0/1: the output has rank R (reduced axes are 1) or R minus the number of reduced axes
  shape     the output dims: symbols read at run time from the tensor the frontend computes
  valid     a dim that must be 1 at run time (the axes are in range and, for keepdims 0, unique):
            a run-time check whose message says so
The output is row-major over the kept axes in order, for either keepdims.

CumSum / CumProd (ONNX CumSum, CumProd): the input's type along `axis`; CumProd accumulates in
the element type in order along the axis, as the kernel does.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from iree_py.ir.dim_checks import at_least, require_equal
from iree_py.ir.opdef import Kernel, OpDef
from iree_py.ir.symbols import Expr
from iree_py.ir.types import DType, TensorType


REDUCE_KINDS = ("sum", "mean", "max", "min", "prod", "l1", "l2", "logsum", "logsumexp", "sumsquare")


def _reduce(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = inputs[0].shape
    axes = list(attrs["axes"])
    if attrs["kind"] not in REDUCE_KINDS:
        raise ValueError(f"Reduce kind {attrs['kind']!r} is not one of {list(REDUCE_KINDS)}")
    if not axes or axes != sorted(set(axes)) or not all(0 <= a < len(x) for a in axes):
        raise ValueError(f"Reduce axes {axes} must be sorted, unique, non-empty and in range for {inputs[0]}")
    if attrs["keepdims"] not in (0, 1):
        raise ValueError(f"Reduce keepdims must be 0 or 1, got {attrs['keepdims']!r}")
    if attrs["keepdims"]:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x))
    else:
        shape = tuple(d for i, d in enumerate(x) if i not in axes)
    return [TensorType(inputs[0].dtype, shape)]


RT_REDUCE_KINDS = ("sum", "mean", "max", "min", "prod", "l1", "l2", "logsum", "logsumexp", "sumsquare")


def rt_reduce_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x, mask = inputs
    rank = len(x.shape)
    if attrs["kind"] not in RT_REDUCE_KINDS:
        raise ValueError(f"ReduceRuntimeAxes kind {attrs['kind']!r} is not one of {list(RT_REDUCE_KINDS)}")
    if attrs["keepdims"] not in (0, 1):
        raise ValueError(f"ReduceRuntimeAxes keepdims must be 0 or 1, got {attrs['keepdims']!r}")
    if mask.dtype != DType.i64 or tuple(mask.shape) != (rank,):
        raise ValueError(f"ReduceRuntimeAxes mask must be i64[{rank}] (one flag per axis of {x}), got {mask}")
    shape = tuple(attrs["shape"])
    if attrs["keepdims"] and len(shape) != rank:
        raise ValueError(f"ReduceRuntimeAxes with keepdims=1 keeps rank {rank} of {x}, got shape {list(shape)}")
    if not attrs["keepdims"] and len(shape) > rank:
        raise ValueError(f"ReduceRuntimeAxes output shape {list(shape)} has more axes than {x}")
    what = ("the axes given at run time must lie in [-rank, rank)" if attrs["keepdims"] else
            "the axes given at run time must lie in [-rank, rank) and be unique (keepdims=0)")
    require_equal(attrs["valid"], 1, f"{what}, rank {rank}")
    return [TensorType(x.dtype, shape)]


def _arg(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    shape = inputs[0].shape
    axis = attrs["axis"]
    if not 0 <= axis < len(shape) or shape[axis] == 0:
        raise ValueError(f"axis {axis} out of range (or empty) for {inputs[0]}")
    if isinstance(shape[axis], Expr):
        at_least(shape[axis], 1, f"reduced axis {axis} is not empty")
    if attrs["keepdims"] not in (0, 1) or attrs["select_last_index"] not in (0, 1):
        raise ValueError(f"keepdims {attrs['keepdims']} and select_last_index {attrs['select_last_index']} must be 0/1")
    out = tuple(1 if i == axis else d for i, d in enumerate(shape)) if attrs["keepdims"] else \
        tuple(d for i, d in enumerate(shape) if i != axis)
    return [TensorType(DType.i64, out)]


CUMULATIVE_DTYPES = frozenset({DType.f32, DType.f64, DType.i32, DType.i64})


def cumulative_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    """CumSum / CumProd: the input's type; axis in range, exclusive and reverse 0/1."""
    shape = inputs[0].shape
    if not 0 <= attrs["axis"] < len(shape):
        raise ValueError(f"axis {attrs['axis']} out of range for {inputs[0]}")
    if attrs["exclusive"] not in (0, 1) or attrs["reverse"] not in (0, 1):
        raise ValueError(f"exclusive {attrs['exclusive']} and reverse {attrs['reverse']} must be 0/1")
    return [inputs[0]]


# --- numpy reference -------------------------------------------------------------------------------

def _logsumexp(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    m = x.max(axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.log(np.exp(x - m).sum(axis=axes, keepdims=True)) + m


REDUCERS: dict[str, Callable[[np.ndarray, tuple[int, ...]], np.ndarray]] = {
    "sum": lambda x, axes: x.sum(axis=axes, keepdims=True),
    "mean": lambda x, axes: x.mean(axis=axes, keepdims=True),
    "max": lambda x, axes: x.max(axis=axes, keepdims=True),
    "min": lambda x, axes: x.min(axis=axes, keepdims=True),
    "prod": lambda x, axes: x.prod(axis=axes, keepdims=True),
    "l1": lambda x, axes: np.abs(x).sum(axis=axes, keepdims=True),
    "l2": lambda x, axes: np.sqrt((x * x).sum(axis=axes, keepdims=True)),
    "logsum": lambda x, axes: np.log(x.sum(axis=axes, keepdims=True)),
    "logsumexp": _logsumexp,
    "sumsquare": lambda x, axes: (x * x).sum(axis=axes, keepdims=True),
}


def reduce(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    axes = tuple(attrs["axes"])
    with np.errstate(all="ignore"):
        y = REDUCERS[attrs["kind"]](ins[0].astype(np.float64), axes)
    if not attrs["keepdims"]:
        y = np.squeeze(y, axis=axes)
    return np.asarray(y).astype(ins[0].dtype)


def rt_reduce_reference(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """numpy: reduce X over the axes whose mask flag is set (none set: each value's map only)."""
    x, mask = ins
    axes = tuple(int(i) for i in np.flatnonzero(np.asarray(mask).reshape(-1)))
    with np.errstate(all="ignore"):
        y = REDUCERS[attrs["kind"]](x.astype(np.float64), axes)
    if not attrs["keepdims"]:
        y = np.squeeze(y, axis=axes)
    return np.asarray(y).astype(x.dtype)


def _arg_kernel(pick: str):
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


def cumprod(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x, axis = ins[0], attrs["axis"]
    if attrs["reverse"]:
        x = np.flip(x, axis=axis)
    if attrs["exclusive"]:
        ones = np.ones_like(np.take(x, [0], axis=axis))
        x = np.concatenate([ones, np.take(x, np.arange(x.shape[axis] - 1), axis=axis)], axis=axis)
    with np.errstate(over="ignore"):
        y = np.cumprod(x, axis=axis, dtype=x.dtype)
    return np.flip(y, axis=axis) if attrs["reverse"] else y


OP_DEFS = [
    OpDef("Reduce", ("axes", "keepdims", "kind"), 1, 1, _reduce,
          dtypes=frozenset({DType.f32, DType.f64})),  # f64: codegen/llvm/reduce.py
    OpDef("ReduceRuntimeAxes", ("keepdims", "kind", "shape", "valid"), 2, 2, rt_reduce_rule,
          dtypes=frozenset({DType.f32, DType.f64})),  # f64math: codegen/llvm/reduce.py (reduce_rt)
    OpDef("ArgMax", ("axis", "keepdims", "select_last_index"), 1, 1, _arg),
    OpDef("ArgMin", ("axis", "keepdims", "select_last_index"), 1, 1, _arg),
    OpDef("CumSum", ("axis", "exclusive", "reverse"), 1, 1, cumulative_rule, dtypes=CUMULATIVE_DTYPES),
    OpDef("CumProd", ("axis", "exclusive", "reverse"), 1, 1, cumulative_rule, dtypes=CUMULATIVE_DTYPES),
]

KERNELS: dict[str, Kernel] = {
    "Reduce": reduce,
    "ReduceRuntimeAxes": rt_reduce_reference,
    "ArgMax": _arg_kernel("max"),
    "ArgMin": _arg_kernel("min"),
    "CumSum": cumsum,
    "CumProd": cumprod,
}
