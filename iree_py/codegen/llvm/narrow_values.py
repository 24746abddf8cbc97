"""Narrow element types in LLVM (iree_py/ir/narrow_types.py): bf16, float8, f4e2m1, i4/u4/i2/u2.

In registers a narrow float is the exact `float` it stands for and a narrow integer an i8 (sign- or
zero-extended). In memory they are their codes, one per byte (bf16: i16). Every conversion is
integer bit manipulation on the f32 bits (no libcalls), for scalars and vectors alike:
- `narrow_bits_to_f32`: code -> the exact float;
- `f32_to_narrow_bits`: float -> code, round to nearest even; NaN gives the format's NaN (f4e2m1: -0);
- `round_to_narrow`: Cast's rounding: overflow saturates for float8 and f4e2m1 (ONNX Cast's
  saturate=1), gives inf for bf16; f8e8m0 rounds up and saturates (ONNX's default round_mode).
f8e8m0 has its own three (`_e8m0_*`): the code is the f32 exponent field.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.ir.narrow_types import E8M0_NAN, FLOAT_FORMATS, NARROW_INT_BITS
from iree_py.ir.types import DType

F32 = ir.FloatType()


def with_lanes(element: ir.Type, like: ir.Type) -> ir.Type:
    return ir.VectorType(element, like.count) if isinstance(like, ir.VectorType) else element


def int_like(ty: ir.Type, width: int) -> ir.Type:
    return with_lanes(ir.IntType(width), ty)


def const(value: float | int, ty: ir.Type) -> ir.Constant:
    """A constant of scalar or vector type `ty` (every lane the same)."""
    element = ty.element if isinstance(ty, ir.VectorType) else ty
    item = float(value) if isinstance(element, ir.FloatType) else int(value)
    return ir.Constant(ty, [item] * ty.count) if isinstance(ty, ir.VectorType) else ir.Constant(ty, item)


def _select(b: ir.IRBuilder, cond: ir.Value, a: ir.Value, other: ir.Value) -> ir.Value:
    return b.select(cond, a, other)


def _e8m0_to_f32(b: ir.IRBuilder, code: ir.Value) -> ir.Value:
    """2**(code - 127): the f32 with exponent field `code`; code 0 is the f32 subnormal 2**-127; 0xFF NaN."""
    i32 = int_like(code.type, 32)
    u = b.zext(code, i32)
    value = _select(b, b.icmp_unsigned("==", u, const(0, i32)), const(0x00400000, i32), b.shl(u, const(23, i32)))
    value = _select(b, b.icmp_unsigned("==", u, const(E8M0_NAN, i32)), const(0x7FC00000, i32), value)
    return b.bitcast(value, with_lanes(F32, code.type))


def _e8m0_code(b: ir.IRBuilder, x: ir.Value, round_up: bool) -> ir.Value:
    """The f32 exponent field of x (plus one for a nonzero mantissa below 0xFE when `round_up`;
    2**-127, the f32 subnormal 0x00400000, is code 0); inf and NaN give 0xFF."""
    i32 = int_like(x.type, 32)
    u = b.bitcast(x, i32)
    exponent = b.and_(b.lshr(u, const(23, i32)), const(0xFF, i32))
    code = exponent
    if round_up:
        fraction = b.and_(u, const(0x7FFFFF, i32))
        up = b.and_(b.icmp_unsigned("!=", fraction, const(0, i32)), b.icmp_unsigned("<", exponent, const(0xFE, i32)))
        code = b.add(exponent, b.zext(up, i32))
    return b.trunc(code, int_like(x.type, 8))


def narrow_bits_to_f32(b: ir.IRBuilder, code: ir.Value, dtype: DType) -> ir.Value:
    """A narrow float's code (i8 / i16, or vector) -> its exact f32 value."""
    if dtype == DType.f8e8m0:
        return _e8m0_to_f32(b, code)
    fmt = FLOAT_FORMATS[dtype]
    i32 = int_like(code.type, 32)
    f32 = with_lanes(F32, code.type)
    u = b.zext(code, i32)
    if dtype == DType.bf16:
        return b.bitcast(b.shl(u, const(16, i32)), f32)
    m = fmt.mantissa
    sign = b.shl(b.and_(u, const(fmt.sign_bit, i32)), const(32 - fmt.width, i32))
    magnitude = b.and_(u, const(fmt.sign_bit - 1, i32))
    exponent = b.lshr(magnitude, const(m, i32))
    fraction = b.and_(magnitude, const((1 << m) - 1, i32))
    normal = b.or_(b.shl(b.add(exponent, const(127 - fmt.bias, i32)), const(23, i32)),
                   b.shl(fraction, const(23 - m, i32)))
    # exponent 0: fraction * 2**(1 - bias - m), exact in f32
    subnormal = b.fmul(b.uitofp(fraction, f32), const(2.0 ** (1 - fmt.bias - m), f32))
    value = _select(b, b.icmp_unsigned("==", exponent, const(0, i32)), b.bitcast(subnormal, i32), normal)
    value = b.or_(value, sign)
    nan = const(0x7FC00000, i32)
    if fmt.nan == "ieee":
        top = (1 << fmt.exponent) - 1
        special = b.icmp_unsigned("==", exponent, const(top, i32))
        inf = b.or_(const(0x7F800000, i32), sign)
        value = _select(b, special, _select(b, b.icmp_unsigned("==", fraction, const(0, i32)), inf, nan), value)
    elif fmt.nan == "fn":
        value = _select(b, b.icmp_unsigned("==", magnitude, const(fmt.nan_code, i32)), nan, value)
    elif fmt.nan == "fnuz":
        value = _select(b, b.icmp_unsigned("==", u, const(fmt.sign_bit, i32)), nan, value)
    return b.bitcast(value, f32)


