"""LLVM emitters shared by the quantized kernels: TFLite's fixed-point helpers, onnxruntime's float
requantization, int8 loads/stores, per-channel constant tables, and the operands of the QConv /
QMatMul kernel families (check_q_operands: which binding holds X, W, the bias and run-time zero points).

They mirror iree_py/ir/quant_math.py operation for operation (the tests compare bit for bit). All
arithmetic is i32, with i32 x i32 -> i64 products formed by `sext` + `mul` (smull/umull on Arm,
mul + mulh on RISC-V): no i64 division and no call to a compiler builtin, so the code links into
flat images on 32-bit targets. Values are scalars; the loops around them are simple enough for
LLVM's loop vectorizer.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from iree_py.codegen.llvm.common import F32, I8, I32, I64, const_i32, const_i64, element_ptr
from iree_py.ir.types import DType, TensorType

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
ROUND_MAGIC = 12582912.0       # 1.5 * 2**23: float(v + MAGIC) holds round_half_even(v) in its low bits
ROUND_MAGIC_BITS = 0x4B400000  # the bits of ROUND_MAGIC
FLOAT_CLAMP = float(1 << 21)   # |v| below this keeps the magic trick exact

QRANGE = {DType.i8: (-128, 127), DType.u8: (0, 255)}


def i32(value: int) -> ir.Constant:
    return const_i32(value)


def smax(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed(">", x, y), x, y)


def smin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def clamp_i32(b: ir.IRBuilder, x: ir.Value, lo: int, hi: int) -> ir.Value:
    return smin(b, smax(b, x, i32(lo)), i32(hi))


def load_q(b: ir.IRBuilder, base: ir.Value, index: ir.Value, dtype: DType) -> ir.Value:
    """Element `index` of an i8/u8/i32 buffer, widened to i32 (sign- or zero-extended)."""
    if dtype == DType.i32:
        return b.load(element_ptr(b, base, index, I32), typ=I32, align=4)
    if dtype not in QRANGE:
        raise ValueError(f"quantized load of unsupported dtype {dtype.value}")
    v = b.load(element_ptr(b, base, index, I8), typ=I8, align=1)
    return b.sext(v, I32) if dtype == DType.i8 else b.zext(v, I32)


def store_q(b: ir.IRBuilder, value: ir.Value, base: ir.Value, index: ir.Value) -> None:
    """Store an i32 already clamped to the output's range as one byte."""
    b.store(b.trunc(value, I8), element_ptr(b, base, index, I8), align=1)


def acc_slot(b: ir.IRBuilder, acc: ir.Value, index: ir.Value) -> ir.Value:
    """Address of element `index` (i64) of a stack array of i32 accumulators."""
    return b.gep(acc, [const_i64(0), index], inbounds=True)


def constant_table(module: ir.Module, name: str, values: list[int] | list[float], ty: ir.Type) -> ir.GlobalVariable:
    """A read-only array in the kernel library (.rodata: fine for flat images)."""
    array_ty = ir.ArrayType(ty, len(values))
    table = ir.GlobalVariable(module, array_ty, name=name)
    table.initializer = ir.Constant(array_ty, [float(v) if ty == F32 else int(v) for v in values])
    table.global_constant = True
    table.linkage = "internal"
    return table


def per_channel(module: ir.Module, b: ir.IRBuilder, name: str, values: list, channel: ir.Value, ty: ir.Type = I32
                ) -> ir.Value:
    """values[channel] (a list of one value applies to every channel): a constant for one value,
    else a load from a constant table. `channel` is an i64."""
    if len(values) == 1:
        return ir.Constant(ty, float(values[0]) if ty == F32 else int(values[0]))
    table = constant_table(module, name, values, ty)
    return b.load(b.gep(table, [const_i64(0), channel], source_etype=table.value_type), typ=ty, align=4)


def saturating_rounding_doubling_high_mul(b: ir.IRBuilder, x: ir.Value, m: ir.Value) -> ir.Value:
    """High 32 bits of 2*x*m, rounded (gemmlowp's nudge, then C's truncating division by 2**31);
    INT32_MIN * INT32_MIN saturates to INT32_MAX."""
    product = b.mul(b.sext(x, I64), b.sext(m, I64))
    non_negative = b.icmp_signed(">=", product, const_i64(0))
    nudged = b.add(product, b.select(non_negative, const_i64(1 << 30), const_i64(1 - (1 << 30))))
    # Truncating division by 2**31: arithmetic shift, after adding 2**31 - 1 to negative values.
    negative = b.icmp_signed("<", nudged, const_i64(0))
    biased = b.select(negative, b.add(nudged, const_i64((1 << 31) - 1)), nudged)
    high = b.trunc(b.ashr(biased, const_i64(31)), I32)
    overflow = b.and_(b.icmp_signed("==", x, m), b.icmp_signed("==", x, i32(INT32_MIN)))
    return b.select(overflow, i32(INT32_MAX), high)


