"""Elementwise math in LLVM IR, for f32 scalars and f32 vectors alike (no libm).

`emit_unary(b, op, attrs, x)` and `emit_binary(b, op, lhs, rhs)` cover kernel_spec.UNARY_OPS and
BINARY_OPS: the tables below pick the emitter per op. The building blocks (exp, log, erf,
rounding, ...) are in math_core.py, activations in math_activations.py, trigonometric and
hyperbolic functions in math_trig.py.
"""
from __future__ import annotations

from typing import Callable

from llvmlite import ir

from iree_py.codegen.llvm.math_activations import ACTIVATION_EMITTERS, attr
from iree_py.codegen.llvm.math_core import (copysign, emit_exp, emit_log, emit_pow, emit_rational_sigmoid,
                                            emit_rational_tanh, emit_sigmoid, emit_tanh, fabs, fconst, floor, fmax,
                                            fmin, fsqrt, select_lt, trunc)
from iree_py.codegen.llvm.math_trig import TRIG_EMITTERS

__all__ = ["emit_unary", "emit_binary", "emit_exp", "emit_log", "emit_pow", "emit_sigmoid", "emit_tanh",
           "fmax", "fmin"]


def _relu(b, attrs, x):
    return select_lt(b, x, fconst(0.0, x.type), fconst(0.0, x.type), x)


def _leaky_relu(b, attrs, x):
    alpha = attr(attrs, "LeakyRelu", "alpha")
    return select_lt(b, x, fconst(0.0, x.type), b.fmul(x, fconst(alpha, x.type)), x)


def _clip(b, attrs, x):
    lo = attrs.get("min", float("-inf"))
    hi = attrs.get("max", float("inf"))
    return fmin(b, fmax(b, x, fconst(lo, x.type)), fconst(hi, x.type))


UNARY_EMITTERS: dict[str, Callable[[ir.IRBuilder, dict[str, float], ir.Value], ir.Value]] = {
    "Relu": _relu,
    "LeakyRelu": _leaky_relu,
    "Sigmoid": lambda b, attrs, x: emit_sigmoid(b, x),
    "Tanh": lambda b, attrs, x: emit_tanh(b, x),
    "RationalSigmoid": lambda b, attrs, x: emit_rational_sigmoid(b, x),
    "RationalTanh": lambda b, attrs, x: emit_rational_tanh(b, x),
    "Clip": _clip,
    "Neg": lambda b, attrs, x: b.fneg(x),
    "Exp": lambda b, attrs, x: emit_exp(b, x),
    "Sqrt": lambda b, attrs, x: fsqrt(b, x),
    "Abs": lambda b, attrs, x: fabs(b, x),
    **ACTIVATION_EMITTERS,
    **TRIG_EMITTERS,
}


def _is_integer(b: ir.IRBuilder, y: ir.Value) -> ir.Value:
    return b.fcmp_ordered("==", floor(b, y), y)


def pow_full(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """C's powf: |x|**y via exp/log, negative x only with an integer y (odd y keeps the sign),
    y == 0 or x == 1 give 1, x == -1 with y = +-inf gives 1."""
    ty = x.type
    one = fconst(1.0, ty)
    magnitude = emit_pow(b, fabs(b, x), y)
    integer = _is_integer(b, y)
    odd = b.and_(integer, b.fcmp_ordered("!=", floor(b, b.fmul(y, fconst(0.5, ty))), b.fmul(y, fconst(0.5, ty))))
    signed = b.select(odd, copysign(b, magnitude, x), magnitude)
    negative_base = b.fcmp_ordered("<", x, fconst(0.0, ty))
    finite_negative = b.and_(negative_base, b.fcmp_ordered("!=", x, fconst(float("-inf"), ty)))
    result = b.select(b.and_(finite_negative, b.not_(integer)), fconst(float("nan"), ty), signed)
    unit = b.or_(b.fcmp_ordered("==", y, fconst(0.0, ty)), b.fcmp_ordered("==", x, one))
    unit = b.or_(unit, b.and_(b.fcmp_ordered("==", x, fconst(-1.0, ty)),
                              b.fcmp_ordered("==", fabs(b, y), fconst(float("inf"), ty))))
    return b.select(unit, one, result)


def fmod(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """x - trunc(x / y) * y (C fmod, sign of x); a quotient rounded up by one is corrected."""
    r = b.fsub(x, b.fmul(trunc(b, b.fdiv(x, y)), y))
    ay = fabs(b, y)
    wrong_sign = b.fcmp_ordered("<", b.fmul(r, x), fconst(0.0, x.type))
    r = b.select(wrong_sign, b.fadd(r, copysign(b, ay, x)), r)
    r = copysign(b, r, x)
    finite_x = b.fcmp_ordered("<", fabs(b, x), fconst(float("inf"), x.type))
    infinite_y = b.fcmp_ordered("==", ay, fconst(float("inf"), x.type))
    return b.select(b.and_(finite_x, infinite_y), x, r)  # fmod(x, +-inf) = x


def _prelu(b: ir.IRBuilder, x: ir.Value, slope: ir.Value) -> ir.Value:
    return select_lt(b, x, fconst(0.0, x.type), b.fmul(x, slope), x)


BINARY_EMITTERS: dict[str, Callable[[ir.IRBuilder, ir.Value, ir.Value], ir.Value]] = {
    "Add": lambda b, x, y: b.fadd(x, y),
    "Sub": lambda b, x, y: b.fsub(x, y),
    "Mul": lambda b, x, y: b.fmul(x, y),
    "Div": lambda b, x, y: b.fdiv(x, y),
    "Pow": pow_full,
    "Min": fmin,
    "Max": fmax,
    "PRelu": _prelu,
    "Mod": fmod,
}


def emit_unary(b: ir.IRBuilder, op: str, attrs: dict[str, float], x: ir.Value) -> ir.Value:
    """op(x) for one of kernel_spec.UNARY_OPS; x is an f32 or an f32 vector."""
    emitter = UNARY_EMITTERS.get(op)
    if emitter is None:
        raise ValueError(f"unsupported unary elementwise op {op!r}; supported: {sorted(UNARY_EMITTERS)}")
    return emitter(b, dict(attrs), x)


def emit_binary(b: ir.IRBuilder, op: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    """op(lhs, rhs) for one of kernel_spec.BINARY_OPS; both operands have the same type."""
    emitter = BINARY_EMITTERS.get(op)
    if emitter is None:
        raise ValueError(f"unsupported binary elementwise op {op!r}; supported: {sorted(BINARY_EMITTERS)}")
    if lhs.type != rhs.type:
        raise ValueError(f"binary op {op}: operand types differ ({lhs.type} vs {rhs.type})")
    return emitter(b, lhs, rhs)
