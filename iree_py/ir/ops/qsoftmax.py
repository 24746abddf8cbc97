"""QSoftmax: TFLite's int8/uint8 SOFTMAX over the last axis, in fixed point (docs/ir.md, "Quantized ops").

    QSoftmax(x: i8 | u8 [..., D]) -> out_dtype [..., D]
    attrs: input_multiplier (Q31), input_left_shift (>= 0), diff_min (<= 0), out_dtype ("i8" | "u8")

The output is quantized with scale 1/256 and zero point -128 (i8) or 0 (u8), as TFLite requires.
`qsoftmax_params` derives the attributes from beta and the input scale the way TFLite's Prepare
does (PreprocessSoftmaxScaling with 5 integer bits, CalculateInputRadius); the kernel is
codegen/llvm/qsoftmax.py.

The numpy reference below is bit-exact with TFLite's reference int8/uint8 softmax. TFLite
(kernels/internal/reference/softmax.h) works in gemmlowp fixed point: per row, the difference to the
row's maximum is rescaled to Q5.26 (MultiplyByQuantizedMultiplierGreaterThanOne), exp() of it is
evaluated in Q0.31 (`exp_on_negative_values`: a Taylor polynomial on [-1/4, 0) and a barrel shifter
of constant factors exp(-2^k)), the sum of exps is kept in Q12.19, its reciprocal comes from
Newton-Raphson (`one_over_one_plus_x_for_x_in_0_1`), and each output is exp * reciprocal rounded
down to 8 bits. Differences below diff_min give the lowest output. Values are int64 arrays holding
int32 values; additions wrap as int32 additions do.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from iree_py.ir.opdef import Kernel, OpDef
from iree_py.ir.quant_math import (INT32_MAX, INT32_MIN, QRANGE, rounding_divide_by_pot,
                                   saturating_rounding_doubling_high_mul as mul, wrap_i32)
from iree_py.ir.types import DType, TensorType


SCALED_DIFF_INTEGER_BITS = 5          # the exp() input is Q5.26


ACCUMULATION_INTEGER_BITS = 12        # the sum of exps is Q12.19


QSOFTMAX_DTYPES = frozenset({DType.i8, DType.u8})


OUTPUT_ZERO_POINT = {"i8": -128, "u8": 0}


OUTPUT_SCALE = 1.0 / 256


def qsoftmax_params(beta: float, input_scale: float) -> dict[str, int]:
    """input_multiplier, input_left_shift, diff_min from float32 beta and input scale (as doubles)."""
    from iree_py.ir.quant_math import quantize_multiplier

    real = min(float(beta) * float(input_scale) * (1 << (31 - SCALED_DIFF_INTEGER_BITS)), (1 << 31) - 1.0)
    if not real > 1.0:
        raise ValueError(f"beta {beta} x input scale {input_scale} is too small for TFLite's quantized softmax "
                         f"(needs beta * scale * 2^26 > 1, got {real:.6g})")
    multiplier, shift = quantize_multiplier(real)
    radius = math.floor(((1 << SCALED_DIFF_INTEGER_BITS) - 1) * float(1 << (31 - SCALED_DIFF_INTEGER_BITS))
                        / float(1 << shift))
    return {"input_multiplier": int(multiplier), "input_left_shift": int(shift), "diff_min": -int(radius)}


def _qsoftmax(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = inputs[0]
    if x.dtype not in QSOFTMAX_DTYPES:
        raise ValueError(f"QSoftmax input must be i8 or u8, got {x}")
    if x.rank < 1:
        raise ValueError(f"QSoftmax input must have rank >= 1, got {x}")
    out = attrs["out_dtype"]
    if out not in OUTPUT_ZERO_POINT:
        raise ValueError(f"QSoftmax out_dtype {out!r}: expected 'i8' or 'u8'")
    if not 0 < int(attrs["input_multiplier"]) < (1 << 31):
        raise ValueError(f"QSoftmax input_multiplier {attrs['input_multiplier']} outside 1..2^31-1")
    if not 0 <= int(attrs["input_left_shift"]) <= 30:
        raise ValueError(f"QSoftmax input_left_shift {attrs['input_left_shift']} outside 0..30")
    if int(attrs["diff_min"]) > 0:
        raise ValueError(f"QSoftmax diff_min {attrs['diff_min']} must be <= 0")
    return [TensorType(DType(out), x.shape)]


# --- numpy reference -------------------------------------------------------------------------------

# exp(-2^k) in Q0.31 for k = -2..4: gemmlowp's barrel shifter constants.
EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535),
              (3, 720401), (4, 242))


EXP_MINUS_ONE_EIGHTH = 1895147668     # exp(-1/8) in Q0.31


ONE_THIRD = 715827883                 # 1/3 in Q0.31


FORTY_EIGHT_OVER_17 = 1515870810      # 48/17 in Q2.29


MINUS_32_OVER_17 = -1010580540        # -32/17 in Q2.29


def saturating_shift_left(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp's SaturatingRoundingMultiplyByPOT with a positive exponent."""
    threshold = (1 << (31 - exponent)) - 1
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, x << exponent))