def rounding_divide_by_pot(b: ir.IRBuilder, x: ir.Value, exponent: ir.Value) -> ir.Value:
    """x / 2**exponent rounded to nearest, ties away from zero; exponent (i32) in 0..31."""
    mask = b.sub(b.shl(i32(1), exponent), i32(1))
    remainder = b.and_(x, mask)
    threshold = b.add(b.ashr(mask, i32(1)), b.zext(b.icmp_signed("<", x, i32(0)), I32))
    return b.add(b.ashr(x, exponent), b.zext(b.icmp_signed(">", remainder, threshold), I32))


def multiply_by_quantized_multiplier(b: ir.IRBuilder, x: ir.Value, multiplier: ir.Value, shift: ir.Value
                                     ) -> ir.Value:
    """TFLite's MultiplyByQuantizedMultiplier (double rounding): x * multiplier * 2**(shift - 31)."""
    left = smax(b, shift, i32(0))
    right = smax(b, b.sub(i32(0), shift), i32(0))
    return rounding_divide_by_pot(b, saturating_rounding_doubling_high_mul(b, b.shl(x, left), multiplier), right)


def multiply_smaller_than_one(b: ir.IRBuilder, x: ir.Value, multiplier: int, left_shift: int) -> ir.Value:
    """TFLite's MultiplyByQuantizedMultiplierSmallerThanOneExp with constant parameters (left_shift <= 0)."""
    return rounding_divide_by_pot(b, saturating_rounding_doubling_high_mul(b, x, i32(multiplier)), i32(-left_shift))


def float_to_nearest_i32(b: ir.IRBuilder, v: ir.Value, lo: float, hi: float) -> ir.Value:
    """round_half_even(clamp(v, lo, hi)) as i32, for |lo|, |hi| < 2**21: the magic-number trick
    (no fptosi, no libm, no rint builtin). NaN gives 0."""
    v = b.select(b.fcmp_unordered("uno", v, v), ir.Constant(F32, 0.0), v)
    v = b.select(b.fcmp_ordered("<", v, ir.Constant(F32, lo)), ir.Constant(F32, lo), v)
    v = b.select(b.fcmp_ordered(">", v, ir.Constant(F32, hi)), ir.Constant(F32, hi), v)
    return b.sub(b.bitcast(b.fadd(v, ir.Constant(F32, ROUND_MAGIC)), I32), i32(ROUND_MAGIC_BITS))


def requantize(b: ir.IRBuilder, module: ir.Module, attrs: dict, acc: ir.Value, channel: ir.Value,
               prefix: str) -> ir.Value:
    """The requantization of QConv/QMatMul: int32 accumulator -> output value (i32, clamped to
    act_min..act_max), per channel `channel` (i64). Tables are named from `prefix`."""
    y_zp, act_min, act_max = int(attrs["y_zero_point"]), int(attrs["act_min"]), int(attrs["act_max"])
    if attrs["requant"] == "fixed":
        mult = per_channel(module, b, f"{prefix}.multiplier", list(attrs["multiplier"]), channel)
        shift = per_channel(module, b, f"{prefix}.shift", list(attrs["shift"]), channel)
        y = b.add(multiply_by_quantized_multiplier(b, acc, mult, shift), i32(y_zp))
        return clamp_i32(b, y, act_min, act_max)
    scale = per_channel(module, b, f"{prefix}.scale", list(attrs["scale"]), channel, F32)
    v = b.fmul(b.sitofp(acc, F32), scale)
    return b.add(float_to_nearest_i32(b, v, float(act_min - y_zp), float(act_max - y_zp)), i32(y_zp))


# The bindings of a qconv / qmatmul-family spec in order, named by attrs "operands"; without it, the
# first len(inputs) of DEFAULT_OPERANDS. A zero point binding (1-D, the dtype of X / W) replaces the
# attribute of the same name, which is then 0 / [0] (dispatch.py: ConvInteger, MatMulInteger).
DEFAULT_OPERANDS = ("x", "w", "bias")
OPERAND_ROLES = ("x", "w", "bias", "x_zero_point", "w_zero_point")
NO_REQUANT = "none"   # requant mode of ConvInteger / MatMulInteger: the int32 sums are the result