def _round_shift(b: ir.IRBuilder, v: ir.Value, shift: ir.Value) -> ir.Value:
    """v >> shift rounded to nearest even (1 <= shift <= 31)."""
    one = const(1, v.type)
    q = b.lshr(v, shift)
    rem = b.and_(v, b.sub(b.shl(one, shift), one))
    half = b.shl(one, b.sub(shift, one))
    up = b.or_(b.icmp_unsigned(">", rem, half),
               b.and_(b.icmp_unsigned("==", rem, half), b.trunc(b.and_(q, one), int_like(v.type, 1))))
    return b.add(q, b.zext(up, v.type))


def f32_to_narrow_bits(b: ir.IRBuilder, x: ir.Value, dtype: DType, saturate: bool = False) -> ir.Value:
    """A float (or vector) -> the narrow float's code (i8, i16 for bf16), rounded to nearest even.
    Overflow gives the largest finite value when `saturate` (and always for f4e2m1, which has no
    inf/NaN), else inf where the format has one, else NaN. Stores do not saturate (the value is
    already one of the format's); Cast does for float8 (round_to_narrow)."""
    if dtype == DType.f8e8m0:
        return _e8m0_code(b, x, round_up=False)
    fmt = FLOAT_FORMATS[dtype]
    i32 = int_like(x.type, 32)
    u = b.bitcast(x, i32)
    sign = b.lshr(b.and_(u, const(0x80000000, i32)), const(32 - fmt.width, i32))
    a = b.and_(u, const(0x7FFFFFFF, i32))
    biased = b.lshr(a, const(23, i32))
    mant = b.and_(a, const(0x7FFFFF, i32))
    is_normal = b.icmp_unsigned("!=", biased, const(0, i32))
    significand = _select(b, is_normal, b.or_(mant, const(0x800000, i32)), mant)
    biased = _select(b, is_normal, biased, const(1, i32))
    # the target's biased exponent; below 1 the value is subnormal there and shifts further
    target_exp = b.sub(biased, const(127 - fmt.bias, i32))
    below = b.sub(const(1, i32), target_exp)
    extra = _select(b, b.icmp_signed(">", below, const(0, i32)), below, const(0, i32))
    shift = b.add(const(23 - fmt.mantissa, i32), extra)
    shift = _select(b, b.icmp_unsigned(">", shift, const(31, i32)), const(31, i32), shift)
    rounded = _round_shift(b, significand, shift)
    exp_part = _select(b, b.icmp_signed(">", target_exp, const(1, i32)), b.sub(target_exp, const(1, i32)),
                       const(0, i32))
    code = b.add(b.shl(exp_part, const(fmt.mantissa, i32)), rounded)
    overflow = b.icmp_unsigned(">", code, const(fmt.max_code, i32))
    is_inf = b.icmp_unsigned("==", a, const(0x7F800000, i32))
    too_big = b.or_(overflow, is_inf)
    if saturate or fmt.nan == "none":
        big_code = const(fmt.max_code, i32)
    elif fmt.inf_code is not None:
        big_code = const(fmt.inf_code, i32)
    else:
        big_code = const(fmt.nan_code, i32)
    code = _select(b, too_big, big_code, code)
    code = b.or_(code, sign)
    if fmt.nan == "fnuz":  # no negative zero: -0 would be the NaN code
        code = _select(b, b.icmp_unsigned("==", code, const(fmt.sign_bit, i32)), const(0, i32), code)
    nan_code = const(fmt.nan_code, i32) if fmt.nan in ("fnuz", "none") else b.or_(const(fmt.nan_code, i32), sign)
    code = _select(b, b.icmp_unsigned(">", a, const(0x7F800000, i32)), nan_code, code)
    return b.trunc(code, int_like(x.type, 8 * dtype.itemsize))


