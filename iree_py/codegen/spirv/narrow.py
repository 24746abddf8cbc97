"""Narrow element types in a shader (iree_py/ir/narrow_types.py): bf16, the float8 formats,
f4e2m1, f8e8m0 and the 4-/2-bit integers, as the CPU backend has them (codegen/llvm/narrow_values.py).

In registers a narrow float is the exact f32 it stands for and a narrow integer an i32 (sign- or
zero-extended, wrapped by scalars.wrap); in storage they are their codes, one per byte (bf16: two),
so they need only the 8-/16-bit storage access int8/int16 tensors already use. Every conversion is
i32 bit manipulation on the f32 bits (codes are zero-extended into i32 registers):
- `code_to_f32`: code -> the exact f32;
- `f32_to_code`: f32 -> code, round to nearest even; NaN gives the format's NaN (f4e2m1: -0);
- `round_to_narrow`: Cast's rounding (float8 and f4e2m1 saturate, bf16 and f16 overflow to inf,
  f8e8m0 rounds up and saturates);
- `float_to_narrow_int`: Cast of a float to i4/u4/i2/u2 (round half away from zero, then wrap).
"""
from __future__ import annotations

from iree_py.codegen.spirv.builder import KernelBuilder, Value
from iree_py.ir.narrow_types import E8M0_NAN, FLOAT_FORMATS, FloatFormat
from iree_py.ir.types import DType

# f16 as one more small float: a Cast to f16 inside an expression rounds through its code, since
# OpQuantizeToF16 may flush f16 subnormals to zero (lavapipe does)
FORMATS = {**FLOAT_FORMATS, DType.f16: FloatFormat(5, 10, 15, "ieee", saturates=False)}
F32_NAN_BITS = 0x7FC00000
F32_INF_BITS = 0x7F800000


def _int(b: KernelBuilder, opname: str, x: Value, y: "Value | int") -> Value:
    return b.op(opname, "i32", x, b.lift(y, "i32"))


def _and(b: KernelBuilder, x: Value, y: "Value | int") -> Value:
    return _int(b, "OpBitwiseAnd", x, y)


def _or(b: KernelBuilder, x: Value, y: "Value | int") -> Value:
    return _int(b, "OpBitwiseOr", x, y)


def _shl(b: KernelBuilder, x: Value, y: "Value | int") -> Value:
    return _int(b, "OpShiftLeftLogical", x, y)


def _shr(b: KernelBuilder, x: Value, y: "Value | int") -> Value:
    return _int(b, "OpShiftRightLogical", x, y)


def _bits(b: KernelBuilder, x: Value) -> Value:
    return b.op("OpBitcast", "i32", x)


def _float(b: KernelBuilder, bits: Value) -> Value:
    return b.op("OpBitcast", "f32", bits)


def _e8m0_to_f32(b: KernelBuilder, code: Value) -> Value:
    """2**(code - 127): the f32 with exponent field `code`; code 0 is the f32 subnormal 2**-127; 0xFF NaN."""
    value = b.select(code.eq(0), b.int(0x00400000), _shl(b, code, 23))
    return _float(b, b.select(code.eq(E8M0_NAN), b.int(F32_NAN_BITS), value))


def _e8m0_code(b: KernelBuilder, x: Value, round_up: bool) -> Value:
    """The f32 exponent field of x (plus one for a nonzero mantissa below 0xFE when `round_up`);
    inf and NaN give 0xFF."""
    u = _bits(b, x)
    exponent = _and(b, _shr(b, u, 23), 0xFF)
    if not round_up:
        return exponent
    up = b.logical_and(_and(b, u, 0x7FFFFF).ne(0), exponent < 0xFE)
    return exponent + b.select(up, b.int(1), b.int(0))


def code_to_f32(b: KernelBuilder, code: Value, dtype: DType) -> Value:
    """A narrow float's code (zero-extended in an i32) -> its exact f32 value."""
    if dtype == DType.f8e8m0:
        return _e8m0_to_f32(b, code)
    if dtype == DType.bf16:
        return _float(b, _shl(b, code, 16))
    fmt = FORMATS[dtype]
    m = fmt.mantissa
    sign = _shl(b, _and(b, code, fmt.sign_bit), 32 - fmt.width)
    magnitude = _and(b, code, fmt.sign_bit - 1)
    exponent = _shr(b, magnitude, m)
    fraction = _and(b, magnitude, (1 << m) - 1)
    normal = _or(b, _shl(b, exponent + (127 - fmt.bias), 23), _shl(b, fraction, 23 - m))
    # exponent 0: fraction * 2**(1 - bias - m), exact (and normal) in f32
    subnormal = _bits(b, b.to_f32(fraction) * b.float(2.0 ** (1 - fmt.bias - m)))
    value = _or(b, b.select(exponent.eq(0), subnormal, normal), sign)
    if fmt.nan == "ieee":
        special = exponent.eq((1 << fmt.exponent) - 1)
        inf = _or(b, sign, F32_INF_BITS)
        value = b.select(special, b.select(fraction.eq(0), inf, b.int(F32_NAN_BITS)), value)
    elif fmt.nan == "fn":
        value = b.select(magnitude.eq(fmt.nan_code), b.int(F32_NAN_BITS), value)
    elif fmt.nan == "fnuz":
        value = b.select(code.eq(fmt.sign_bit), b.int(F32_NAN_BITS), value)
    return _float(b, value)


