"""MatMul (numpy semantics on rank >= 2: batch dims broadcast): shape rule and numpy reference.
The quantized forms (QMatMul, MatMulInteger) are in quantized.py."""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.ir.dim_checks import broadcast_shapes, require_equal
from iree_py.ir.opdef import Kernel, OpDef
from iree_py.ir.types import DType, TensorType


def _matmul(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    a, b = inputs[0].shape, inputs[1].shape
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"MatMul operands must have rank >= 2, got {inputs[0]} and {inputs[1]}")
    try:
        require_equal(a[-1], b[-2], "MatMul inner dims")
    except ValueError:
        raise ValueError(f"MatMul inner dims differ: {inputs[0]} x {inputs[1]}") from None
    try:
        batch = broadcast_shapes([a[:-2], b[:-2]], "MatMul batch dims")
    except ValueError:
        raise ValueError(f"MatMul batch dims do not broadcast: {inputs[0]} x {inputs[1]}") from None
    return [TensorType(inputs[0].dtype, (*batch, a[-2], b[-1]))]


def _matmul_kernel(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    a, b = ins
    return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)


OP_DEFS = [
    OpDef("MatMul", (), 2, 2, _matmul, dtypes=frozenset({DType.f32, DType.f64})),  # f64: static, no epilogue
]

KERNELS: dict[str, Kernel] = {"MatMul": _matmul_kernel}
