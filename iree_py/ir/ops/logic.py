"""Comparisons, boolean logic, Where, IsNaN / IsInf, bit shifts and the bitwise ops, and StringEqual
(ONNX Equal on string tensors, docs/strings.md): shape rules and numpy references.

Comparisons and logic give bool (broadcasting). A shift by a negative amount or by the width or more
gives 0 (right shifts of negative signed values: -1); right shifts of signed types are arithmetic.
BitwiseAnd / Or / Xor take integers of one dtype.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from iree_py.ir.opdef import BOOL_DTYPES, FLOAT_DTYPES, INT_DTYPES, NUMERIC_DTYPES, Kernel, OpDef
from iree_py.ir.ops.elementwise import _binary_same, _same_dtype, broadcast_shape
from iree_py.ir.strings import utf8_bytes
from iree_py.ir.types import DType, TensorType


COMPARE_OPS = ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual")


LOGIC_OPS = ("And", "Or", "Xor")


SHIFT_OPS = ("ShiftLeft", "ShiftRight")


BITWISE_OPS = ("BitwiseAnd", "BitwiseOr", "BitwiseXor")


STRING_DTYPES = frozenset({DType.string})


def _compare(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    a, b = inputs
    _same_dtype(a, b)
    return [TensorType(DType.bool, broadcast_shape(a, b))]


def _logic(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    for t in inputs:
        if t.dtype != DType.bool:
            raise ValueError(f"logic ops take bool operands, got {t}")
    return [TensorType(DType.bool, broadcast_shape(*inputs))]


def _predicate(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    return [TensorType(DType.bool, inputs[0].shape)]


def _where(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    cond, x, y = inputs
    if cond.dtype != DType.bool:
        raise ValueError(f"Where condition must be bool, got {cond}")
    _same_dtype(x, y)
    return [TensorType(x.dtype, broadcast_shape(cond, x, y))]


def bitwise_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    a, b = inputs
    if a.dtype != b.dtype:
        raise ValueError(f"operand dtypes differ: {a} and {b}")
    return [TensorType(a.dtype, broadcast_shape(a, b))]


def _string_equal(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    a, b = inputs
    if a.dtype != DType.string or b.dtype != DType.string:
        raise ValueError(f"StringEqual takes two string operands, got {a} and {b}")
    return [TensorType(DType.bool, broadcast_shape(a, b))]


def _shift(left: bool) -> Kernel:
    def run(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
        a, b = ins
        bits = 8 * a.dtype.itemsize
        big = (b < 0) | (b >= bits) if b.dtype.kind == "i" else b >= bits
        amount = np.where(big, 0, b).astype(a.dtype)
        with np.errstate(all="ignore"):
            shifted = np.left_shift(a, amount) if left else np.right_shift(a, amount)
        fill = np.where(a < 0, -1, 0).astype(a.dtype) if not left else np.zeros_like(a)  # arithmetic >>
        return np.where(big, fill, shifted).astype(a.dtype)
    return run


def _isinf(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x = ins[0]
    return (np.isposinf(x) & bool(attrs["detect_positive"])) | (np.isneginf(x) & bool(attrs["detect_negative"]))


def _compare_kernel(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Kernel:
    return lambda ins, attrs: np.asarray(fn(ins[0], ins[1]), dtype=bool)


def string_equal(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """Element-wise byte equality with numpy broadcasting (str and bytes elements compare by UTF-8)."""
    a, b = (np.vectorize(utf8_bytes, otypes=[object])(np.asarray(x, dtype=object)) for x in ins)
    a, b = np.broadcast_arrays(a, b)
    return np.array([x == y for x, y in zip(a.reshape(-1), b.reshape(-1))], dtype=bool).reshape(a.shape)


OP_DEFS = [
    *(OpDef(op, (), 2, 2, _compare, elementwise=True,
            dtypes=NUMERIC_DTYPES | (BOOL_DTYPES if op == "Equal" else frozenset())) for op in COMPARE_OPS),
    *(OpDef(op, (), 2, 2, _logic, elementwise=True, dtypes=BOOL_DTYPES) for op in LOGIC_OPS),
    OpDef("Not", (), 1, 1, _logic, elementwise=True, dtypes=BOOL_DTYPES),
    OpDef("Where", (), 3, 3, _where, elementwise=True, dtypes=BOOL_DTYPES),
    OpDef("IsNaN", (), 1, 1, _predicate, elementwise=True, dtypes=FLOAT_DTYPES),
    OpDef("IsInf", ("detect_negative", "detect_positive"), 1, 1, _predicate, elementwise=True,
          dtypes=FLOAT_DTYPES),
    *(OpDef(op, (), 2, 2, _binary_same, elementwise=True, dtypes=INT_DTYPES) for op in SHIFT_OPS),
    *(OpDef(op, (), 2, 2, bitwise_rule, elementwise=True, dtypes=INT_DTYPES) for op in BITWISE_OPS),
    OpDef("StringEqual", (), 2, 2, _string_equal, dtypes=STRING_DTYPES),
]

KERNELS: dict[str, Kernel] = {
    "Equal": _compare_kernel(np.equal),
    "Less": _compare_kernel(np.less),
    "LessOrEqual": _compare_kernel(np.less_equal),
    "Greater": _compare_kernel(np.greater),
    "GreaterOrEqual": _compare_kernel(np.greater_equal),
    "And": _compare_kernel(np.logical_and),
    "Or": _compare_kernel(np.logical_or),
    "Xor": _compare_kernel(np.logical_xor),
    "Not": lambda ins, a: np.logical_not(ins[0]),
    "Where": lambda ins, a: np.where(ins[0], ins[1], ins[2]).astype(ins[1].dtype),
    "IsNaN": lambda ins, a: np.isnan(ins[0]),
    "IsInf": _isinf,
    "ShiftLeft": _shift(left=True),
    "ShiftRight": _shift(left=False),
    "BitwiseAnd": lambda ins, attrs: np.bitwise_and(ins[0], ins[1]),
    "BitwiseOr": lambda ins, attrs: np.bitwise_or(ins[0], ins[1]),
    "BitwiseXor": lambda ins, attrs: np.bitwise_xor(ins[0], ins[1]),
    "StringEqual": string_equal,
}
