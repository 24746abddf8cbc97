"""numpy reference of the ops in ops_misc.py (registered in reference.py's KERNELS): CumProd,
accumulated in the element type in order along the axis, as the kernel does; the Bitwise ops; BitCast."""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.ir.types import DType


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


KERNELS = {
    "CumProd": cumprod,
    "BitCast": lambda ins, attrs: np.array(ins[0], order="C").view(DType(attrs["to"]).numpy),
    "BitwiseAnd": lambda ins, attrs: np.bitwise_and(ins[0], ins[1]),
    "BitwiseOr": lambda ins, attrs: np.bitwise_or(ins[0], ins[1]),
    "BitwiseXor": lambda ins, attrs: np.bitwise_xor(ins[0], ins[1]),
}
