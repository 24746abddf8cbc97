"""Shape rules of the ops added for miscellaneous ONNX ops (ops.py's table registers them): CumSum and CumProd (ONNX CumSum / CumProd, onnx_cumulative.py);
BitwiseAnd, BitwiseOr, BitwiseXor (elementwise on integers of one dtype, numpy broadcasting);
BitCast (the same bytes as attrs to, a dtype of the same size)."""
from __future__ import annotations

from typing import Any

from iree_py.ir.opdef import ANY_DTYPE, OpDef
from iree_py.ir.ops_logic import INT_DTYPES, broadcast_shape
from iree_py.ir.types import DType, TensorType

CUMULATIVE_DTYPES = frozenset({DType.f32, DType.f64, DType.i32, DType.i64})


def cumulative_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    """CumSum / CumProd: the input's type; axis in range, exclusive and reverse 0/1."""
    shape = inputs[0].shape
    if not 0 <= attrs["axis"] < len(shape):
        raise ValueError(f"axis {attrs['axis']} out of range for {inputs[0]}")
    if attrs["exclusive"] not in (0, 1) or attrs["reverse"] not in (0, 1):
        raise ValueError(f"exclusive {attrs['exclusive']} and reverse {attrs['reverse']} must be 0/1")
    return [inputs[0]]


BITWISE_OPS = ("BitwiseAnd", "BitwiseOr", "BitwiseXor")


def bitwise_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    a, b = inputs
    if a.dtype != b.dtype:
        raise ValueError(f"operand dtypes differ: {a} and {b}")
    return [TensorType(a.dtype, broadcast_shape(a, b))]


def bitcast_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    names = [d.value for d in DType]
    if attrs["to"] not in names:
        raise ValueError(f"BitCast to {attrs['to']!r}: expected one of {names}")
    to = DType(attrs["to"])
    if to.itemsize != inputs[0].dtype.itemsize:
        raise ValueError(f"BitCast {inputs[0]} to {to.value}: element sizes differ")
    return [TensorType(to, inputs[0].shape)]


MISC_OP_DEFS = [
    OpDef("CumSum", ("axis", "exclusive", "reverse"), 1, 1, cumulative_rule, dtypes=CUMULATIVE_DTYPES),
    OpDef("CumProd", ("axis", "exclusive", "reverse"), 1, 1, cumulative_rule, dtypes=CUMULATIVE_DTYPES),
    OpDef("BitCast", ("to",), 1, 1, bitcast_rule, dtypes=ANY_DTYPE),
    *(OpDef(op, (), 2, 2, bitwise_rule, elementwise=True, dtypes=INT_DTYPES) for op in BITWISE_OPS),
]