@dataclass(frozen=True)
class QOperands:
    """What a QConv / QMatMul-family kernel binds: X, W, the output and the binding index of each
    operand ("x", "w", "bias", "x_zero_point", "w_zero_point")."""

    x: TensorType
    w: TensorType
    out: TensorType
    index: dict[str, int]
    types: dict[str, TensorType]

    @property
    def has_bias(self) -> bool:
        return "bias" in self.index

    @property
    def out_binding(self) -> int:
        return len(self.index)


def check_q_operands(spec, kind: str) -> QOperands:
    """The operands of a QConv/QMatMul-family kernel spec: X, W (, i32 bias, zero points) in, one
    output; X, W i8/u8, the output i8/u8, or i32 with requant "none". Raises naming the kernel when
    the spec is not like that."""
    roles = tuple(spec.attrs.get("operands", DEFAULT_OPERANDS[:len(spec.inputs)]))
    if (len(roles) != len(spec.inputs) or roles[:2] != ("x", "w") or len(set(roles)) != len(roles)
            or not set(roles) <= set(OPERAND_ROLES) or len(spec.outputs) != 1):
        raise ValueError(f"{kind} kernel {spec.name}: expects X, W (, bias, x_zero_point, w_zero_point) and one "
                         f"output, got operands {roles} for {len(spec.inputs)} inputs and {len(spec.outputs)} outputs")
    ops = QOperands(spec.inputs[0], spec.inputs[1], spec.outputs[0], {r: i for i, r in enumerate(roles)},
                    dict(zip(roles, spec.inputs)))
    out_ok = ops.out.dtype == DType.i32 if spec.attrs.get("requant") == NO_REQUANT else ops.out.dtype in QRANGE
    if ops.x.dtype not in QRANGE or ops.w.dtype not in QRANGE or not out_ok:
        raise ValueError(f"{kind} kernel {spec.name}: wants i8/u8 X, W and an i8/u8 output (i32 with requant "
                         f"{NO_REQUANT!r}), got {ops.x}, {ops.w} -> {ops.out} (requant {spec.attrs.get('requant')!r})")
    if "bias" in ops.types and ops.types["bias"].dtype != DType.i32:
        raise ValueError(f"{kind} kernel {spec.name}: the bias must be i32, got {ops.types['bias']}")
    for role in ("x_zero_point", "w_zero_point"):   # (their dtype: X's / W's before any packing)
        zp = ops.types.get(role)
        if zp is not None and (zp.dtype not in QRANGE or zp.rank != 1 or not zp.is_static):
            raise ValueError(f"{kind} kernel {spec.name}: {role} must be a static 1-D i8/u8 tensor, got {zp}")
    return ops


def zero_point(module: ir.Module, b: ir.IRBuilder, kb, ops: QOperands, attrs: dict, role: str, prefix: str,
               index: ir.Value) -> ir.Value:
    """The zero point `role` ("x_zero_point" or "w_zero_point") for channel / row `index` (i64), as
    i32: element `index` of the zero point binding when the kernel has one (element 0 when it holds
    one value), else the attribute (an int, or a per-channel list: a constant table)."""
    if role in ops.index:
        zp = ops.types[role]
        return load_q(b, kb.binding(ops.index[role]), index if int(zp.shape[0]) > 1 else const_i64(0), zp.dtype)
    values = attrs[role]
    return per_channel(module, b, f"{prefix}.{role}", list(values) if isinstance(values, (list, tuple)) else [values],
                       index)


def requantize_and_store(b: ir.IRBuilder, module: ir.Module, attrs: dict, acc: ir.Value, bias_buf: ir.Value | None,
                         channel: ir.Value, prefix: str, out_buf: ir.Value, out_index: ir.Value) -> None:
    """The epilogue of QConv/QMatMul: acc (+ bias[channel] when there is a bias binding),
    requantized for `channel` and stored as one byte at out_buf[out_index]; with requant "none"
    stored as the int32 it is."""
    if bias_buf is not None:
        acc = b.add(acc, load_q(b, bias_buf, channel, DType.i32))
    if attrs["requant"] == NO_REQUANT:
        b.store(acc, element_ptr(b, out_buf, out_index, I32), align=4)
        return
    store_q(b, requantize(b, module, attrs, acc, channel, prefix), out_buf, out_index)
