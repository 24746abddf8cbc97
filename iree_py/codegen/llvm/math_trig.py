"""Trigonometric and hyperbolic ops in LLVM IR (f32 scalars and vectors), built from math_core.

sin/cos/tan reduce x by multiples of pi/2 (pi/2 split in three parts, Cody-Waite) and use the
Cephes single-precision polynomials on [-pi/4, pi/4]: accurate for |x| up to about 1e4 (beyond it
the reduction loses bits). atan/asin/acos follow Cephes' argument reductions. The hyperbolic
functions are written with exp/log1p so that small |x| keeps full relative accuracy.
"""
from __future__ import annotations

import math

from llvmlite import ir

from iree_py.codegen.llvm.math_core import (LN2_HI, LN2_LO, copysign, emit_exp, emit_log, fabs, fconst, fsqrt,
                                            iconst, integral_to_int, log1p, poly,
                                            round_nearest)

TWO_OVER_PI = 2.0 / math.pi
PIO2_1, PIO2_2, PIO2_3 = 1.5703125, 4.837512969970703125e-4, 7.54978995489188216e-8  # pi/2 = sum
SIN_POLY = (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)
COS_POLY = (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2)
ATAN_POLY = (8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1)
ASIN_POLY = (4.2163199048e-2, 2.4181311049e-2, 4.5470025998e-2, 7.4953002686e-2, 1.6666752422e-1)
TAN_3PI_8 = 2.414213562373095
TAN_PI_8 = 0.4142135623730950
SINH_SMALL = 1.0            # below this |x|, sinh uses its Taylor series
SINH_TAYLOR = (1.0 / 362880.0, 1.0 / 5040.0, 1.0 / 120.0, 1.0 / 6.0, 1.0)  # in x*x, times x
HALF_EXP_SCALE = math.exp(-LN2_LO)  # exp(x)/2 = exp(x - LN2_HI) * exp(-LN2_LO); x - LN2_HI is exact
BIG = 4096.0                # above this |x|, x*x + 1 is x*x and asinh/acosh = log(2|x|)


