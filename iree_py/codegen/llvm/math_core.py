"""Building blocks of the elementwise math in LLVM IR, for f32 scalars and f32 vectors alike (no libm).

exp and log use range reduction + the Cephes single-precision polynomials; sigmoid and tanh are
written so that large |x| gives exact 0/±1 and never NaN. The rational sigmoid and tanh are
onnxruntime's (iree_py/ir/rational_math.py: coefficients and numpy twins), every Horner step one
llvm.fma, so they round as onnxruntime does. Rounding (floor, ceil, round) uses the
add-and-subtract-2**23 trick, so no fast-math flags may ever be used. The op tables that pick one of
these per ONNX op are in math.py (with math_activations.py and math_trig.py).
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.llvm.common import I32, splat
from iree_py.ir import rational_math

LOG2E = 1.44269504088896341
LN2_HI = 0.693359375        # Cephes' split of ln 2: hi + lo, hi exact in few bits
LN2_LO = -2.12194440e-4
EXP_HI = 88.72283905206835  # exp(x) overflows float above this
EXP_LO = -103.97207708      # exp(x) is below the smallest denormal under this
ROUND_MAGIC = 12582912.0    # 1.5 * 2**23: adding and subtracting it rounds to nearest integer
EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
            1.6666665459e-1, 5.0000001201e-1)
LOG_POLY = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
            1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
            3.3333331174e-1)
TANH_POLY = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
             -3.33332819422e-1)
TANH_SMALL = 0.625          # below this |x|, tanh uses its odd polynomial
SQRT_HALF = 0.707106781186547524
FLT_MIN = 1.1754943508222875e-38  # smallest normal float
TWO_POW_23 = 8388608.0      # every float at least this large is an integer


def int_type_like(ty: ir.Type) -> ir.Type:
    return ir.VectorType(I32, ty.count) if isinstance(ty, ir.VectorType) else I32


def fconst(value: float, ty: ir.Type) -> ir.Value:
    return splat(float(value), ty)


def iconst(value: int, ty: ir.Type) -> ir.Value:
    ity = int_type_like(ty)
    if isinstance(ity, ir.VectorType):
        return ir.Constant(ity, [value] * ity.count)
    return ir.Constant(ity, value)


def select_lt(b: ir.IRBuilder, x: ir.Value, y: ir.Value, then: ir.Value, other: ir.Value) -> ir.Value:
    return b.select(b.fcmp_ordered("<", x, y), then, other)


def fmax(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """max(x, y); NaN in x propagates (x < y is false for NaN)."""
    return select_lt(b, x, y, y, x)


def fmin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """min(x, y); NaN in x propagates."""
    return select_lt(b, y, x, y, x)


def poly(b: ir.IRBuilder, x: ir.Value, coeffs: tuple[float, ...]) -> ir.Value:
    """Horner: ((c0 * x + c1) * x + c2) ..."""
    ty = x.type
    acc = fconst(coeffs[0], ty)
    for c in coeffs[1:]:
        acc = b.fadd(b.fmul(acc, x), fconst(c, ty))
    return acc


def fma(b: ir.IRBuilder, x: ir.Value, y: ir.Value, acc: ir.Value) -> ir.Value:
    """x * y + acc with one rounding (llvm.fma: one instruction on every target, which all have
    single-precision FMA)."""
    ty = x.type
    suffix = f"v{ty.count}f32" if isinstance(ty, ir.VectorType) else "f32"
    name = f"llvm.fma.{suffix}"
    module = b.block.function.module
    fn = module.globals.get(name) or ir.Function(module, ir.FunctionType(ty, [ty] * 3), name=name)
    return b.call(fn, [x, y, acc])


def poly_fma(b: ir.IRBuilder, x: ir.Value, coeffs: tuple[float, ...]) -> ir.Value:
    """Horner with one fma per step: fma(x, ... fma(x, c0, c1) ..., cn)."""
    acc = fconst(coeffs[0], x.type)
    for c in coeffs[1:]:
        acc = fma(b, x, acc, fconst(c, x.type))
    return acc


def round_nearest(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Round to nearest integer (as float) for |x| < 2**22, without llvm.rint (may be a libcall)."""
    ty = x.type
    return b.fsub(b.fadd(x, fconst(ROUND_MAGIC, ty)), fconst(ROUND_MAGIC, ty))


