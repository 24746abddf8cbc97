"""ONNX comparisons, And/Or/Xor/Not, Where, BitShift, IsNaN/IsInf and the Bitwise ops -> normalized ops
(any dtype; both operands of one dtype). Equal on two strings becomes StringEqual (strings.py).
Constant inputs fold at import through `ctx.emit`, with the same semantics as the kernels
(iree_py/ir/ops/logic.py); Equal and Where of known values fold in SYMBOLIC_CONVERTERS.
BitwiseNot is -x - 1 (two's complement; exact for every integer type, wrapping).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from iree_py.frontends.onnx.compose import Converter
from iree_py.frontends.onnx.elementwise import _same_dtypes, _unary
from iree_py.frontends.onnx.strings import with_string_equal
from iree_py.frontends.onnx.symbolic import (SymbolicConverter, Undecided, _known_inputs, fold_elementwise,
                                             known_result, sign_of)
from iree_py.ir.graph import Value
from iree_py.ir.opdef import INT_DTYPES
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


def _binary(op: str) -> Converter:
    def convert(ctx: "OnnxContext") -> list[Value]:
        a, b = ctx.input(0), ctx.input(1)
        _same_dtypes(ctx, [a, b])
        return [ctx.emit(op, [a, b], out=0)]
    return convert


def where(ctx: "OnnxContext") -> list[Value]:
    cond, x, y = ctx.input(0), ctx.input(1), ctx.input(2)
    if cond.type.dtype != DType.bool:
        raise ctx.error(f"Where condition must be bool, got {cond.type}")
    _same_dtypes(ctx, [x, y])
    return [ctx.emit("Where", [cond, x, y], out=0)]


def bit_shift(ctx: "OnnxContext") -> list[Value]:
    direction = ctx.attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise ctx.bad_attr("direction", direction, "expected 'LEFT' or 'RIGHT'")
    x, amount = ctx.input(0), ctx.input(1)
    _same_dtypes(ctx, [x, amount])
    if x.type.dtype not in INT_DTYPES:
        raise ctx.error(f"BitShift wants integer operands, got {x.type}")
    return [ctx.emit("ShiftLeft" if direction == "LEFT" else "ShiftRight", [x, amount], out=0)]


def is_inf(ctx: "OnnxContext") -> list[Value]:
    attrs = {"detect_negative": int(ctx.attr("detect_negative", 1)),
             "detect_positive": int(ctx.attr("detect_positive", 1))}
    return [ctx.emit("IsInf", [ctx.input(0)], attrs, out=0)]


def bitwise_not(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    if x.type.dtype.numpy.kind not in "iu":
        raise ctx.error(f"input {x.type} must be an integer tensor")
    one = ctx.const(np.array(1, x.type.dtype.numpy), "one")
    return [ctx.emit("Sub", [ctx.emit("Neg", [x]), one], out=0)]


def _bitwise(op: str) -> Callable[["OnnxContext"], list[Value]]:
    def convert(ctx: "OnnxContext") -> list[Value]:
        a, b = ctx.input(0), ctx.input(1)
        if a.type.dtype.numpy.kind not in "iu" or a.type.dtype != b.type.dtype:
            raise ctx.error(f"operands {a.type} and {b.type} must be integers of one type")
        return [ctx.emit(op, [a, b], out=0)]
    return convert


def _equal(ctx: "OnnxContext") -> Callable[[Any, Any], bool]:
    def equal(a: Any, b: Any) -> bool:
        s = sign_of(ctx, a, b)
        if s is None:
            raise Undecided(f"{a} == {b}")
        return s == 0
    return equal


def _symbolic_where(ctx: "OnnxContext") -> list[Value] | None:
    values, arrays = _known_inputs(ctx)
    if arrays is None:
        return None
    cond, a, b = np.broadcast_arrays(*arrays)
    out = np.empty(cond.shape, dtype=object)
    for index in np.ndindex(cond.shape):
        out[index] = a[index] if bool(cond[index]) else b[index]
    return [known_result(ctx, out, values[1].type.dtype)]


CONVERTERS: dict[str, Converter] = {
    **{op: _binary(op) for op in ("Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor")},
    "Equal": with_string_equal(_binary("Equal")),  # string operands: StringEqual (strings.py)
    "Not": _unary("Not"),
    "Where": where,
    "BitShift": bit_shift,
    "IsNaN": _unary("IsNaN"),
    "IsInf": is_inf,
    "BitwiseNot": bitwise_not,
    "BitwiseAnd": _bitwise("BitwiseAnd"),
    "BitwiseOr": _bitwise("BitwiseOr"),
    "BitwiseXor": _bitwise("BitwiseXor"),
}

SYMBOLIC_CONVERTERS: dict[str, SymbolicConverter] = {
    "Equal": fold_elementwise(_equal, result="bool"),
    "Where": _symbolic_where,
}
