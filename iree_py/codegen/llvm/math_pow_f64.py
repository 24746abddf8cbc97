"""Double-precision x ** y in LLVM IR (no libm), for f64 scalars and vectors alike.

An integral exponent with |y| < 2**31 goes by square-and-multiply over the bits of |y| (then one
division for y < 0): exact whenever the result is representable, so 3 ** 2 is 9 and not the
8.999... that exp(2 * log 3) may give (an integer Pow truncates it). Any other exponent is
exp(y * log|x|) with fdlibm's exp/log (math_f64.py), the sign taken from x for odd integral y and
NaN for x < 0 with a non-integral y. That path's error is a few ulp (exp's argument y * log|x|
carries log's rounding), so a result within SNAP_RELATIVE (4 ulp) of a whole number below 2**51 is
taken as that number: whole powers such as 4 ** 0.5 or 1e6 ** 0.5 come out exact (a truncating
Cast to an integer would take 1.9999999999999996 to 1), and no result moves by more than the
path's own error. x ** 0 and 1 ** y are 1 (NaN included), as C's pow.
"""
from __future__ import annotations

from typing import Callable

from llvmlite import ir

from iree_py.codegen.llvm.math_f64 import ROUND_MAGIC, exp_f64, log_f64
from iree_py.codegen.llvm.typed_values import const, int_like

SQUARING_BITS = 31
TWO_POW_31 = 2147483648.0
TWO_POW_53 = 9007199254740992.0
TWO_POW_51 = 2251799813685248.0
SNAP_RELATIVE = 2.0 ** -50


def _fabs(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ity = int_like(x.type, 64)
    return b.bitcast(b.and_(b.bitcast(x, ity), const((1 << 63) - 1, ity)), x.type)


def square_and_multiply(b: ir.IRBuilder, base: ir.Value, exponent: ir.Value, bits: int, one: ir.Value,
                        multiply: Callable[[ir.Value, ir.Value], ir.Value]) -> ir.Value:
    """base ** exponent over the low `bits` bits of the integer `exponent`, products by `multiply`
    (b.fmul for floats, b.mul for integers, which wrap); scalars and vectors alike."""
    ity = exponent.type
    one_i, zero_i = const(1, ity), const(0, ity)
    result = one
    for i in range(bits):
        bit = b.icmp_unsigned("!=", b.and_(b.lshr(exponent, const(i, ity)), one_i), zero_i)
        result = b.select(bit, multiply(result, base), result)
        if i + 1 < bits:
            base = multiply(base, base)
    return result


def _by_squaring(b: ir.IRBuilder, x: ir.Value, magnitude: ir.Value) -> ir.Value:
    """x ** n for the i64 n = `magnitude` in [0, 2**31)."""
    return square_and_multiply(b, x, magnitude, SQUARING_BITS, const(1.0, x.type), b.fmul)


def _snap_whole(b: ir.IRBuilder, r: ir.Value) -> ir.Value:
    """r, or the whole number nearest r when it is within SNAP_RELATIVE of r and below 2**51."""
    ty = r.type
    magic = const(ROUND_MAGIC, ty)
    ar = _fabs(b, r)
    nearest = b.fsub(b.fadd(r, magic), magic)          # round to nearest for |r| < 2**51
    close = b.fcmp_ordered("<=", _fabs(b, b.fsub(r, nearest)), b.fmul(ar, const(SNAP_RELATIVE, ty)))
    return b.select(b.and_(close, b.fcmp_ordered("<", ar, const(TWO_POW_51, ty))), nearest, r)


def pow_f64(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    ty = x.type
    ity = int_like(ty, 64)
    zero, one = const(0.0, ty), const(1.0, ty)
    ay = _fabs(b, y)
    below_2_53 = b.fcmp_ordered("<", ay, const(TWO_POW_53, ty))
    n = b.fptosi(b.select(below_2_53, y, zero), ity)          # exact for integral |y| < 2**53
    integral = b.or_(b.fcmp_ordered(">=", ay, const(TWO_POW_53, ty)),   # such doubles are even integers
                     b.fcmp_ordered("==", b.sitofp(n, ty), y))
    odd = b.and_(b.and_(integral, below_2_53), b.icmp_unsigned("!=", b.and_(n, const(1, ity)), const(0, ity)))

    general = _snap_whole(b, exp_f64(b, b.fmul(y, log_f64(b, _fabs(b, x)))))
    general = b.select(odd, b.fneg(general), general)
    negative_x = b.fcmp_ordered("<", x, zero)
    general = b.select(b.and_(negative_x, b.xor(integral, const(1, integral.type))), const(float("nan"), ty), general)

    small = b.and_(integral, b.fcmp_ordered("<", ay, const(TWO_POW_31, ty)))
    magnitude = b.select(b.icmp_signed("<", n, const(0, ity)), b.sub(const(0, ity), n), n)
    squared = _by_squaring(b, x, b.select(small, magnitude, const(0, ity)))
    squared = b.select(b.fcmp_ordered("<", y, zero), b.fdiv(one, squared), squared)

    result = b.select(small, squared, general)
    trivial = b.or_(b.fcmp_ordered("==", y, zero), b.fcmp_ordered("==", x, one))
    return b.select(trivial, one, result)
