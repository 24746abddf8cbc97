"""Element values of every DType in LLVM registers and memory, for scalars and vectors alike.

In registers: f32 is `float`, f64 `double`, integers `iN` (signedness lives in the DType, not the
LLVM type: u8 and i8 are both i8), bool is `i1`, and f16 is a `float` (f16 math computes in f32;
the value rounds to f16 when stored or Cast to f16, as onnxruntime's CPU provider computes f16
chains in f32 and casts back once).
In memory: bool is one byte (0 or 1), f16 its 16 IEEE bits. f16 <-> f32 conversions are integer bit
manipulation (no libcalls, no F16C/Zfh needed), round to nearest even. The narrow storage types
(bf16, float8, f4e2m1: a `float` in registers; i4/u4/i2/u2: an i8) convert in narrow_values.py.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.llvm.common import ALIGN, element_ptr
from iree_py.codegen.llvm.narrow_values import (f32_to_narrow_bits, load_narrow_int, narrow_bits_to_f32,
                                                store_narrow_int)
from iree_py.ir.narrow_types import NARROW_FLOAT_DTYPES, NARROW_INT_BITS, NARROW_INT_DTYPES
from iree_py.ir.types import DType

F32 = ir.FloatType()
F64 = ir.DoubleType()
I1 = ir.IntType(1)

_REGISTER: dict[DType, ir.Type] = {DType.f32: F32, DType.f16: F32, DType.f64: F64, DType.bool: I1,
                                   **{d: F32 for d in NARROW_FLOAT_DTYPES}}  # narrow_values.py
_MEMORY: dict[DType, ir.Type] = {DType.f16: ir.IntType(16), DType.bool: ir.IntType(8),
                                 **{d: ir.IntType(8 * d.itemsize) for d in NARROW_FLOAT_DTYPES}}


def is_float(dtype: DType) -> bool:
    return dtype.numpy.kind == "f" or dtype in NARROW_FLOAT_DTYPES


def is_signed(dtype: DType) -> bool:
    return dtype.numpy.kind in "if" or dtype in NARROW_FLOAT_DTYPES or NARROW_INT_BITS.get(dtype, (0, False))[1]


def bits(dtype: DType) -> int:
    return 8 * dtype.itemsize


def with_lanes(element: ir.Type, like: ir.Type | int) -> ir.Type:
    """`element`, or a vector of it with as many lanes as `like` (a type, or a lane count; 1: scalar)."""
    lanes = like.count if isinstance(like, ir.VectorType) else (like if isinstance(like, int) else 1)
    return ir.VectorType(element, lanes) if lanes > 1 else element


def register_type(dtype: DType, lanes: int = 1) -> ir.Type:
    element = _REGISTER.get(dtype) or ir.IntType(bits(dtype))
    return with_lanes(element, lanes)


def memory_type(dtype: DType, lanes: int = 1) -> ir.Type:
    element = _MEMORY.get(dtype) or _REGISTER.get(dtype) or ir.IntType(bits(dtype))
    return with_lanes(element, lanes)


def const(value: float | int, ty: ir.Type) -> ir.Constant:
    """A constant of scalar or vector type `ty` (every lane the same)."""
    element = ty.element if isinstance(ty, ir.VectorType) else ty
    item = float(value) if isinstance(element, (ir.FloatType, ir.DoubleType)) else int(value)
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [item] * ty.count)
    return ir.Constant(ty, item)


def int_like(ty: ir.Type, width: int) -> ir.Type:
    return with_lanes(ir.IntType(width), ty)


def float_like(ty: ir.Type, dtype: DType) -> ir.Type:
    return with_lanes(register_type(dtype), ty)


# ------------------------------------------------------------------------------------ f16 bits

def f16_bits_to_f32(b: ir.IRBuilder, h: ir.Value) -> ir.Value:
    """16 IEEE half bits (i16 or vector) -> the exact float."""
    i32 = int_like(h.type, 32)
    u = b.zext(h, i32)
    sign = b.shl(b.and_(u, const(0x8000, i32)), const(16, i32))
    shifted = b.shl(b.and_(u, const(0x7FFF, i32)), const(13, i32))  # exponent/mantissa in place
    exponent = b.and_(shifted, const(0x7C00 << 13, i32))
    normal = b.add(shifted, const((127 - 15) << 23, i32))
    special = b.add(normal, const((128 - 16) << 23, i32))  # inf/NaN: exponent all ones
    f32 = with_lanes(F32, h.type)
    # zero/denormal: treat as a normal of exponent -14 and subtract the implicit one (2**-14)
    denorm = b.fsub(b.bitcast(b.add(normal, const(1 << 23, i32)), f32), b.bitcast(const(113 << 23, i32), f32))
    value = b.select(b.icmp_unsigned("==", exponent, const(0x7C00 << 13, i32)), special, normal)
    value = b.bitcast(value, f32)
    value = b.select(b.icmp_unsigned("==", exponent, const(0, i32)), denorm, value)
    return b.bitcast(b.or_(b.bitcast(value, i32), sign), f32)


def f32_to_f16_bits(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """float (or vector) -> 16 half bits, round to nearest even; overflow gives inf, NaN a quiet NaN."""
    i32 = int_like(x.type, 32)
    u = b.bitcast(x, i32)
    sign = b.and_(u, const(0x80000000, i32))
    u = b.xor(u, sign)
    big = b.icmp_unsigned(">=", u, const((127 + 16) << 23, i32))
    inf_or_nan = b.select(b.icmp_unsigned(">", u, const(255 << 23, i32)), const(0x7E00, i32), const(0x7C00, i32))
    # below the smallest normal half: let the FPU round by adding a magic number
    magic = (127 - 15 + 23 - 10 + 1) << 23
    f32 = x.type
    summed = b.fadd(b.bitcast(u, f32), b.bitcast(const(magic, i32), f32))
    denorm = b.sub(b.bitcast(summed, i32), const(magic, i32))
    odd = b.and_(b.lshr(u, const(13, i32)), const(1, i32))
    rounded = b.add(b.add(u, const(((15 - 127) << 23) + 0xFFF, i32)), odd)
    normal = b.lshr(rounded, const(13, i32))
    o = b.select(b.icmp_unsigned("<", u, const(113 << 23, i32)), denorm, normal)
    o = b.select(big, inf_or_nan, o)
    o = b.or_(o, b.lshr(sign, const(16, i32)))
    return b.trunc(o, int_like(x.type, 16))


def round_to_f16(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """A float rounded to the nearest f16 value (still a float)."""
    return f16_bits_to_f32(b, f32_to_f16_bits(b, x))


# ---------------------------------------------------------------------------------- load/store

def _align(dtype: DType) -> int:
    return min(ALIGN, dtype.itemsize)


def load_typed(b: ir.IRBuilder, dtype: DType, base: ir.Value, index: ir.Value, lanes: int = 1) -> ir.Value:
    """Element `index` of a `dtype` buffer (`lanes` of them from there) as register value(s)."""
    mem = memory_type(dtype, lanes)
    raw = b.load(element_ptr(b, base, index, memory_type(dtype)), typ=mem, align=_align(dtype))
    if dtype == DType.f16:
        return f16_bits_to_f32(b, raw)
    if dtype == DType.bool:
        return b.icmp_unsigned("!=", raw, const(0, mem))
    if dtype in NARROW_FLOAT_DTYPES:
        return narrow_bits_to_f32(b, raw, dtype)
    if dtype in NARROW_INT_DTYPES:
        return load_narrow_int(b, raw, dtype)
    return raw


def store_typed(b: ir.IRBuilder, dtype: DType, value: ir.Value, base: ir.Value, index: ir.Value) -> None:
    if dtype == DType.f16:
        value = f32_to_f16_bits(b, value)
    elif dtype == DType.bool:
        value = b.zext(value, int_like(value.type, 8))
    elif dtype in NARROW_FLOAT_DTYPES:
        value = f32_to_narrow_bits(b, value, dtype)
    elif dtype in NARROW_INT_DTYPES:
        value = store_narrow_int(b, value, dtype)
    b.store(value, element_ptr(b, base, index, memory_type(dtype)), align=_align(dtype))
