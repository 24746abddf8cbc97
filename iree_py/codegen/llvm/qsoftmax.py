"""The "qsoftmax" kernel: TFLite's int8/uint8 SOFTMAX over the last axis, in integers only.

It mirrors iree_py/ir/ops/qsoftmax.py step for step (gemmlowp fixed point: exp on Q5.26
differences, Q12.19 sum, Newton-Raphson reciprocal). Arithmetic is i32 with i32 x i32 -> i64
products (requant.py's helpers): no float, no division, no call to libm or a compiler builtin, so it
links into flat images on cortex-m4 and riscv32. Leading zeros are counted with a five-step binary
search rather than llvm.ctlz (which becomes a libcall on cores without a CLZ instruction).

One workgroup per row [outer index]; the row is read three times (max, sum of exps, outputs).
"""
from __future__ import annotations

import math

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import I32, begin_kernel, const_i64, entry_alloca, for_range, static_shape
from iree_py.codegen.llvm.requant import (INT32_MAX, INT32_MIN, QRANGE, clamp_i32, i32, load_q, rounding_divide_by_pot,
                                          saturating_rounding_doubling_high_mul, smax, store_q)
from iree_py.ir.ops.qsoftmax import (ACCUMULATION_INTEGER_BITS, EXP_BARREL, EXP_MINUS_ONE_EIGHTH, FORTY_EIGHT_OVER_17,
                                     MINUS_32_OVER_17, ONE_THIRD, OUTPUT_ZERO_POINT, SCALED_DIFF_INTEGER_BITS)


def _mul(b: ir.IRBuilder, x: ir.Value, y: ir.Value | int) -> ir.Value:
    return saturating_rounding_doubling_high_mul(b, x, i32(y) if isinstance(y, int) else y)


def _rdbp(b: ir.IRBuilder, x: ir.Value, exponent: int | ir.Value) -> ir.Value:
    return rounding_divide_by_pot(b, x, i32(exponent) if isinstance(exponent, int) else exponent)


def _saturating_shift_left(b: ir.IRBuilder, x: ir.Value, exponent: int) -> ir.Value:
    threshold = (1 << (31 - exponent)) - 1
    shifted = b.shl(x, i32(exponent))
    high = b.select(b.icmp_signed(">", x, i32(threshold)), i32(INT32_MAX), shifted)
    return b.select(b.icmp_signed("<", x, i32(-threshold)), i32(INT32_MIN), high)


def _exp_on_interval(b: ir.IRBuilder, a: ir.Value) -> ir.Value:
    x = b.add(a, i32(1 << 28))
    x2 = _mul(b, x, x)
    x3 = _mul(b, x2, x)
    x4 = _mul(b, x2, x2)
    poly = _rdbp(b, b.add(_mul(b, b.add(_rdbp(b, x4, 2), x3), ONE_THIRD), x2), 1)
    return b.add(i32(EXP_MINUS_ONE_EIGHTH), _mul(b, i32(EXP_MINUS_ONE_EIGHTH), b.add(x, poly)))


def _exp_on_negative_values(b: ir.IRBuilder, a: ir.Value) -> ir.Value:
    fractional_bits = 31 - SCALED_DIFF_INTEGER_BITS
    quarter = 1 << (fractional_bits - 2)
    a_mod = b.sub(b.and_(a, i32(quarter - 1)), i32(quarter))
    result = _exp_on_interval(b, _saturating_shift_left(b, a_mod, SCALED_DIFF_INTEGER_BITS))
    remainder = b.sub(a_mod, a)
    for exponent, factor in EXP_BARREL:
        bit = b.and_(remainder, i32(1 << (fractional_bits + exponent)))
        result = b.select(b.icmp_signed("!=", bit, i32(0)), _mul(b, result, factor), result)
    return b.select(b.icmp_signed("==", a, i32(0)), i32(INT32_MAX), result)