def _reduce(b: ir.IRBuilder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(r, q): x = n*pi/2 + r with |r| <= pi/4, q = n mod 4 as i32."""
    ty = x.type
    n = round_nearest(b, b.fmul(x, fconst(TWO_OVER_PI, ty)))
    r = b.fsub(x, b.fmul(n, fconst(PIO2_1, ty)))
    r = b.fsub(r, b.fmul(n, fconst(PIO2_2, ty)))
    r = b.fsub(r, b.fmul(n, fconst(PIO2_3, ty)))
    q = b.and_(integral_to_int(b, n), iconst(3, ty))  # exact for |n| < 2**22: far past the accurate range
    return r, q


def _sin_cos_of_reduced(b: ir.IRBuilder, r: ir.Value) -> tuple[ir.Value, ir.Value]:
    ty = r.type
    z = b.fmul(r, r)
    s = b.fadd(b.fmul(b.fmul(poly(b, z, SIN_POLY), z), r), r)
    c = b.fadd(b.fsub(fconst(1.0, ty), b.fmul(z, fconst(0.5, ty))), b.fmul(b.fmul(z, z), poly(b, z, COS_POLY)))
    return s, c


def _q_const(k: int, q: ir.Value) -> ir.Value:
    if isinstance(q.type, ir.VectorType):
        return ir.Constant(q.type, [k] * q.type.count)
    return ir.Constant(q.type, k)


def _pick(b: ir.IRBuilder, q: ir.Value, values: tuple[ir.Value, ir.Value, ir.Value, ir.Value]) -> ir.Value:
    out = values[3]
    for k in (2, 1, 0):
        out = b.select(b.icmp_signed("==", q, _q_const(k, q)), values[k], out)
    return out


def emit_sin(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    r, q = _reduce(b, x)
    s, c = _sin_cos_of_reduced(b, r)
    return _pick(b, q, (s, c, b.fneg(s), b.fneg(c)))


def emit_cos(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    r, q = _reduce(b, x)
    s, c = _sin_cos_of_reduced(b, r)
    return _pick(b, q, (c, b.fneg(s), b.fneg(c), s))


def emit_tan(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    r, q = _reduce(b, x)
    s, c = _sin_cos_of_reduced(b, r)
    odd = b.icmp_signed("==", b.and_(q, _q_const(1, q)), _q_const(1, q))
    return b.select(odd, b.fdiv(b.fneg(c), s), b.fdiv(s, c))


def emit_atan(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ty = x.type
    a = fabs(b, x)
    big = b.fcmp_ordered(">", a, fconst(TAN_3PI_8, ty))
    mid = b.fcmp_ordered(">", a, fconst(TAN_PI_8, ty))
    one = fconst(1.0, ty)
    t = b.select(mid, b.fdiv(b.fsub(a, one), b.fadd(a, one)), a)
    t = b.select(big, b.fdiv(fconst(-1.0, ty), a), t)
    base = b.select(mid, fconst(math.pi / 4, ty), fconst(0.0, ty))
    base = b.select(big, fconst(math.pi / 2, ty), base)
    z = b.fmul(t, t)
    y = b.fadd(b.fadd(b.fmul(b.fmul(poly(b, z, ATAN_POLY), z), t), t), base)
    return copysign(b, y, x)


def _asin_abs(b: ir.IRBuilder, a: ir.Value) -> ir.Value:
    """asin(a) for 0 <= a <= 1 (NaN above 1)."""
    ty = a.type
    high = b.fcmp_ordered(">", a, fconst(0.5, ty))
    z_high = b.fmul(b.fsub(fconst(1.0, ty), a), fconst(0.5, ty))
    z = b.select(high, z_high, b.fmul(a, a))
    t = b.select(high, fsqrt(b, z_high), a)
    y = b.fadd(b.fmul(b.fmul(poly(b, z, ASIN_POLY), z), t), t)
    return b.select(high, b.fsub(fconst(math.pi / 2, ty), b.fadd(y, y)), y)


def emit_asin(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return copysign(b, _asin_abs(b, fabs(b, x)), x)


def emit_acos(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """acos(x) = 2 asin(sqrt((1 - x)/2)) near 1, pi - that near -1, pi/2 - asin(x) between."""
    ty = x.type
    half = fconst(0.5, ty)
    near_one = b.fmul(_asin_abs(b, fsqrt(b, b.fmul(b.fsub(fconst(1.0, ty), x), half))), fconst(2.0, ty))
    near_minus_one = b.fsub(fconst(math.pi, ty),
                            b.fmul(_asin_abs(b, fsqrt(b, b.fmul(b.fadd(fconst(1.0, ty), x), half))), fconst(2.0, ty)))
    middle = b.fsub(fconst(math.pi / 2, ty), emit_asin(b, x))
    y = b.select(b.fcmp_ordered(">", x, half), near_one, middle)
    return b.select(b.fcmp_ordered("<", x, fconst(-0.5, ty)), near_minus_one, y)


def _half_exp(b: ir.IRBuilder, a: ir.Value) -> ir.Value:
    """exp(a)/2 without overflowing early (a >= 0)."""
    return b.fmul(emit_exp(b, b.fsub(a, fconst(LN2_HI, a.type))), fconst(HALF_EXP_SCALE, a.type))


def emit_sinh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ty = x.type
    a = fabs(b, x)
    h = _half_exp(b, a)
    large = b.fsub(h, b.fdiv(fconst(0.25, ty), h))
    small = b.fmul(poly(b, b.fmul(a, a), SINH_TAYLOR), a)
    y = b.select(b.fcmp_ordered("<", a, fconst(SINH_SMALL, ty)), small, large)
    return copysign(b, y, x)


def emit_cosh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    h = _half_exp(b, fabs(b, x))
    return b.fadd(h, b.fdiv(fconst(0.25, x.type), h))


def _log_twice(b: ir.IRBuilder, a: ir.Value) -> ir.Value:
    """log(2a) = log(a) + ln 2."""
    return b.fadd(emit_log(b, a), fconst(math.log(2.0), a.type))


def emit_asinh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """asinh(a) = log1p(a + a*a / (1 + sqrt(1 + a*a)))."""
    ty = x.type
    a = fabs(b, x)
    one = fconst(1.0, ty)
    a2 = b.fmul(a, a)
    y = log1p(b, b.fadd(a, b.fdiv(a2, b.fadd(one, fsqrt(b, b.fadd(one, a2))))))
    y = b.select(b.fcmp_ordered(">", a, fconst(BIG, ty)), _log_twice(b, a), y)
    return copysign(b, y, x)


def emit_acosh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """acosh(x) = log1p(t + sqrt(2t + t*t)), t = x - 1 (exact near 1); NaN below 1."""
    ty = x.type
    t = b.fsub(x, fconst(1.0, ty))
    y = log1p(b, b.fadd(t, fsqrt(b, b.fadd(b.fadd(t, t), b.fmul(t, t)))))
    return b.select(b.fcmp_ordered(">", x, fconst(BIG, ty)), _log_twice(b, x), y)


def emit_atanh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """atanh(a) = log1p(2a / (1 - a)) / 2; +-1 -> +-inf, |x| > 1 -> NaN."""
    ty = x.type
    a = fabs(b, x)
    y = log1p(b, b.fdiv(b.fadd(a, a), b.fsub(fconst(1.0, ty), a)))
    return copysign(b, b.fmul(y, fconst(0.5, ty)), x)


TRIG_EMITTERS = {
    "Sin": lambda b, attrs, x: emit_sin(b, x),
    "Cos": lambda b, attrs, x: emit_cos(b, x),
    "Tan": lambda b, attrs, x: emit_tan(b, x),
    "Atan": lambda b, attrs, x: emit_atan(b, x),
    "Asin": lambda b, attrs, x: emit_asin(b, x),
    "Acos": lambda b, attrs, x: emit_acos(b, x),
    "Sinh": lambda b, attrs, x: emit_sinh(b, x),
    "Cosh": lambda b, attrs, x: emit_cosh(b, x),
    "Asinh": lambda b, attrs, x: emit_asinh(b, x),
    "Acosh": lambda b, attrs, x: emit_acosh(b, x),
    "Atanh": lambda b, attrs, x: emit_atanh(b, x),
}
