"""Activation and rounding ops in LLVM IR (f32 scalars and vectors), built from math_core.

Each emitter takes (builder, attrs, x); attrs are the floats listed in kernel_spec.UNARY_OPS.
"""
from __future__ import annotations

import math

from llvmlite import ir

from iree_py.codegen.llvm.math_core import (ceil, emit_erf, emit_exp, emit_log, emit_tanh, erfc_positive,
                                            expm1, fabs, fconst, floor, fmax, fmin, log1p, round_half_even,
                                            select_lt)

SQRT_HALF = 0.7071067811865476
GELU_TANH_SCALE = math.sqrt(2.0 / math.pi)
GELU_TANH_CUBIC = 0.044715


def attr(attrs: dict[str, float], op: str, name: str) -> float:
    if name not in attrs:
        raise ValueError(f"elementwise op {op} needs attribute {name!r}; got {sorted(attrs)}")
    return float(attrs[name])


def softplus(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): no overflow, exact x for large x."""
    return b.fadd(fmax(b, x, fconst(0.0, x.type)), log1p(b, emit_exp(b, b.fneg(fabs(b, x)))))


def _sign(b, attrs, x):
    ty = x.type
    r = b.select(b.fcmp_ordered(">", x, fconst(0.0, ty)), fconst(1.0, ty), x)
    return b.select(b.fcmp_ordered("<", x, fconst(0.0, ty)), fconst(-1.0, ty), r)


def _softsign(b, attrs, x):
    return b.fdiv(x, b.fadd(fconst(1.0, x.type), fabs(b, x)))


def _hard_sigmoid_of(b: ir.IRBuilder, x: ir.Value, alpha: float, beta: float) -> ir.Value:
    ty = x.type
    y = b.fadd(b.fmul(x, fconst(alpha, ty)), fconst(beta, ty))
    return fmin(b, fmax(b, y, fconst(0.0, ty)), fconst(1.0, ty))


def _hard_sigmoid(b, attrs, x):
    return _hard_sigmoid_of(b, x, attr(attrs, "HardSigmoid", "alpha"), attr(attrs, "HardSigmoid", "beta"))


def _hard_swish(b, attrs, x):
    return b.fmul(x, _hard_sigmoid_of(b, x, 1.0 / 6.0, 0.5))


def _elu_negative(b: ir.IRBuilder, x: ir.Value, alpha: float) -> ir.Value:
    """x for x >= 0 (and NaN), alpha * expm1(x) below."""
    return select_lt(b, x, fconst(0.0, x.type), b.fmul(expm1(b, x), fconst(alpha, x.type)), x)


def _elu(b, attrs, x):
    return _elu_negative(b, x, attr(attrs, "Elu", "alpha"))


def _selu(b, attrs, x):
    alpha, gamma = attr(attrs, "Selu", "alpha"), attr(attrs, "Selu", "gamma")
    return b.fmul(_elu_negative(b, x, alpha), fconst(gamma, x.type))


def _celu(b, attrs, x):
    alpha = attr(attrs, "Celu", "alpha")
    ty = x.type
    scaled = b.fmul(expm1(b, b.fdiv(x, fconst(alpha, ty))), fconst(alpha, ty))
    return select_lt(b, x, fconst(0.0, ty), scaled, x)


def _thresholded_relu(b, attrs, x):
    alpha = attr(attrs, "ThresholdedRelu", "alpha")
    ty = x.type
    return b.select(b.fcmp_ordered(">", x, fconst(alpha, ty)), x, fconst(0.0, ty))  # NaN -> 0, as onnxruntime


def _mish(b, attrs, x):
    return b.fmul(x, emit_tanh(b, softplus(b, x)))


def _gelu(b, attrs, x):
    """x * Phi(x); Phi(x) = erfc(-x/sqrt 2)/2 keeps the tiny left tail accurate."""
    ty = x.type
    a = fabs(b, b.fmul(x, fconst(SQRT_HALF, ty)))
    tail = b.fmul(erfc_positive(b, a), fconst(0.5, ty))            # Phi(-|x|) for large |x|
    near = b.fmul(b.fadd(emit_erf(b, b.fmul(x, fconst(SQRT_HALF, ty))), fconst(1.0, ty)), fconst(0.5, ty))
    phi = select_lt(b, x, fconst(-1.0, ty), tail, near)
    return b.fmul(x, phi)


def _gelu_tanh(b, attrs, x):
    ty = x.type
    inner = b.fmul(b.fadd(x, b.fmul(b.fmul(b.fmul(x, x), x), fconst(GELU_TANH_CUBIC, ty))), fconst(GELU_TANH_SCALE, ty))
    return b.fmul(b.fmul(x, fconst(0.5, ty)), b.fadd(emit_tanh(b, inner), fconst(1.0, ty)))


ACTIVATION_EMITTERS = {
    "Log": lambda b, attrs, x: emit_log(b, x),
    "Reciprocal": lambda b, attrs, x: b.fdiv(fconst(1.0, x.type), x),
    "Floor": lambda b, attrs, x: floor(b, x),
    "Ceil": lambda b, attrs, x: ceil(b, x),
    "Round": lambda b, attrs, x: round_half_even(b, x),
    "Sign": _sign,
    "Erf": lambda b, attrs, x: emit_erf(b, x),
    "Softplus": lambda b, attrs, x: softplus(b, x),
    "Softsign": _softsign,
    "HardSigmoid": _hard_sigmoid,
    "HardSwish": _hard_swish,
    "Elu": _elu,
    "Selu": _selu,
    "Celu": _celu,
    "ThresholdedRelu": _thresholded_relu,
    "Mish": _mish,
    "Gelu": _gelu,
    "GeluTanh": _gelu_tanh,
}

__all__ = ["ACTIVATION_EMITTERS", "attr", "softplus"]