def _count_leading_zeros(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Leading zeros of a positive i32 (a binary search over 16, 8, 4, 2, 1 bits)."""
    count, u = i32(0), x
    for width in (16, 8, 4, 2, 1):
        small = b.icmp_unsigned("<", u, i32(1 << (32 - width)))
        count = b.select(small, b.add(count, i32(width)), count)
        u = b.select(small, b.shl(u, i32(width)), u)
    return count


def _one_over_one_plus_x(b: ir.IRBuilder, a: ir.Value) -> ir.Value:
    """1 / (1 + a), a in [0, 1) as Q0.31 (a >= 0, so RoundingHalfSum(a, 1) is (a + INT32_MAX + 1) / 2)."""
    total = b.add(b.zext(a, ir.IntType(64)), const_i64(INT32_MAX + 1))
    half_denominator = b.trunc(b.lshr(total, const_i64(1)), I32)
    x = b.add(i32(FORTY_EIGHT_OVER_17), _mul(b, half_denominator, MINUS_32_OVER_17))
    for _ in range(3):
        one_minus = b.sub(i32(1 << 29), _mul(b, half_denominator, x))
        x = b.add(x, _saturating_shift_left(b, _mul(b, x, one_minus), 2))
    return _saturating_shift_left(b, x, 1)


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"qsoftmax kernel {spec.name}: expects 1 input and 1 output")
    dtype, out_dtype = spec.inputs[0].dtype, spec.outputs[0].dtype
    if dtype not in QRANGE or out_dtype not in QRANGE:
        raise ValueError(f"qsoftmax kernel {spec.name}: wants i8/u8 in and out, got {spec.inputs[0]} -> {spec.outputs[0]}")
    shape = static_shape(spec.inputs[0], f"qsoftmax kernel {spec.name} input")
    if static_shape(spec.outputs[0], f"qsoftmax kernel {spec.name} output") != shape or not shape:
        raise ValueError(f"qsoftmax kernel {spec.name}: output {spec.outputs[0]} must have the input's shape {shape}")
    depth = shape[-1]
    rows = math.prod(shape[:-1])
    multiplier = int(spec.attrs["input_multiplier"])
    left_shift = int(spec.attrs["input_left_shift"])
    diff_min = int(spec.attrs["diff_min"])
    qmin, qmax = QRANGE[out_dtype]
    zero_point = OUTPUT_ZERO_POINT[out_dtype.value]

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    base = b.mul(kb.workgroup_id_index(0), const_i64(depth))
    row_max = entry_alloca(b, I32, "row_max")
    total = entry_alloca(b, I32, "sum")
    b.store(i32(QRANGE[dtype][0]), row_max)
    with for_range(b, 0, depth, name="m") as c:
        b.store(smax(b, b.load(row_max), load_q(b, src, b.add(base, c), dtype)), row_max)
    top = b.load(row_max)

    def exp_of(c: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(exp of element c's scaled difference, whether the difference is >= diff_min)."""
        diff = b.sub(load_q(b, src, b.add(base, c), dtype), top)
        scaled = _mul(b, b.shl(diff, i32(left_shift)), multiplier)
        return _exp_on_negative_values(b, scaled), b.icmp_signed(">=", diff, i32(diff_min))

    b.store(i32(0), total)
    with for_range(b, 0, depth, name="e") as c:
        e, used = exp_of(c)
        term = b.select(used, _rdbp(b, e, ACCUMULATION_INTEGER_BITS), i32(0))
        b.store(b.add(b.load(total), term), total)
    sums = b.load(total)
    headroom = _count_leading_zeros(b, sums)
    shifted_minus_one = b.sub(b.shl(sums, headroom), i32(INT32_MIN))
    reciprocal = _one_over_one_plus_x(b, shifted_minus_one)
    # exponent = bits_over_unit + 31 - 8; TFLite's own arithmetic is undefined past 31 (a sum of exps
    # >= 2^28: rows of hundreds of near-maximal entries), so it is held at 31.
    exponent = b.sub(i32(ACCUMULATION_INTEGER_BITS + 31 - 8), headroom)
    exponent = b.select(b.icmp_signed(">", exponent, i32(31)), i32(31), exponent)
    with for_range(b, 0, depth, name="o") as c:
        e, used = exp_of(c)
        out = b.add(_rdbp(b, _mul(b, reciprocal, e), exponent), i32(zero_point))
        store_q(b, b.select(used, clamp_i32(b, out, qmin, qmax), i32(qmin)), dst, b.add(base, c))
    kb.finish()
    return KernelInfo(spec.name, (rows, 1, 1), (), (spec.inputs[0].num_bytes, spec.outputs[0].num_bytes))