def _round_shift(b: KernelBuilder, v: Value, shift: Value) -> Value:
    """v >> shift rounded to nearest even (v >= 0, 1 <= shift <= 31)."""
    q = _shr(b, v, shift)
    rem = _and(b, v, _shl(b, b.int(1), shift) - 1)
    half = _shl(b, b.int(1), shift - 1)
    odd = _and(b, q, 1).ne(0)
    up = b.logical_or(b.op("OpUGreaterThan", "bool", rem, half), b.logical_and(rem.eq(half), odd))
    return q + b.select(up, b.int(1), b.int(0))


def f32_to_code(b: KernelBuilder, x: Value, dtype: DType, saturate: bool = False) -> Value:
    """An f32 -> the narrow float's code (in an i32), rounded to nearest even. Overflow gives the
    largest finite value when `saturate` (always for f4e2m1, which has no inf/NaN), else inf where
    the format has one, else NaN."""
    if dtype == DType.f8e8m0:
        return _e8m0_code(b, x, round_up=False)
    fmt = FORMATS[dtype]
    u = _bits(b, x)
    sign = _shr(b, _and(b, u, 0x80000000), 32 - fmt.width)
    a = _and(b, u, 0x7FFFFFFF)
    biased = _shr(b, a, 23)
    mantissa = _and(b, a, 0x7FFFFF)
    is_normal = biased.ne(0)
    significand = b.select(is_normal, _or(b, mantissa, 0x800000), mantissa)
    biased = b.select(is_normal, biased, b.int(1))
    # the target's biased exponent; below 1 the value is subnormal there and shifts further
    target_exp = biased - (127 - fmt.bias)
    extra = b.max(1 - target_exp, 0)
    shift = b.min(extra + (23 - fmt.mantissa), 31)
    rounded = _round_shift(b, significand, shift)
    exp_part = b.select(target_exp > 1, target_exp - 1, b.int(0))
    code = _shl(b, exp_part, fmt.mantissa) + rounded
    too_big = b.logical_or(code > fmt.max_code, a.eq(F32_INF_BITS))
    if saturate or fmt.nan == "none":
        big_code = fmt.max_code
    else:
        big_code = fmt.inf_code if fmt.inf_code is not None else fmt.nan_code
    code = _or(b, b.select(too_big, b.int(big_code), code), sign)
    if fmt.nan == "fnuz":  # no negative zero: -0 would be the NaN code
        code = b.select(code.eq(fmt.sign_bit), b.int(0), code)
    nan_code = b.int(fmt.nan_code) if fmt.nan in ("fnuz", "none") else _or(b, sign, fmt.nan_code)
    return b.select(a > F32_INF_BITS, nan_code, code)


def round_to_narrow(b: KernelBuilder, x: Value, dtype: DType) -> Value:
    """An f32 rounded to the nearest value of narrow float `dtype` (still an f32), as Cast rounds."""
    if dtype == DType.f8e8m0:
        return _e8m0_to_f32(b, _e8m0_code(b, x, round_up=True))
    return code_to_f32(b, f32_to_code(b, x, dtype, FORMATS[dtype].saturates), dtype)


def float_to_narrow_int(b: KernelBuilder, x: Value) -> Value:
    """An f32 or f64 -> the i32 that a 4-/2-bit integer Cast wraps (scalars.wrap): rounded half away from
    zero; beyond +-2**31 and NaN INT32_MIN, whose low bits are 0 (narrow_types.narrow_cast_array)."""
    limit = 2.0 ** 31
    inside = b.logical_and(x > -limit, x < limit)  # false for NaN
    whole = b.op("OpConvertFToS", "i32", b.select(inside, x, b.const(0.0, x.ty)))
    fraction = x - b.op("OpConvertSToF", x.ty, whole)
    up = b.select(fraction >= 0.5, b.int(1), b.int(0))
    down = b.select(fraction <= -0.5, b.int(1), b.int(0))
    return b.select(inside, whole + up - down, b.int(-(1 << 31)))
