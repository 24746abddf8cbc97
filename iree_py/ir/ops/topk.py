"""TopK: the k largest (or smallest) elements along an axis, or their indices (ONNX TopK's two
outputs are two single-output nodes; `result` says which one). k may be a symbol read at run time.
Shape rule and numpy reference."""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.ir.dim_checks import at_least
from iree_py.ir.opdef import Kernel, OpDef
from iree_py.ir.symbols import Expr, dim
from iree_py.ir.types import DType, TensorType


def _topk(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    shape = inputs[0].shape
    axis, k = attrs["axis"], attrs["k"]
    k = dim(k) if isinstance(k, Expr) else int(k)
    if not 0 <= axis < len(shape):
        raise ValueError(f"TopK axis {axis} / k {k} out of range for {inputs[0]}")
    try:
        if isinstance(k, int) and k < 0:
            raise ValueError("k < 0")
        at_least(shape[axis], k, f"TopK k {k} <= axis {axis}")
    except ValueError:
        raise ValueError(f"TopK axis {axis} / k {k} out of range for {inputs[0]}") from None
    if attrs["result"] not in ("values", "indices") or attrs["largest"] not in (0, 1):
        raise ValueError(f"TopK result {attrs['result']!r} must be values/indices, largest 0/1")
    out = tuple(k if i == axis else d for i, d in enumerate(shape))
    return [TensorType(inputs[0].dtype if attrs["result"] == "values" else DType.i64, out)]


def topk(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """The k largest (smallest) along axis, in order; ties: lower index first (stable sort)."""
    x, axis, k = ins[0], attrs["axis"], attrs["k"]
    order = np.argsort(-x.astype(np.float64) if attrs["largest"] else x, axis=axis, kind="stable")
    order = np.take(order, np.arange(k), axis=axis)
    if attrs["result"] == "indices":
        return order.astype(np.int64)
    return np.take_along_axis(x, order, axis=axis)


OP_DEFS = [
    OpDef("TopK", ("axis", "k", "largest", "result"), 1, 1, _topk,
          dtypes=frozenset({DType.f32, DType.f64, DType.i8, DType.i16, DType.i32, DType.i64,  # rt_datadep
                            DType.u8, DType.u16, DType.u32, DType.u64})),
]

KERNELS: dict[str, Kernel] = {"TopK": topk}