def integral_to_int(b: ir.IRBuilder, n: ir.Value) -> ir.Value:
    """An integral float n with |n| < 2**22 as i32, exactly, by its bits after adding ROUND_MAGIC
    (the low mantissa bits then hold n). Used instead of fptosi: a vector fptosi becomes
    vfcvt.rtz.x.f.v on RISC-V, which qemu 7.2 (our riscv64 test emulator) aborts on."""
    ty = n.type
    magic_bits = iconst(0x4B400000, ty)  # the bits of ROUND_MAGIC
    return b.sub(b.bitcast(b.fadd(n, fconst(ROUND_MAGIC, ty)), int_type_like(ty)), magic_bits)


def pow2i(b: ir.IRBuilder, n: ir.Value, ty: ir.Type) -> ir.Value:
    """2**n as float for integer n in [-126, 127]."""
    bits = b.shl(b.add(n, iconst(127, ty)), iconst(23, ty))
    return b.bitcast(bits, ty)


def emit_exp(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ty = x.type
    clamped = fmin(b, fmax(b, x, fconst(EXP_LO, ty)), fconst(EXP_HI, ty))
    n = round_nearest(b, b.fmul(clamped, fconst(LOG2E, ty)))
    r = b.fsub(clamped, b.fmul(n, fconst(LN2_HI, ty)))
    r = b.fsub(r, b.fmul(n, fconst(LN2_LO, ty)))
    p = poly(b, r, EXP_POLY)
    y = b.fadd(b.fadd(b.fmul(p, b.fmul(r, r)), r), fconst(1.0, ty))
    # 2**n as 2**h * 2**(n-h) so that both factors stay normal for n in [-150, 128].
    ni = integral_to_int(b, n)
    half = b.ashr(ni, iconst(1, ty))
    y = b.fmul(b.fmul(y, pow2i(b, half, ty)), pow2i(b, b.sub(ni, half), ty))
    y = b.select(b.fcmp_ordered(">", x, fconst(EXP_HI, ty)), fconst(float("inf"), ty), y)
    return b.select(b.fcmp_ordered("<", x, fconst(EXP_LO, ty)), fconst(0.0, ty), y)


def emit_log(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Natural log (denormals included); 0 -> -inf, x < 0 -> NaN, +inf -> +inf."""
    ty = x.type
    ity = int_type_like(ty)
    denormal = b.fcmp_ordered("<", x, fconst(FLT_MIN, ty))
    x_in = x
    x = b.select(denormal, b.fmul(x, fconst(TWO_POW_23, ty)), x)  # scaled up to a normal number
    bits = b.bitcast(x, ity)
    exponent = b.sub(b.and_(b.lshr(bits, iconst(23, ty)), iconst(0xFF, ty)), iconst(126, ty))
    mant = b.bitcast(b.or_(b.and_(bits, iconst(0x007FFFFF, ty)), iconst(0x3F000000, ty)), ty)  # [0.5, 1)
    e = b.sitofp(exponent, ty)
    e = b.select(denormal, b.fsub(e, fconst(23.0, ty)), e)
    small = b.fcmp_ordered("<", mant, fconst(SQRT_HALF, ty))
    e = b.select(small, b.fsub(e, fconst(1.0, ty)), e)
    m = b.select(small, b.fsub(b.fadd(mant, mant), fconst(1.0, ty)), b.fsub(mant, fconst(1.0, ty)))
    z = b.fmul(m, m)
    y = b.fmul(poly(b, m, LOG_POLY), b.fmul(m, z))
    y = b.fadd(y, b.fmul(e, fconst(LN2_LO, ty)))
    y = b.fsub(y, b.fmul(z, fconst(0.5, ty)))
    result = b.fadd(b.fadd(m, y), b.fmul(e, fconst(LN2_HI, ty)))
    result = b.select(b.fcmp_ordered("==", x_in, fconst(float("inf"), ty)), x_in, result)
    result = b.select(b.fcmp_ordered("==", x_in, fconst(0.0, ty)), fconst(float("-inf"), ty), result)
    return b.select(b.fcmp_unordered("<", x_in, fconst(0.0, ty)), fconst(float("nan"), ty), result)


def emit_pow(b: ir.IRBuilder, x: ir.Value, exponent: ir.Value) -> ir.Value:
    """x ** exponent for x > 0, as exp(exponent * log(x))."""
    return emit_exp(b, b.fmul(exponent, emit_log(b, x)))


def fabs(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ity = int_type_like(x.type)
    return b.bitcast(b.and_(b.bitcast(x, ity), iconst(0x7FFFFFFF, x.type)), x.type)


def copysign(b: ir.IRBuilder, magnitude: ir.Value, sign_of: ir.Value) -> ir.Value:
    ty = magnitude.type
    ity = int_type_like(ty)
    sign = b.and_(b.bitcast(sign_of, ity), iconst(-0x80000000, ty))
    return b.bitcast(b.or_(b.bitcast(magnitude, ity), sign), ty)


def emit_sigmoid(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """1 / (1 + exp(-x)) computed from e = exp(-|x|) <= 1, so nothing overflows."""
    ty = x.type
    e = emit_exp(b, b.fneg(fabs(b, x)))
    s = b.fdiv(fconst(1.0, ty), b.fadd(fconst(1.0, ty), e))
    return b.select(b.fcmp_ordered("<", x, fconst(0.0, ty)), b.fmul(e, s), s)


def emit_rational_sigmoid(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """onnxruntime's Sigmoid: x clamped to [-18, 18], x * p(x2) / q(x2) + 0.5, at least 0 (NaN stays
    NaN). Bit for bit MLAS's LogisticKernelFma3; absolute error at most 1.7e-7 (so about 1.9e-7, not
    0, for x <= -18)."""
    ty = x.type
    v = fmin(b, fmax(b, x, fconst(-rational_math.SIGMOID_RANGE, ty)),
             fconst(rational_math.SIGMOID_RANGE, ty))
    v2 = b.fmul(v, v)
    p = b.fmul(v, poly_fma(b, v2, rational_math.SIGMOID_P))
    r = b.fadd(b.fdiv(p, poly_fma(b, v2, rational_math.SIGMOID_Q)), fconst(0.5, ty))
    return fmax(b, r, fconst(0.0, ty))


def emit_rational_tanh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """onnxruntime's Tanh: x clamped to [-9, 9], x * p(x2) / q(x2) (NaN stays NaN). Bit for bit
    MLAS's TanhKernelFma3; within 6 ulp of tanh."""
    ty = x.type
    v = fmin(b, fmax(b, x, fconst(-rational_math.TANH_RANGE, ty)),
             fconst(rational_math.TANH_RANGE, ty))
    v2 = b.fmul(v, v)
    return b.fdiv(b.fmul(v, poly_fma(b, v2, rational_math.TANH_P)), poly_fma(b, v2, rational_math.TANH_Q))