def round_to_narrow(b: ir.IRBuilder, x: ir.Value, dtype: DType) -> ir.Value:
    """A float rounded to the nearest value of narrow float `dtype` (still a float)."""
    if dtype == DType.f8e8m0:
        return _e8m0_to_f32(b, _e8m0_code(b, x, round_up=True))
    return narrow_bits_to_f32(b, f32_to_narrow_bits(b, x, dtype, FLOAT_FORMATS[dtype].saturates), dtype)


def load_narrow_int(b: ir.IRBuilder, raw: ir.Value, dtype: DType) -> ir.Value:
    """The byte of a 4-/2-bit integer -> its value as i8 (sign-extended for i4/i2)."""
    width, signed = NARROW_INT_BITS[dtype]
    if signed:
        return b.ashr(b.shl(raw, const(8 - width, raw.type)), const(8 - width, raw.type))
    return b.and_(raw, const((1 << width) - 1, raw.type))


def store_narrow_int(b: ir.IRBuilder, value: ir.Value, dtype: DType) -> ir.Value:
    """An i8 register value -> the byte of a 4-/2-bit integer: its low bits (wrapping)."""
    width, _ = NARROW_INT_BITS[dtype]
    return b.and_(value, const((1 << width) - 1, value.type))


def float_to_narrow_int(b: ir.IRBuilder, x: ir.Value, dtype: DType) -> ir.Value:
    """A float register (f32 or f64, or vector) -> a 4-/2-bit integer as i8, as onnxruntime casts:
    round half away from zero, then keep the low bits (wrap). Beyond +-2**31 (and NaN) the
    intermediate is INT32_MIN, whose low bits are 0."""
    i32 = int_like(x.type, 32)
    limit = 2.0 ** 31
    inside = b.and_(b.fcmp_ordered(">", x, const(-limit, x.type)), b.fcmp_ordered("<", x, const(limit, x.type)))
    whole = b.select(inside, b.fptosi(x, i32), const(-(1 << 31), i32))
    fraction = b.fsub(x, b.sitofp(whole, x.type))
    up = b.zext(b.fcmp_ordered(">=", fraction, const(0.5, x.type)), i32)
    down = b.zext(b.fcmp_ordered("<=", fraction, const(-0.5, x.type)), i32)
    rounded = b.sub(b.add(whole, up), down)
    return load_narrow_int(b, store_narrow_int(b, b.trunc(rounded, int_like(x.type, 8)), dtype), dtype)

