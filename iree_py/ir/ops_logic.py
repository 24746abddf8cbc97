"""Dtype sets and the shape rules of Cast, comparisons, logic, Where, shifts, IsNaN/IsInf and
FloorMod (ops.py's table takes LOGIC_OP_DEFS)."""
from __future__ import annotations

from typing import Any

from iree_py.ir.narrow_types import NARROW_DTYPES
from iree_py.ir.opdef import OpDef
from iree_py.ir.dim_checks import broadcast_shapes
from iree_py.ir.types import Dim, DType, TensorType

FLOAT_DTYPES = frozenset(d for d in DType if d.numpy.kind == "f") - NARROW_DTYPES  # bf16, f8: storage only
# Ops whose kernels approximate in single precision (exp, log, trig, ...) take no f64: an f64
# result computed in f32 would overflow early and lose digits.
SINGLE_HALF_DTYPES = frozenset({DType.f32, DType.f16})
INT_DTYPES = frozenset(d for d in DType if d.numpy.kind in "iu")
UNSIGNED_DTYPES = frozenset(d for d in DType if d.numpy.kind == "u")
NUMERIC_DTYPES = FLOAT_DTYPES | INT_DTYPES
BOOL_DTYPES = frozenset({DType.bool})

COMPARE_OPS = ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual")
LOGIC_OPS = ("And", "Or", "Xor")
SHIFT_OPS = ("ShiftLeft", "ShiftRight")


def broadcast_shape(*types: TensorType) -> tuple[Dim, ...]:
    """numpy broadcasting of the operands' shapes; symbolic dims record run-time checks."""
    try:
        return broadcast_shapes([t.shape for t in types], "broadcast operands")
    except ValueError as e:
        raise ValueError(f"shapes {', '.join(str(t) for t in types)} do not broadcast ({e})") from None


def _same_dtype(a: TensorType, b: TensorType) -> None:
    if a.dtype != b.dtype:
        raise ValueError(f"operand dtypes differ: {a} and {b}")


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


def _cast(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    names = [d.value for d in DType]
    if attrs["to"] not in names:
        raise ValueError(f"Cast to {attrs['to']!r}: expected one of {names}")
    return [TensorType(DType(attrs["to"]), inputs[0].shape)]


def _where(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    cond, x, y = inputs
    if cond.dtype != DType.bool:
        raise ValueError(f"Where condition must be bool, got {cond}")
    _same_dtype(x, y)
    return [TensorType(x.dtype, broadcast_shape(cond, x, y))]


def _binary_same(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    a, b = inputs
    _same_dtype(a, b)
    return [TensorType(a.dtype, broadcast_shape(a, b))]


LOGIC_OP_DEFS = [
    OpDef("Cast", ("to",), 1, 1, _cast, elementwise=True, dtypes=NUMERIC_DTYPES | BOOL_DTYPES | NARROW_DTYPES),
    *(OpDef(op, (), 2, 2, _compare, elementwise=True,
            dtypes=NUMERIC_DTYPES | (BOOL_DTYPES if op == "Equal" else frozenset())) for op in COMPARE_OPS),
    *(OpDef(op, (), 2, 2, _logic, elementwise=True, dtypes=BOOL_DTYPES) for op in LOGIC_OPS),
    OpDef("Not", (), 1, 1, _logic, elementwise=True, dtypes=BOOL_DTYPES),
    OpDef("Where", (), 3, 3, _where, elementwise=True, dtypes=BOOL_DTYPES),
    OpDef("IsNaN", (), 1, 1, _predicate, elementwise=True, dtypes=FLOAT_DTYPES),
    OpDef("IsInf", ("detect_negative", "detect_positive"), 1, 1, _predicate, elementwise=True,
          dtypes=FLOAT_DTYPES),
    *(OpDef(op, (), 2, 2, _binary_same, elementwise=True, dtypes=INT_DTYPES) for op in SHIFT_OPS),
    OpDef("FloorMod", (), 2, 2, _binary_same, elementwise=True, dtypes=NUMERIC_DTYPES),
]