def emit_tanh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ty = x.type
    ax = fabs(b, x)
    z = b.fmul(x, x)
    small = b.fadd(b.fmul(b.fmul(poly(b, z, TANH_POLY), z), x), x)
    e = emit_exp(b, b.fadd(ax, ax))  # inf for large |x|: 2/inf = 0, so the result is exactly 1
    large = b.fsub(fconst(1.0, ty), b.fdiv(fconst(2.0, ty), b.fadd(e, fconst(1.0, ty))))
    large = copysign(b, large, x)
    return b.select(b.fcmp_ordered("<", ax, fconst(TANH_SMALL, ty)), small, large)


def fsqrt(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ty = x.type
    suffix = f"v{ty.count}f32" if isinstance(ty, ir.VectorType) else "f32"
    name = f"llvm.sqrt.{suffix}"
    module = b.block.function.module
    fn = module.globals.get(name) or ir.Function(module, ir.FunctionType(ty, [ty]), name=name)
    return b.call(fn, [x])


ERF_SMALL = 0.5             # below this |x|, erf uses its Taylor series
ERF_TAYLOR = (-1.0 / 75600.0 * 1.1283791670955126, 1.0 / 9360.0 * 1.1283791670955126,
              -1.0 / 1320.0 * 1.1283791670955126, 1.0 / 216.0 * 1.1283791670955126,
              -1.0 / 42.0 * 1.1283791670955126, 1.0 / 10.0 * 1.1283791670955126,
              -1.0 / 3.0 * 1.1283791670955126, 1.1283791670955126)  # 2/sqrt(pi) * sum (-1)^n x^2n / (n! (2n+1))
ERFC_P = 0.3275911          # Abramowitz & Stegun 7.1.26: erfc(x) = t*P(t)*exp(-x*x), t = 1/(1+p*x)
ERFC_POLY = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)


