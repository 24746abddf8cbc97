"""One Expr step of the SPIR-V elementwise kernel in any dtype of scalars.py: `emit_step`.

The semantics are the CPU backend's (codegen/llvm/elementwise_typed.py, docs/ir.md): float steps
use math.py's f32 formulas; f64 steps are only those exact in double precision (F64_NATIVE;
math.py's approximations are single precision, so Exp, Pow, trig, ... on f64 are refused); integer
add, sub and mul wrap; Div truncates; Mod has the dividend's sign and FloorMod the divisor's; a zero divisor gives 0 and INT_MIN / -1 wraps to INT_MIN, so no
shader meets SPIR-V's undefined cases (a division by 0, or of INT_MIN by -1); a shift by the width
or more gives 0 (-1 for a negative signed right shift). Cast is onnxruntime's on x86-64: float ->
integer converts through 32 bits (64 for an 8-byte target) with NaN or out of range giving that
width's minimum, then wraps; anything -> bool is x != 0 (NaN -> true). Comparisons give bool;
And/Or/Xor/Not take bools; Where(cond, x, y)."""
from __future__ import annotations

import math
from typing import Callable

from iree_py.codegen.spirv.builder import KernelBuilder, Value
from iree_py.codegen.spirv.math import BINARY, UNARY, fmod
from iree_py.codegen.spirv.narrow import float_to_narrow_int, round_to_narrow
from iree_py.codegen.spirv.scalars import Scalar, scalar, wrap
from iree_py.ir.narrow_types import NARROW_FLOAT_DTYPES, NARROW_INT_DTYPES
from iree_py.ir.ops.elementwise import int_clip_bounds
from iree_py.ir.types import DType


class UnsupportedStep(ValueError):
    """A step this backend cannot compute (plan.py turns it into the node's CompileError)."""


F64_NATIVE = ("Add", "Sub", "Mul", "Div", "Neg", "Abs", "Min", "Max", "Relu", "Clip", "Sign", "Sqrt", "Mod",
              "FloorMod", "Floor", "Ceil", "IsNaN", "IsInf")
COMPARE = ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual")
_FLOAT_COMPARE = dict(zip(COMPARE, ("OpFOrdEqual", "OpFOrdLessThan", "OpFOrdLessThanEqual", "OpFOrdGreaterThan",
                                    "OpFOrdGreaterThanEqual")))
_SIGNED_COMPARE = dict(zip(COMPARE, ("OpIEqual", "OpSLessThan", "OpSLessThanEqual", "OpSGreaterThan",
                                     "OpSGreaterThanEqual")))
_UNSIGNED_COMPARE = dict(zip(COMPARE, ("OpIEqual", "OpULessThan", "OpULessThanEqual", "OpUGreaterThan",
                                       "OpUGreaterThanEqual")))


def compare(b: KernelBuilder, op: str, x: Value, y: Value, s: Scalar) -> Value:
    if s.dtype == DType.bool:  # as integers: false < true
        x, y, s = b.select(x, b.int(1), b.int(0)), b.select(y, b.int(1), b.int(0)), scalar(DType.i32)
    table = _FLOAT_COMPARE if s.is_float else _SIGNED_COMPARE if s.signed else _UNSIGNED_COMPARE
    return b.op(table[op], "bool", x, y)


# ------------------------------------------------------------------------------------ integers

def _less(b: KernelBuilder, x: Value, y: Value, s: Scalar) -> Value:
    return compare(b, "Less", x, y, s)


def _guarded_divide(b: KernelBuilder, x: Value, y: Value, s: Scalar, remainder: bool) -> Value:
    """x / y or x % y: y == 0 gives 0; a signed y == -1 gives -x (0 for the remainder)."""
    ty = x.ty
    by_zero = y.eq(0)
    by_minus_one = y.eq(-1) if s.signed else b.bool(False)
    unsafe = b.logical_or(by_zero, by_minus_one)
    safe = b.select(unsafe, b.const(1, ty), y)
    if remainder:
        r = b.op("OpSRem", ty, x, safe) if s.signed else _unsigned(b, "OpUMod", x, safe)
        return b.select(unsafe, b.const(0, ty), r)
    q = b.op("OpSDiv", ty, x, safe) if s.signed else _unsigned(b, "OpUDiv", x, safe)
    q = b.select(by_minus_one, -x, q)  # -INT_MIN wraps to INT_MIN
    return b.select(by_zero, b.const(0, ty), q)


