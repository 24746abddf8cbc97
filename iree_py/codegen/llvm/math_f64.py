"""Double-precision exp and log in LLVM IR (no libm), for f64 scalars and f64 vectors alike.

Both follow fdlibm (as musl's exp.c / log.c): range reduction by ln 2 split in a hi part exact in
few bits and a lo part, then fdlibm's minimax polynomials; the error is below 1 ulp. Integers are
moved in and out of doubles with the add-and-subtract-1.5*2**52 trick (no fptosi, as math_core.py),
and 2**k is built from its exponent bits. Used by elementwise_typed.py (Exp, Log on f64) and the
f64 reductions / softmax (reduce.py: reduce and reduce_rt; softmax.py).
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.llvm.typed_values import const, int_like

LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
INV_LN2 = 1.44269504088896338700e+00
EXP_HI = 7.09782712893383973096e+02    # exp(x) overflows above this
EXP_LO = -7.45133219101941108420e+02   # exp(x) rounds to 0 below this
EXP_POLY = (4.13813679705723846039e-08, -1.65339022054652515390e-06, 6.61375632143793436117e-05,
            -2.77777777770155933842e-03, 1.66666666666666019037e-01)
LOG_EVEN = (1.531383769920937332e-01, 2.222219843214978396e-01, 3.999999999940941908e-01)  # Lg6, Lg4, Lg2
LOG_ODD = (1.479819860511658591e-01, 1.818357216161805012e-01, 2.857142874366239149e-01,
           6.666666666666735130e-01)                                                     # Lg7, Lg5, Lg3, Lg1
ROUND_MAGIC = 6755399441055744.0       # 1.5 * 2**52
ROUND_MAGIC_BITS = 0x4338000000000000
TWO_POW_54 = 18014398509481984.0
DBL_MIN = 2.2250738585072014e-308      # smallest normal double


def _poly(b: ir.IRBuilder, x: ir.Value, coeffs: tuple[float, ...]) -> ir.Value:
    acc = const(coeffs[0], x.type)
    for c in coeffs[1:]:
        acc = b.fadd(b.fmul(acc, x), const(c, x.type))
    return acc


def _round_to_int(b: ir.IRBuilder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(round(x) as double, as i64) for |x| < 2**51."""
    magic = const(ROUND_MAGIC, x.type)
    shifted = b.fadd(x, magic)
    n = b.fsub(shifted, magic)
    ity = int_like(x.type, 64)
    return n, b.sub(b.bitcast(shifted, ity), const(ROUND_MAGIC_BITS, ity))


def _pow2(b: ir.IRBuilder, k: ir.Value, ty: ir.Type) -> ir.Value:
    """2**k as double for integer k (i64) in [-1022, 1023]."""
    ity = k.type
    return b.bitcast(b.shl(b.add(k, const(1023, ity)), const(52, ity)), ty)


def exp_f64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ty = x.type
    lo_c, hi_c = const(EXP_LO, ty), const(EXP_HI, ty)
    clamped = b.select(b.fcmp_ordered("<", x, lo_c), lo_c, x)
    clamped = b.select(b.fcmp_ordered(">", clamped, hi_c), hi_c, clamped)
    n, k = _round_to_int(b, b.fmul(clamped, const(INV_LN2, ty)))
    hi = b.fsub(clamped, b.fmul(n, const(LN2_HI, ty)))
    lo = b.fmul(n, const(LN2_LO, ty))
    r = b.fsub(hi, lo)
    t = b.fmul(r, r)
    c = b.fsub(r, b.fmul(t, _poly(b, t, EXP_POLY)))
    y = b.fsub(const(1.0, ty), b.fsub(b.fsub(lo, b.fdiv(b.fmul(r, c), b.fsub(const(2.0, ty), c))), hi))
    # 2**k as 2**h * 2**(k-h): both factors normal for k in [-1075, 1025]; the product rounds once.
    half = b.ashr(k, const(1, k.type))
    y = b.fmul(b.fmul(y, _pow2(b, half, ty)), _pow2(b, b.sub(k, half), ty))
    y = b.select(b.fcmp_ordered(">", x, hi_c), const(float("inf"), ty), y)
    return b.select(b.fcmp_ordered("<", x, lo_c), const(0.0, ty), y)


def log_f64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Natural log (subnormals included); 0 -> -inf, x < 0 -> NaN, +inf -> +inf, NaN -> NaN."""
    ty = x.type
    ity = int_like(ty, 64)
    subnormal = b.fcmp_ordered("<", x, const(DBL_MIN, ty))
    scaled = b.select(subnormal, b.fmul(x, const(TWO_POW_54, ty)), x)
    bits = b.bitcast(scaled, ity)
    hx = b.add(b.lshr(bits, const(32, ity)), const(0x3FF00000 - 0x3FE6A09E, ity))
    k = b.sub(b.lshr(hx, const(20, ity)), const(0x3FF, ity))
    k = b.select(subnormal, b.sub(k, const(54, ity)), k)
    hx = b.add(b.and_(hx, const(0x000FFFFF, ity)), const(0x3FE6A09E, ity))
    m = b.bitcast(b.or_(b.shl(hx, const(32, ity)), b.and_(bits, const(0xFFFFFFFF, ity))), ty)  # in [sqrt(.5), sqrt(2))
    f = b.fsub(m, const(1.0, ty))
    hfsq = b.fmul(const(0.5, ty), b.fmul(f, f))
    s = b.fdiv(f, b.fadd(const(2.0, ty), f))
    z = b.fmul(s, s)
    w = b.fmul(z, z)
    r = b.fadd(b.fmul(z, _poly(b, w, LOG_ODD)), b.fmul(w, _poly(b, w, LOG_EVEN)))
    dk = b.sitofp(b.trunc(k, int_like(ty, 32)), ty)  # from i32: an i64 conversion is a builtin on 32-bit targets
    result = b.fadd(b.fmul(s, b.fadd(hfsq, r)), b.fmul(dk, const(LN2_LO, ty)))
    result = b.fadd(b.fadd(b.fsub(result, hfsq), f), b.fmul(dk, const(LN2_HI, ty)))
    result = b.select(b.fcmp_ordered("==", x, const(float("inf"), ty)), x, result)
    result = b.select(b.fcmp_ordered("==", x, const(0.0, ty)), const(float("-inf"), ty), result)
    return b.select(b.fcmp_unordered("<", x, const(0.0, ty)), const(float("nan"), ty), result)


F64_MATH = {
    "Exp": exp_f64,
    "Log": log_f64,
    "Reciprocal": lambda b, x: b.fdiv(const(1.0, x.type), x),
}