def _is_large(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """|x| >= 2**23 (already an integer) or x is inf; false for NaN."""
    return b.fcmp_ordered(">=", fabs(b, x), fconst(TWO_POW_23, x.type))


def round_half_even(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Round to nearest, ties to even, for every float; keeps the sign of zero, NaN stays NaN."""
    r = copysign(b, round_nearest(b, fabs(b, x)), x)
    return b.select(_is_large(b, x), x, r)


def floor(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ty = x.type
    r = round_half_even(b, x)
    r = b.select(b.fcmp_ordered(">", r, x), b.fsub(r, fconst(1.0, ty)), r)
    return copysign(b, r, x)  # floor(-0.0) = -0.0; floor(0.3) = +0.0


def ceil(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ty = x.type
    r = round_half_even(b, x)
    r = b.select(b.fcmp_ordered("<", r, x), b.fadd(r, fconst(1.0, ty)), r)
    return copysign(b, r, x)  # ceil(-0.5) = -0.0


def trunc(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return copysign(b, floor(b, fabs(b, x)), x)


def log1p(b: ir.IRBuilder, u: ir.Value) -> ir.Value:
    """log(1 + u), accurate for tiny u: log(w) * u / (w - 1) with w = 1 + u (Goldberg's trick)."""
    ty = u.type
    one = fconst(1.0, ty)
    w = b.fadd(one, u)
    d = b.fsub(w, one)
    y = b.fdiv(b.fmul(emit_log(b, w), u), d)
    y = b.select(b.fcmp_ordered("==", d, fconst(0.0, ty)), u, y)
    return b.select(b.fcmp_ordered("==", u, fconst(float("inf"), ty)), u, y)


def expm1(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """exp(x) - 1, accurate for tiny x: (w - 1) * x / log(w) with w = exp(x) (Kahan's trick)."""
    ty = x.type
    one = fconst(1.0, ty)
    w = emit_exp(b, x)
    d = b.fsub(w, one)
    y = b.fdiv(b.fmul(d, x), emit_log(b, w))
    y = b.select(b.fcmp_ordered("==", w, one), x, y)
    y = b.select(b.fcmp_ordered("==", d, fconst(-1.0, ty)), d, y)
    return b.select(b.fcmp_ordered("==", w, fconst(float("inf"), ty)), w, y)


def erfc_positive(b: ir.IRBuilder, a: ir.Value) -> ir.Value:
    """erfc(a) for a >= 0 (absolute error < 2e-7), without the cancellation of 1 - erf(a)."""
    ty = a.type
    t = b.fdiv(fconst(1.0, ty), b.fadd(fconst(1.0, ty), b.fmul(a, fconst(ERFC_P, ty))))
    p = b.fmul(poly(b, t, ERFC_POLY), t)
    return b.fmul(p, emit_exp(b, b.fneg(b.fmul(a, a))))


def emit_erf(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ty = x.type
    a = fabs(b, x)
    z = b.fmul(x, x)
    small = b.fmul(poly(b, z, ERF_TAYLOR), x)
    large = copysign(b, b.fsub(fconst(1.0, ty), erfc_positive(b, a)), x)
    return b.select(b.fcmp_ordered("<", a, fconst(ERF_SMALL, ty)), small, large)