def _unsigned(b: KernelBuilder, opname: str, x: Value, y: Value) -> Value:
    """OpUDiv / OpUMod: SPIR-V wants an unsigned result type, so the operands (held in the signed
    type of their width) are bitcast to the unsigned one and the result back."""
    unsigned = {"i32": "u32", "i64": "u64"}[x.ty]
    ux, uy = b.op("OpBitcast", unsigned, x), b.op("OpBitcast", unsigned, y)
    return b.op("OpBitcast", x.ty, b.op(opname, unsigned, ux, uy))


def _floor_mod(b: KernelBuilder, x: Value, y: Value, s: Scalar) -> Value:
    r = _guarded_divide(b, x, y, s, remainder=True)
    if not s.signed:
        return r
    differ = b.op("OpBitwiseXor", r.ty, r, y) < 0  # the divisor's sign (lavapipe's OpSMod gave the dividend's)
    return b.select(b.logical_and(r.ne(0), differ), r + y, r)


def _shift(b: KernelBuilder, x: Value, amount: Value, s: Scalar, left: bool) -> Value:
    ty = x.ty
    too_far = b.op("OpUGreaterThanEqual", "bool", amount, b.const(s.bits, ty))
    safe = b.select(too_far, b.const(0, ty), amount)
    if left:
        return b.select(too_far, b.const(0, ty), b.op("OpShiftLeftLogical", ty, x, safe))
    if not s.signed:
        return b.select(too_far, b.const(0, ty), b.op("OpShiftRightLogical", ty, x, safe))
    return b.op("OpShiftRightArithmetic", ty, x, b.select(too_far, b.const(s.bits - 1, ty), safe))


def _pow(b: KernelBuilder, x: Value, y: Value, s: Scalar) -> Value:
    """x ** y by square-and-multiply over every bit of y (wrapping); a negative y gives 1 for x = 1,
    +-1 for x = -1 and 0 otherwise (the truncated 1 / x ** -y)."""
    ty = x.ty
    one, zero = b.const(1, ty), b.const(0, ty)
    exponent = b.variable(ty, b.select(y < 0, zero, y) if s.signed else y)
    base, result = b.variable(ty, x), b.variable(ty, one)
    with b.loop(0, 64 if ty == "i64" else 32):
        e = exponent.get()
        odd = b.op("OpBitwiseAnd", ty, e, one).ne(0)
        result.set(b.select(odd, result.get() * base.get(), result.get()))
        base.set(base.get() * base.get())
        exponent.set(b.op("OpShiftRightLogical", ty, e, one))
    value = result.get()
    if not s.signed:
        return value
    odd_y = b.op("OpBitwiseAnd", ty, y, one).ne(0)
    negative = b.select(x.eq(1), one, b.select(x.eq(-1), b.select(odd_y, b.const(-1, ty), one), zero))
    return b.select(y < 0, negative, value)


def _min_max(b: KernelBuilder, x: Value, y: Value, s: Scalar, minimum: bool) -> Value:
    return b.select(_less(b, y, x, s), y, x) if minimum else b.select(_less(b, x, y, s), y, x)