def exp_on_interval(a: np.ndarray) -> np.ndarray:
    """exp(a) for a in [-1/4, 0), Q0.31 in and out: Taylor series around -1/8."""
    x = a + (1 << 28)
    x2 = mul(x, x)
    x3 = mul(x2, x)
    x4 = mul(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(wrap_i32(mul(wrap_i32(x4_over_4 + x3), ONE_THIRD) + x2), 1)
    return wrap_i32(EXP_MINUS_ONE_EIGHTH + mul(EXP_MINUS_ONE_EIGHTH, wrap_i32(x + poly)))


def exp_on_negative_values(a: np.ndarray) -> np.ndarray:
    """exp(a) for a <= 0 in Q5.26, result in Q0.31."""
    fractional_bits = 31 - SCALED_DIFF_INTEGER_BITS
    quarter = 1 << (fractional_bits - 2)
    a_mod = (a & (quarter - 1)) - quarter
    result = exp_on_interval(saturating_shift_left(a_mod, SCALED_DIFF_INTEGER_BITS))
    remainder = wrap_i32(a_mod - a)
    for exponent, factor in EXP_BARREL:
        bit = (remainder >> (fractional_bits + exponent)) & 1
        result = np.where(bit == 1, mul(result, factor), result)
    return np.where(a == 0, INT32_MAX, result)


def count_leading_zeros(x: np.ndarray) -> np.ndarray:
    """Leading zero bits of x as a uint32 (32 for 0)."""
    u = np.asarray(x, dtype=np.int64) & 0xFFFFFFFF
    count = np.zeros_like(u)
    for width in (16, 8, 4, 2, 1):
        small = u < (np.int64(1) << (32 - width))
        count = np.where(small, count + width, count)
        u = np.where(small, u << width, u)
    return np.where((np.asarray(x, dtype=np.int64) & 0xFFFFFFFF) == 0, 32, count)


def one_over_one_plus_x(a: np.ndarray) -> np.ndarray:
    """1 / (1 + a) for a in [0, 1), Q0.31 in and out: Newton-Raphson from 48/17 - 32/17 * d."""
    total = a + INT32_MAX
    half_denominator = np.where(total >= 0, (total + 1) // 2, -((-total + 1) // 2))   # RoundingHalfSum
    x = wrap_i32(FORTY_EIGHT_OVER_17 + mul(half_denominator, MINUS_32_OVER_17))
    for _ in range(3):
        one_minus = wrap_i32((1 << 29) - mul(half_denominator, x))
        x = wrap_i32(x + saturating_shift_left(mul(x, one_minus), 2))
    return saturating_shift_left(x, 1)


def qsoftmax_rows(x: np.ndarray, multiplier: int, left_shift: int, diff_min: int, out_dtype: str) -> np.ndarray:
    """QSoftmax of the rows (last axis) of an integer array; returns int64 values in the output range."""
    x = np.asarray(x, dtype=np.int64)
    diff = x - x.max(axis=-1, keepdims=True)
    used = diff >= diff_min
    scaled = mul(wrap_i32(diff * (1 << left_shift)), multiplier)
    exps = exp_on_negative_values(scaled)
    terms = np.where(used, rounding_divide_by_pot(exps, ACCUMULATION_INTEGER_BITS), 0)
    sums = wrap_i32(terms.sum(axis=-1, keepdims=True))
    headroom = count_leading_zeros(sums)
    bits_over_unit = ACCUMULATION_INTEGER_BITS - headroom
    shifted_minus_one = wrap_i32(((sums << headroom) & 0xFFFFFFFF) - (1 << 31))
    reciprocal = one_over_one_plus_x(shifted_minus_one)
    qmin, qmax = QRANGE[out_dtype]
    out = rounding_divide_by_pot(mul(reciprocal, exps), bits_over_unit + 31 - 8) + OUTPUT_ZERO_POINT[out_dtype]
    return np.where(used, np.clip(out, qmin, qmax), qmin)


def qsoftmax(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    out_dtype = attrs["out_dtype"]
    y = qsoftmax_rows(ins[0], int(attrs["input_multiplier"]), int(attrs["input_left_shift"]),
                      int(attrs["diff_min"]), out_dtype)
    return y.astype(np.int8 if out_dtype == "i8" else np.uint8)


OP_DEFS = [
    OpDef("QSoftmax", ("diff_min", "input_left_shift", "input_multiplier", "out_dtype"), 1, 1, _qsoftmax,
          dtypes=QSOFTMAX_DTYPES),
]

KERNELS: dict[str, Kernel] = {"QSoftmax": qsoftmax}
