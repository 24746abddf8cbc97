"""ReduceRuntimeAxes: a Reduce whose axes are known only at run time (ONNX Reduce* with a run-time
`axes` input, iree_py/frontends/onnx_rt_reduce.py).

Inputs: X (f32, any rank R) and mask (i64[R], 1 where the axis is reduced, else 0). Attributes:
  kind      one of the Reduce kinds (sum mean max min prod l1 l2 logsum logsumexp sumsquare)
  keepdims  0/1: the output has rank R (reduced axes are 1) or R minus the number of reduced axes
  shape     the output dims: symbols read at run time from the tensor the frontend computes
  valid     a dim that must be 1 at run time (the axes are in range and, for keepdims 0, unique):
            a run-time check whose message says so
The output is row-major over the kept axes in order, for either keepdims.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.ir.dim_checks import require_equal
from iree_py.ir.opdef import OpDef
from iree_py.ir.types import DType, TensorType

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


def rt_reduce_reference(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """numpy: reduce X over the axes whose mask flag is set (none set: each value's map only)."""
    from iree_py.ir.reference import REDUCERS
    x, mask = ins
    axes = tuple(int(i) for i in np.flatnonzero(np.asarray(mask).reshape(-1)))
    with np.errstate(all="ignore"):
        y = REDUCERS[attrs["kind"]](x.astype(np.float64), axes)
    if not attrs["keepdims"]:
        y = np.squeeze(y, axis=axes)
    return np.asarray(y).astype(x.dtype)


RT_REDUCE_OP_DEFS = [
    OpDef("ReduceRuntimeAxes", ("keepdims", "kind", "shape", "valid"), 2, 2, rt_reduce_rule,
          dtypes=frozenset({DType.f32, DType.f64})),  # f64math: codegen/llvm/reduce_f64.py
]