_INT_BINARY: dict[str, Callable[[KernelBuilder, Value, Value, Scalar], Value]] = {
    "Add": lambda b, x, y, s: x + y,
    "Sub": lambda b, x, y, s: x - y,
    "Mul": lambda b, x, y, s: x * y,
    "Div": lambda b, x, y, s: _guarded_divide(b, x, y, s, remainder=False),
    "Mod": lambda b, x, y, s: _guarded_divide(b, x, y, s, remainder=True),
    "FloorMod": _floor_mod,
    "Min": lambda b, x, y, s: _min_max(b, x, y, s, minimum=True),
    "Max": lambda b, x, y, s: _min_max(b, x, y, s, minimum=False),
    "Pow": _pow,
    "ShiftLeft": lambda b, x, y, s: _shift(b, x, y, s, left=True),
    "ShiftRight": lambda b, x, y, s: _shift(b, x, y, s, left=False),
    "BitwiseAnd": lambda b, x, y, s: b.op("OpBitwiseAnd", x.ty, x, y),
    "BitwiseOr": lambda b, x, y, s: b.op("OpBitwiseOr", x.ty, x, y),
    "BitwiseXor": lambda b, x, y, s: b.op("OpBitwiseXor", x.ty, x, y),
}


def _int_clip(b: KernelBuilder, x: Value, attrs: dict[str, float], s: Scalar) -> Value:
    lo, hi = int_clip_bounds(s.dtype.numpy, attrs.get("min", -math.inf), attrs.get("max", math.inf))
    low, high = b.const(lo, x.ty), b.const(hi, x.ty)
    x = b.select(_less(b, x, low, s), low, x)
    return b.select(_less(b, high, x, s), high, x)


def _int_unary(b: KernelBuilder, op: str, x: Value, attrs: dict[str, float], s: Scalar) -> Value:
    zero = b.const(0, x.ty)
    if op == "Neg":
        return -x
    if op == "Abs":
        return b.select(x < 0, -x, x) if s.signed else x
    if op == "Relu":
        return b.select(x < 0, zero, x) if s.signed else x
    if op == "Sign":
        positive = b.select(x.ne(0), b.const(1, x.ty), zero)
        return b.select(x < 0, b.const(-1, x.ty), positive) if s.signed else positive
    if op == "Clip":
        return _int_clip(b, x, attrs, s)
    raise UnsupportedStep(f"{op} on {s.dtype.value}")


# ---------------------------------------------------------------------------------------- floats

def _float_floor_mod(b: KernelBuilder, x: Value, y: Value) -> Value:
    """Python's x % y from C fmod: y added where the signs differ; a zero takes y's sign."""
    r = fmod(b, x, y)
    differ = b.op("OpLogicalNotEqual", "bool", r < 0.0, y < 0.0)
    r = b.select(b.logical_and(r.ne(0.0), differ), r + y, r)
    return b.select(r.eq(0.0), b.select(y < 0.0, b.const(-0.0, r.ty), b.const(0.0, r.ty)), r)


def _float_step(b: KernelBuilder, op: str, attrs: dict[str, float], args: list[Value]) -> Value:
    if args[0].ty == "f64" and op not in F64_NATIVE:
        raise UnsupportedStep(f"{op} on f64 (the spirv backend computes {', '.join(F64_NATIVE)} in double precision)")
    if op == "FloorMod":
        return _float_floor_mod(b, args[0], args[1])
    if op == "IsNaN":
        return b.op("OpIsNan", "bool", args[0])
    if op == "IsInf":
        x = args[0]
        result = b.bool(False)
        if attrs.get("detect_positive", 1.0):
            result = b.logical_or(result, x.eq(math.inf))
        if attrs.get("detect_negative", 1.0):
            result = b.logical_or(result, x.eq(-math.inf))
        return result
    if len(args) == 2 and op in BINARY:
        return BINARY[op](b, args[0], args[1])
    if len(args) == 1 and op in UNARY:
        return UNARY[op](b, args[0], attrs)
    raise UnsupportedStep(f"{op} on floats (the spirv backend computes {', '.join(sorted({*UNARY, *BINARY}))})")


# ------------------------------------------------------------------------------------------ Cast

def _float_to_int(b: KernelBuilder, x: Value, width: int) -> Value:
    """Truncation toward zero into i32/i64; NaN or out of range gives the minimum (x86's cvtt*2si)."""
    ty = "i64" if width == 64 else "i32"
    limit = 2.0 ** (width - 1)
    inside = b.logical_and(x > -limit - 1.0, x < limit)  # false for NaN
    converted = b.op("OpConvertFToS", ty, b.select(inside, x, b.const(0.0, x.ty)))
    return b.select(inside, converted, b.const(-(1 << (width - 1)), ty))


