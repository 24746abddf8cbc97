"""Integer arithmetic of quantized inference, bit-exact with TFLite and onnxruntime.

TFLite's fixed-point helpers (gemmlowp's fixedpoint and tensorflow/lite/kernels/internal/common.h),
written over numpy int64 arrays that hold int32 values, and `quantize_multiplier`, which turns a real
scale into the (Q31 multiplier, power-of-two shift) pair TFLite computes from a double. The
frontends import `quantize_multiplier`; the reference kernels (ir/ops/quantized.py) and the tests of
the LLVM kernels use the rest.

    real_scale == multiplier * 2 ** (shift - 31)

Every function accepts Python ints or numpy arrays (broadcasting) and returns int64 arrays whose
values fit int32.
"""
from __future__ import annotations

import math

import numpy as np

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1

QRANGE = {"i8": (-128, 127), "u8": (0, 255)}  # the quantized domain of each storage dtype


def _i64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def wrap_i32(x) -> np.ndarray:
    """Two's complement wrap to int32 (what an int32 multiply or shift does on every target)."""
    return ((_i64(x) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def saturating_rounding_doubling_high_mul(a, b) -> np.ndarray:
    """High 32 bits of 2*a*b, rounded to nearest (ties away from zero); INT32_MIN * INT32_MIN, whose
    result does not fit, saturates to INT32_MAX."""
    a, b = _i64(a), _i64(b)
    overflow = (a == b) & (a == INT32_MIN)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    s = ab + nudge
    high = np.where(s >= 0, s >> 31, -((-s) >> 31))  # C division by 2**31: truncates toward zero
    return np.where(overflow, INT32_MAX, high)


def rounding_divide_by_pot(x, exponent) -> np.ndarray:
    """x / 2**exponent rounded to nearest, ties away from zero (exponent in 0..31)."""
    x, exponent = _i64(x), _i64(exponent)
    if np.any((exponent < 0) | (exponent > 31)):
        raise ValueError(f"rounding_divide_by_pot: exponent {exponent} outside 0..31")
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def multiply_by_quantized_multiplier(x, multiplier, shift) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier (double rounding): x * multiplier * 2**(shift - 31)."""
    shift = _i64(shift)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    shifted = wrap_i32(_i64(x) << left)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, multiplier), right)


def multiply_by_quantized_multiplier_smaller_than_one_exp(x, multiplier, left_shift) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplierSmallerThanOneExp: left_shift <= 0."""
    left_shift = _i64(left_shift)
    if np.any(left_shift > 0):
        raise ValueError(f"multiply_by_quantized_multiplier_smaller_than_one_exp: left_shift {left_shift} > 0")
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier), -left_shift)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """(multiplier, shift) with real ~= multiplier * 2**(shift - 31), as TFLite's QuantizeMultiplier
    computes it from a double: frexp, round half away from zero to Q31, fix a mantissa that rounds up
    to 1.0, flush shifts below -31 to zero and clamp shifts above 30."""
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    scaled = q * (1 << 31)
    q_fixed = int(math.copysign(math.floor(abs(scaled) + 0.5), scaled))
    if q_fixed == (1 << 31):
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if shift > 30:
        return INT32_MAX, 30
    return q_fixed, shift


def requantize_fixed(acc, multiplier, shift) -> np.ndarray:
    """The "fixed" requantization of QConv/QMatMul: MultiplyByQuantizedMultiplier."""
    return multiply_by_quantized_multiplier(acc, multiplier, shift)


def round_half_even_f32(v: np.ndarray) -> np.ndarray:
    return np.round(np.asarray(v, dtype=np.float32).astype(np.float64))


def round_half_away_f32(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32).astype(np.float64)
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def requantize_float(acc, scale, y_zero_point: int, act_min: int, act_max: int) -> np.ndarray:
    """onnxruntime's requantization (MLAS): f32(acc) * scale in f32, clamped to the output range
    shifted by the zero point, rounded half to even, plus the zero point."""
    v = np.asarray(acc, dtype=np.int64).astype(np.float32) * np.asarray(scale, dtype=np.float32)
    v = np.clip(v, np.float32(act_min - y_zero_point), np.float32(act_max - y_zero_point))
    return round_half_even_f32(v).astype(np.int64) + y_zero_point
