"""The numpy meaning of a fused epilogue, for the conv2d and matmul kernel tests.

Each op's semantics come from iree_py/ir/reference.py (the IR's own numpy reference), computed in
float64; this file only says how an epilogue operand lines up with the output.
"""
from __future__ import annotations

import numpy as np

from iree_py.codegen.kernel_spec import EpilogueOp
from iree_py.ir.reference import KERNELS


def apply_epilogue(ops: tuple[EpilogueOp, ...], y: np.ndarray, inputs: list[np.ndarray],
                   channel_shape: tuple[int, ...]) -> np.ndarray:
    """ops applied to float64 `y`; a "channel" operand is reshaped to `channel_shape`
    (conv: [M, 1, 1]; matmul: [N])."""
    y = y.astype(np.float64)
    for op in ops:
        if op.operand is None:
            y = KERNELS[op.op]([y], dict(op.attrs))
            continue
        operand = inputs[op.operand].astype(np.float64)
        if op.operand_kind == "scalar":
            operand = operand.reshape(-1)[:1].reshape(())
        elif op.operand_kind == "channel":
            operand = operand.reshape(channel_shape)
        lhs, rhs = (operand, y) if op.operand_first else (y, operand)
        y = np.asarray(KERNELS[op.op]([np.asarray(lhs), np.asarray(rhs)], {}), dtype=np.float64)
    return y