def _float_to_integer(b: KernelBuilder, x: Value, dst: Scalar) -> Value:
    width = 64 if dst.bits == 64 else 32
    if dst.signed or dst.bits < width:
        return wrap(b, _float_to_int(b, x, width), dst)
    top = 2.0 ** (width - 1)  # u32/u64: the upper half converts from x - 2**(width-1)
    sign_bit = b.const(1 << (width - 1), dst.register)
    high = b.op("OpBitwiseXor", dst.register, _float_to_int(b, x - top, width), sign_bit)
    return b.select(x >= top, high, _float_to_int(b, x, width))


def _int_to_int(b: KernelBuilder, x: Value, src: Scalar, dst: Scalar) -> Value:
    if src.register != dst.register:
        if dst.register == "i64" and not src.signed and src.bits == 32:  # u32: zero-extended
            x = b.op("OpBitcast", "i64", b.op("OpUConvert", "u64", b.op("OpBitcast", "u32", x)))
        else:  # a sign extension (a narrow register is already extended), or a truncation
            x = b.op("OpSConvert", dst.register, x)
    return wrap(b, x, dst)


def emit_cast(b: KernelBuilder, x: Value, src: Scalar, dst: Scalar) -> Value:
    """A narrow target (narrow.py) rounds (floats, f32 first) or wraps (integers; a float source
    rounds half away from zero first) the wide cast's result."""
    if dst.dtype in NARROW_INT_DTYPES and src.is_float:
        return wrap(b, float_to_narrow_int(b, x), dst)
    value = _wide_cast(b, x, src, dst)
    if dst.dtype in NARROW_FLOAT_DTYPES and src.dtype != dst.dtype:
        return round_to_narrow(b, value, dst.dtype)
    return value


def _wide_cast(b: KernelBuilder, x: Value, src: Scalar, dst: Scalar) -> Value:
    if dst.dtype == DType.bool:
        if src.is_float:
            return b.op("OpFUnordNotEqual", "bool", x, b.const(0.0, x.ty))
        return x if src.dtype == DType.bool else x.ne(0)
    if src.dtype == DType.bool:
        return b.select(x, b.const(1, dst.register), b.const(0, dst.register))
    if dst.is_float:
        if src.is_float:  # f64 <-> f32 (narrow floats and f16 are f32 in registers)
            return x if src.register == dst.register else b.op("OpFConvert", dst.register, x)
        signed = src.signed or src.bits < 32  # a narrow register holds the exact value
        return b.op("OpConvertSToF" if signed else "OpConvertUToF", dst.register, x)
    if src.is_float:
        return _float_to_integer(b, x, dst)
    return _int_to_int(b, x, src, dst)


# ------------------------------------------------------------------------------------------ step

def emit_step(b: KernelBuilder, op: str, attrs: dict[str, float], args: list[Value], arg_types: list[Scalar],
              dst: Scalar) -> Value:
    """The value of one Expr step whose result is of `dst`'s dtype."""
    src = arg_types[0]
    if op == "Cast":
        return emit_cast(b, args[0], src, dst)
    if op == "Where":
        return b.select(args[0], args[1], args[2])
    if op in COMPARE:
        return compare(b, op, args[0], args[1], src)
    if op in ("And", "Or", "Xor", "Not") and src.dtype == DType.bool:
        if op == "Not":
            return b.logical_not(args[0])
        return b.op({"And": "OpLogicalAnd", "Or": "OpLogicalOr", "Xor": "OpLogicalNotEqual"}[op], "bool", *args)
    if src.is_float:
        return _float_step(b, op, attrs, args)
    if src.is_int and len(args) == 2 and op in _INT_BINARY:
        return wrap(b, _INT_BINARY[op](b, args[0], args[1], src), src)
    if src.is_int and len(args) == 1:
        return wrap(b, _int_unary(b, op, args[0], attrs, src), src)
    raise UnsupportedStep(f"{op} on {src.dtype.value}")
