"""ONNX Cast/CastLike, comparisons, logic, Where, BitShift, IsNaN/IsInf, Mod and Pow (any dtype) ->
normalized ops (registered in onnx_ops.py's CONVERTERS under the `dtypes` marker).

Constant inputs fold at import through `ctx.emit`, with the same semantics as the kernels
(iree_py/ir/reference_logic.py).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

import numpy as np
import onnx

from iree_py.ir.graph import Value
from iree_py.ir.opdef import FLOAT_DTYPES, INT_DTYPES
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

Converter = Callable[["OnnxContext"], list[Value]]


def onnx_dtype(ctx: "OnnxContext", elem_type: int, what: str) -> DType:
    """The DType of an ONNX TensorProto element type; CompileError naming it when unsupported."""
    name = onnx.TensorProto.DataType.Name(elem_type) if elem_type in onnx.TensorProto.DataType.values() \
        else str(elem_type)
    try:
        return DType.from_numpy(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, ValueError, TypeError):
        supported = ", ".join(d.value for d in DType)
        raise ctx.error(f"{what} {name} is not supported (iree-py element types: {supported})") from None


def _cast_to(ctx: "OnnxContext", x: Value, to: DType, out: int | None = 0) -> Value:
    if x.type.dtype == to:
        return x
    return ctx.emit("Cast", [x], {"to": to.value}, out=out)


def cast(ctx: "OnnxContext") -> list[Value]:
    to = onnx_dtype(ctx, int(ctx.attr("to")), "Cast to")
    return [_cast_to(ctx, ctx.input(0), to)]


def cast_like(ctx: "OnnxContext") -> list[Value]:
    return [_cast_to(ctx, ctx.input(0), ctx.input(1).type.dtype)]


def _same_dtypes(ctx: "OnnxContext", values: list[Value]) -> None:
    if len({v.type.dtype for v in values}) > 1:
        raise ctx.error(f"operand dtypes differ: {', '.join(str(v.type) for v in values)}")


def _binary(op: str) -> Converter:
    def convert(ctx: "OnnxContext") -> list[Value]:
        a, b = ctx.input(0), ctx.input(1)
        _same_dtypes(ctx, [a, b])
        return [ctx.emit(op, [a, b], out=0)]
    return convert


def _unary(op: str) -> Converter:
    def convert(ctx: "OnnxContext") -> list[Value]:
        return [ctx.emit(op, [ctx.input(0)], out=0)]
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


def mod(ctx: "OnnxContext") -> list[Value]:
    """fmod=1: C's remainder (sign of the dividend); fmod=0: Python's (sign of the divisor)."""
    fmod = int(ctx.attr("fmod", 0))
    if fmod not in (0, 1):
        raise ctx.bad_attr("fmod", fmod, "expected 0 or 1")
    a, b = ctx.input(0), ctx.input(1)
    _same_dtypes(ctx, [a, b])
    return [ctx.emit("Mod" if fmod else "FloorMod", [a, b], out=0)]


def clip(ctx: "OnnxContext") -> list[Value]:
    """Constant bounds (attributes before opset 11): one Clip; computed bounds: Max, then Min
    (min(max(x, lo), hi): min > max gives max, NaN stays NaN, as ONNX)."""
    x = ctx.input(0)
    if ctx.opset < 11:
        lo, hi = float(ctx.attr("min", -math.inf)), float(ctx.attr("max", math.inf))
        return [ctx.emit("Clip", [x], {"min": lo, "max": hi}, out=0)]
    bounds = [ctx.input(i) if ctx.has_input(i) else None for i in (1, 2)]
    for name, b in zip(("min", "max"), bounds):
        if b is not None and b.type.num_elements != 1:
            raise ctx.error(f"{name} '{b.name}' is {b.type}; Clip's bounds are scalars")
    if all(b is None or b.is_const for b in bounds):
        lo, hi = (float(b.const) if b is not None else default for b, default in zip(bounds, (-math.inf, math.inf)))
        return [ctx.emit("Clip", [x], {"min": lo, "max": hi}, out=0)]
    steps = [(op, b) for op, b in zip(("Max", "Min"), bounds) if b is not None]
    _same_dtypes(ctx, [x, *(b for _, b in steps)])
    for i, (op, b) in enumerate(steps):
        x = ctx.emit(op, [x, b], out=0 if i == len(steps) - 1 else None)
    return [x]


def pow_(ctx: "OnnxContext") -> list[Value]:
    """Pow(X, Y): a float base takes any exponent (converted to the base's dtype); an integer base
    takes an integer exponent (exact, wrapping). An integer base with a float exponent computes in
    double and converts back like Cast (as numpy's int ** float -> float64 -> astype and
    onnxruntime's static_cast of std::pow): f64 Pow is exact for integral exponents, so 3 ** 2.0
    is 9, not the 8 a truncated exp(2 log 3) would give."""
    x, y = ctx.input(0), ctx.input(1)
    if x.type.dtype in FLOAT_DTYPES:
        return [ctx.emit("Pow", [x, _cast_to(ctx, y, x.type.dtype, out=None)], out=0)]
    if x.type.dtype not in INT_DTYPES:
        raise ctx.error(f"Pow of {x.type} is not supported")
    if y.type.dtype in FLOAT_DTYPES:
        wide = ctx.emit("Pow", [_cast_to(ctx, x, DType.f64, out=None), _cast_to(ctx, y, DType.f64, out=None)])
        return [_cast_to(ctx, wide, x.type.dtype)]
    if y.type.dtype not in INT_DTYPES:
        raise ctx.error(f"Pow exponent {y.type} is not supported")
    return [ctx.emit("Pow", [x, _cast_to(ctx, y, x.type.dtype, out=None)], out=0)]


LOGIC_CONVERTERS: dict[str, Converter] = {
    "Cast": cast,
    "CastLike": cast_like,
    **{op: _binary(op) for op in ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor")},
    "Not": _unary("Not"),
    "Where": where,
    "BitShift": bit_shift,
    "IsNaN": _unary("IsNaN"),
    "IsInf": is_inf,
    "Mod": mod,
    "Pow": pow_,
    "Clip": clip,
}
