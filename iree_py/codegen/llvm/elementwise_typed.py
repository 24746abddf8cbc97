"""One Expr step in any dtype: `emit_step(b, op, attrs, args, arg_dtypes, dtype)`.

Float steps in f32 use math.py's emitters. f16 steps do the same in f32 without rounding in
between: an f16 value rounds when it is stored or Cast to f16 (onnxruntime's CPU provider also runs
f16 elementwise chains in f32, with one Cast back at the end). f64 steps exist only for the ops in
F64_NATIVE (exact in double precision), in math_f64.F64_MATH (Exp, Log, Reciprocal: fdlibm,
< 1 ulp) and Pow (math_pow_f64.py); math.py's approximations are single precision, so trig/activations/... refuse f64. Integer steps follow docs/ir.md: add, sub and mul wrap; Div
truncates; Mod has the dividend's sign and FloorMod the divisor's; a zero divisor gives 0 (and
INT_MIN / -1 wraps to INT_MIN), so nothing traps. Cast, comparisons, logic, Where, IsNaN/IsInf and
shifts are here too. Register types: typed_values.py.
"""
from __future__ import annotations

from typing import Callable

from llvmlite import ir

from iree_py.codegen.llvm.math import emit_binary, emit_unary, fmod
from iree_py.codegen.llvm.math_f64 import F64_MATH
from iree_py.codegen.llvm.math_pow_f64 import pow_f64, square_and_multiply
from iree_py.codegen.llvm.narrow_values import (float_to_narrow_int, load_narrow_int, round_to_narrow,
                                                store_narrow_int)
from iree_py.codegen.llvm.typed_values import (bits, const, float_like, int_like, is_float, is_signed,
                                               round_to_f16)
from iree_py.ir.narrow_types import NARROW_FLOAT_DTYPES, NARROW_INT_DTYPES
from iree_py.ir.ops.elementwise import int_clip_bounds
from iree_py.ir.types import DType

F64_NATIVE = ("Add", "Sub", "Mul", "Div", "Neg", "Abs", "Min", "Max", "Relu", "Clip", "Sign", "Sqrt", "Mod",
              "FloorMod", "Floor", "Ceil")
FLOAT_COMPARE = {"Equal": "==", "Less": "<", "LessOrEqual": "<=", "Greater": ">", "GreaterOrEqual": ">="}
TWO_POW_52 = 4503599627370496.0


class StepError(ValueError):
    pass


# ------------------------------------------------------------------------------------- helpers

def _intrinsic(b: ir.IRBuilder, name: str, x: ir.Value) -> ir.Value:
    ty = x.type
    elem = ty.element if isinstance(ty, ir.VectorType) else ty
    suffix = "f64" if isinstance(elem, ir.DoubleType) else "f32"
    if isinstance(ty, ir.VectorType):
        suffix = f"v{ty.count}{suffix}"
    full = f"llvm.{name}.{suffix}"
    module = b.block.function.module
    fn = module.globals.get(full) or ir.Function(module, ir.FunctionType(ty, [ty]), name=full)
    return b.call(fn, [x])


def _fabs(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _intrinsic(b, "fabs", x)


def _copysign(b: ir.IRBuilder, magnitude: ir.Value, sign_of: ir.Value) -> ir.Value:
    width = 64 if isinstance(_element(magnitude.type), ir.DoubleType) else 32
    ity = int_like(magnitude.type, width)
    mask = 1 << (width - 1)
    sign = b.and_(b.bitcast(sign_of, ity), const(mask, ity))
    rest = b.and_(b.bitcast(magnitude, ity), const(mask - 1, ity))
    return b.bitcast(b.or_(rest, sign), magnitude.type)


def _element(ty: ir.Type) -> ir.Type:
    return ty.element if isinstance(ty, ir.VectorType) else ty


def _trunc_f64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Round toward zero through i64 (|x| < 2**52 only; larger doubles are already integers)."""
    i64 = int_like(x.type, 64)
    t = b.sitofp(b.fptosi(x, i64), x.type)
    t = _copysign(b, t, x)
    return b.select(b.fcmp_ordered("<", _fabs(b, x), const(TWO_POW_52, x.type)), t, x)


def _floor_f64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    t = _trunc_f64(b, x)
    return b.select(b.fcmp_ordered(">", t, x), b.fsub(t, const(1.0, x.type)), t)


def _ceil_f64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    t = _trunc_f64(b, x)
    return b.select(b.fcmp_ordered("<", t, x), b.fadd(t, const(1.0, x.type)), t)


def _fmod_f64(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """x - trunc(x / y) * y with the dividend's sign; fmod(finite, inf) = x; NaN otherwise as C."""
    ty = x.type
    r = b.fsub(x, b.fmul(_trunc_f64(b, b.fdiv(x, y)), y))
    ay = _fabs(b, y)
    wrong_sign = b.fcmp_ordered("<", b.fmul(r, x), const(0.0, ty))
    r = b.select(wrong_sign, b.fadd(r, _copysign(b, ay, x)), r)
    r = _copysign(b, r, x)
    finite_x = b.fcmp_ordered("<", _fabs(b, x), const(float("inf"), ty))
    infinite_y = b.fcmp_ordered("==", ay, const(float("inf"), ty))
    return b.select(b.and_(finite_x, infinite_y), x, r)


def _float_floor_mod(b: ir.IRBuilder, r: ir.Value, y: ir.Value) -> ir.Value:
    """Python's x % y from r = fmod(x, y): add y when the signs differ; a zero takes y's sign."""
    zero = const(0.0, r.type)
    differ = b.xor(b.fcmp_ordered("<", r, zero), b.fcmp_ordered("<", y, zero))
    fix = b.and_(b.fcmp_ordered("!=", r, zero), differ)
    r = b.select(fix, b.fadd(r, y), r)
    return b.select(b.fcmp_ordered("==", r, zero), _copysign(b, zero, y), r)


def _sign_float(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    one, zero = const(1.0, x.type), const(0.0, x.type)
    s = b.select(b.fcmp_ordered(">", x, zero), one, zero)
    s = b.select(b.fcmp_ordered("<", x, zero), const(-1.0, x.type), s)
    return b.select(b.fcmp_unordered("uno", x, x), x, s)


def _fmin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.fcmp_ordered("<", y, x), y, x)


def _fmax(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.fcmp_ordered("<", x, y), y, x)


# --------------------------------------------------------------------------------------- f64

def _emit_f64_native(b: ir.IRBuilder, op: str, attrs: dict[str, float], args: list[ir.Value]) -> ir.Value:
    x = args[0]
    ty = x.type
    zero = const(0.0, ty)
    if op in ("Add", "Sub", "Mul", "Div"):
        return {"Add": b.fadd, "Sub": b.fsub, "Mul": b.fmul, "Div": b.fdiv}[op](x, args[1])
    if op == "Mod":
        return _fmod_f64(b, x, args[1])
    if op == "FloorMod":
        return _float_floor_mod(b, _fmod_f64(b, x, args[1]), args[1])
    if op in ("Min", "Max"):
        return (_fmin if op == "Min" else _fmax)(b, x, args[1])
    unary: dict[str, Callable[[], ir.Value]] = {
        "Neg": lambda: b.fneg(x),
        "Abs": lambda: _fabs(b, x),
        "Relu": lambda: b.select(b.fcmp_ordered("<", x, zero), zero, x),
        "Clip": lambda: _fmin(b, _fmax(b, x, const(attrs.get("min", float("-inf")), ty)),
                              const(attrs.get("max", float("inf")), ty)),
        "Sign": lambda: _sign_float(b, x),
        "Sqrt": lambda: _intrinsic(b, "sqrt", x),
        "Floor": lambda: _floor_f64(b, x),
        "Ceil": lambda: _ceil_f64(b, x),
    }
    return unary[op]()


def _emit_float(b: ir.IRBuilder, op: str, attrs: dict[str, float], args: list[ir.Value], dtype: DType) -> ir.Value:
    if dtype == DType.f64 and op in F64_NATIVE:
        return _emit_f64_native(b, op, attrs, args)
    if dtype == DType.f64 and op in F64_MATH:  # f64math: fdlibm exp/log (math_f64.py)
        return F64_MATH[op](b, args[0])
    if dtype == DType.f64 and op == "Pow":  # exact for integral exponents (math_pow_f64.py)
        return pow_f64(b, args[0], args[1])
    if dtype == DType.f64:
        raise StepError(f"{op} has no f64 kernel (its approximation is single precision)")
    if op == "FloorMod":
        result = _float_floor_mod(b, fmod(b, args[0], args[1]), args[1])
    elif len(args) == 2:
        result = emit_binary(b, op, args[0], args[1])
    else:
        result = emit_unary(b, op, attrs, args[0])
    return result


# ----------------------------------------------------------------------------------- integers

def _guarded_divide(b: ir.IRBuilder, x: ir.Value, y: ir.Value, signed: bool, remainder: bool) -> ir.Value:
    """x / y or x % y without traps: y == 0 gives 0; signed y == -1 gives -x (0 for the remainder)."""
    ty = x.type
    zero, one = const(0, ty), const(1, ty)
    by_zero = b.icmp_unsigned("==", y, zero)
    by_minus_one = b.icmp_signed("==", y, const(-1, ty)) if signed else None
    unsafe = b.or_(by_zero, by_minus_one) if signed else by_zero
    safe_y = b.select(unsafe, one, y)
    if remainder:
        r = b.srem(x, safe_y) if signed else b.urem(x, safe_y)
        return b.select(unsafe, zero, r)
    q = b.sdiv(x, safe_y) if signed else b.udiv(x, safe_y)
    if signed:
        q = b.select(by_minus_one, b.sub(zero, x), q)
    return b.select(by_zero, zero, q)


def _icmp(b: ir.IRBuilder, signed: bool, pred: str, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.icmp_signed(pred, x, y) if signed else b.icmp_unsigned(pred, x, y)


def _shift(b: ir.IRBuilder, x: ir.Value, amount: ir.Value, left: bool, signed: bool, width: int) -> ir.Value:
    """Shifts by a negative amount or by >= the width give 0 (a right shift of a negative signed
    value: -1); right shifts of signed types are arithmetic."""
    ty = x.type
    too_far = b.icmp_unsigned(">=", amount, const(width, ty))
    safe = b.select(too_far, const(0, ty), amount)
    if left:
        return b.select(too_far, const(0, ty), b.shl(x, safe))
    if not signed:
        return b.select(too_far, const(0, ty), b.lshr(x, safe))
    return b.ashr(x, b.select(too_far, const(width - 1, ty), safe))


def _emit_int(b: ir.IRBuilder, op: str, attrs: dict[str, float], args: list[ir.Value], dtype: DType) -> ir.Value:
    x = args[0]
    ty = x.type
    signed = is_signed(dtype)
    zero = const(0, ty)
    if len(args) == 2:
        y = args[1]
        binary: dict[str, Callable[[], ir.Value]] = {
            "Add": lambda: b.add(x, y),
            "Sub": lambda: b.sub(x, y),
            "Mul": lambda: b.mul(x, y),
            "Div": lambda: _guarded_divide(b, x, y, signed, remainder=False),
            "Mod": lambda: _guarded_divide(b, x, y, signed, remainder=True),
            "FloorMod": lambda: _int_floor_mod(b, x, y, signed),
            "Min": lambda: b.select(_icmp(b, signed, "<", y, x), y, x),
            "Max": lambda: b.select(_icmp(b, signed, "<", x, y), y, x),
            "Pow": lambda: _int_pow(b, x, y, signed, bits(dtype)),
            "ShiftLeft": lambda: _shift(b, x, y, True, signed, bits(dtype)),
            "ShiftRight": lambda: _shift(b, x, y, False, signed, bits(dtype)),
            "BitwiseAnd": lambda: b.and_(x, y),
            "BitwiseOr": lambda: b.or_(x, y),
            "BitwiseXor": lambda: b.xor(x, y),
        }
        if op not in binary:
            raise StepError(f"{op} is not supported on {dtype.value}")
        return binary[op]()
    unary: dict[str, Callable[[], ir.Value]] = {
        "Neg": lambda: b.sub(zero, x),
        "Abs": lambda: b.select(b.icmp_signed("<", x, zero), b.sub(zero, x), x) if signed else x,
        "Relu": lambda: b.select(b.icmp_signed("<", x, zero), zero, x) if signed else x,
        "Sign": lambda: b.sub(b.zext(_icmp(b, signed, ">", x, zero), ty), b.zext(_icmp(b, signed, "<", x, zero), ty)),
        "Clip": lambda: _int_clip(b, x, attrs, dtype),
    }
    if op not in unary:
        raise StepError(f"{op} is not supported on {dtype.value}")
    return unary[op]()


def _int_pow(b: ir.IRBuilder, x: ir.Value, y: ir.Value, signed: bool, width: int) -> ir.Value:
    """x ** y by square-and-multiply over every bit of y (wrapping); a negative y gives 1 for
    x = 1, +-1 for x = -1 and 0 otherwise (the truncated 1 / x ** -y)."""
    ty = x.type
    zero, one = const(0, ty), const(1, ty)
    e = b.select(b.icmp_signed("<", y, zero), zero, y) if signed else y
    result = square_and_multiply(b, x, e, width, one, b.mul)
    if not signed:
        return result
    odd = b.icmp_unsigned("!=", b.and_(y, one), zero)
    minus_one = b.select(odd, const(-1, ty), one)
    negative = b.select(b.icmp_signed("==", x, one), one,
                        b.select(b.icmp_signed("==", x, const(-1, ty)), minus_one, zero))
    return b.select(b.icmp_signed("<", y, zero), negative, result)


def _int_floor_mod(b: ir.IRBuilder, x: ir.Value, y: ir.Value, signed: bool) -> ir.Value:
    r = _guarded_divide(b, x, y, signed, remainder=True)
    if not signed:
        return r
    zero = const(0, x.type)
    fix = b.and_(b.icmp_signed("!=", r, zero), b.icmp_signed("<", b.xor(r, y), zero))
    return b.select(fix, b.add(r, y), r)


def _int_clip(b: ir.IRBuilder, x: ir.Value, attrs: dict[str, float], dtype: DType) -> ir.Value:
    lo, hi = int_clip_bounds(dtype.numpy, attrs.get("min", float("-inf")), attrs.get("max", float("inf")))
    signed = is_signed(dtype)
    lo_c, hi_c = const(lo, x.type), const(hi, x.type)
    x = b.select(_icmp(b, signed, "<", x, lo_c), lo_c, x)
    return b.select(_icmp(b, signed, "<", hi_c, x), hi_c, x)


# -------------------------------------------------------------------------------------- Cast

def _x86_convert(b: ir.IRBuilder, x: ir.Value, wide_bits: int) -> ir.Value:
    """Truncate toward zero into i32/i64; NaN or out of range gives the minimum (x86's cvtt*2si)."""
    ty = x.type
    wide = int_like(ty, wide_bits)
    limit = 2.0 ** (wide_bits - 1)
    inside = b.and_(b.fcmp_ordered(">", x, const(-limit - 1.0, ty)), b.fcmp_ordered("<", x, const(limit, ty)))
    return b.select(inside, b.fptosi(x, wide), const(-(1 << (wide_bits - 1)), wide))


def emit_cast(b: ir.IRBuilder, x: ir.Value, src: DType, dst: DType) -> ir.Value:
    """ONNX Cast as onnxruntime does it on x86-64 (ir/ops/cast.py:cast_array, docs/ir.md): float ->
    integer goes through a 32-bit (64-bit for 8-byte targets) conversion whose out-of-range/NaN
    result is the minimum, then wraps; integers wrap; anything -> bool is x != 0 (NaN -> true).
    A narrow target (bf16, float8, 4-/2-bit; narrow_values.py) rounds or wraps the result."""
    if dst in NARROW_INT_DTYPES and is_float(src):
        return float_to_narrow_int(b, x, dst)
    value = _emit_wide_cast(b, x, src, dst)
    if src == dst:
        return value
    if dst in NARROW_FLOAT_DTYPES:
        return round_to_narrow(b, value, dst)
    if dst in NARROW_INT_DTYPES:
        return load_narrow_int(b, store_narrow_int(b, value, dst), dst)
    return value


def _emit_wide_cast(b: ir.IRBuilder, x: ir.Value, src: DType, dst: DType) -> ir.Value:
    if src == dst:
        return x
    ty = x.type
    if dst == DType.bool:
        if is_float(src):
            return b.fcmp_unordered("!=", x, const(0.0, ty))
        return b.icmp_unsigned("!=", x, const(0, ty))
    if is_float(dst):
        target = float_like(ty, dst)
        if is_float(src):
            if src == DType.f64:
                value = b.fptrunc(x, target) if target != ty else x
            else:
                value = b.fpext(x, target) if target != ty else x
        elif is_signed(src) and src != DType.bool:
            value = b.sitofp(x, target)
        else:
            value = b.uitofp(x, target)
        return round_to_f16(b, value) if dst == DType.f16 else value
    width = bits(dst)
    if is_float(src):
        wide_bits = 64 if width == 64 or (src, dst) == (DType.f16, DType.u32) else 32
        if dst in (DType.u32, DType.u64) and wide_bits == width:
            top = 2.0 ** (wide_bits - 1)
            high = b.fcmp_ordered(">=", x, const(top, ty))
            high_part = b.xor(_x86_convert(b, b.fsub(x, const(top, ty)), wide_bits), const(1 << (wide_bits - 1),
                                                                                           int_like(ty, wide_bits)))
            return b.select(high, high_part, _x86_convert(b, x, wide_bits))
        value = _x86_convert(b, x, wide_bits)
        return b.trunc(value, int_like(ty, width)) if width < wide_bits else value
    target = int_like(ty, width)
    src_width = 1 if src == DType.bool else bits(src)
    if width < src_width:
        return b.trunc(x, target)
    if width > src_width:
        return b.sext(x, target) if is_signed(src) and src != DType.bool else b.zext(x, target)
    return x


# --------------------------------------------------------------------------------------- step

def emit_step(b: ir.IRBuilder, op: str, attrs: dict[str, float], args: list[ir.Value], arg_dtypes: list[DType],
              dtype: DType) -> ir.Value:
    """The value of one Expr step whose result has element type `dtype`."""
    src = arg_dtypes[0]
    if op == "Cast":
        return emit_cast(b, args[0], src, dtype)
    if op == "Where":
        return b.select(args[0], args[1], args[2])
    if op in FLOAT_COMPARE:
        if is_float(src):
            return b.fcmp_ordered(FLOAT_COMPARE[op], args[0], args[1])
        return _icmp(b, is_signed(src) and src != DType.bool, FLOAT_COMPARE[op], args[0], args[1])
    if op in ("And", "Or", "Xor"):
        return {"And": b.and_, "Or": b.or_, "Xor": b.xor}[op](args[0], args[1])
    if op == "Not":
        return b.xor(args[0], const(1, args[0].type))
    if op == "IsNaN":
        return b.fcmp_unordered("uno", args[0], args[0])
    if op == "IsInf":
        inf = const(float("inf"), args[0].type)
        positive = b.fcmp_ordered("==", args[0], inf)
        negative = b.fcmp_ordered("==", args[0], b.fneg(inf))
        result = const(0, int_like(args[0].type, 1))
        if attrs.get("detect_positive", 1.0):
            result = b.or_(result, positive)
        if attrs.get("detect_negative", 1.0):
            result = b.or_(result, negative)
        return result
    if src == DType.bool:
        raise StepError(f"{op} is not supported on bool")
    if is_float(src):
        return _emit_float(b, op, attrs, args, src)
    return _emit_int(b, op, attrs, args, src)


def result_dtype_ok(op: str, arg_dtypes: list[DType], dtype: DType) -> str | None:
    """None when `dtype` is a valid result of `op` over `arg_dtypes`, else why not."""
    if op == "Cast":
        return None
    if op == "Where":
        if arg_dtypes[0] != DType.bool or arg_dtypes[1] != arg_dtypes[2] or dtype != arg_dtypes[1]:
            return f"Where wants (bool, T, T) -> T, got {[d.value for d in arg_dtypes]} -> {dtype.value}"
        return None
    if len(set(arg_dtypes)) != 1:
        return f"{op} operands differ in dtype: {[d.value for d in arg_dtypes]}"
    if op in ("And", "Or", "Xor", "Not") and arg_dtypes[0] != DType.bool:
        return f"{op} takes bool operands, got {arg_dtypes[0].value}"
    predicate = op in FLOAT_COMPARE or op in ("And", "Or", "Xor", "Not", "IsNaN", "IsInf")
    want = DType.bool if predicate else arg_dtypes[0]
    if dtype != want:
        return f"{op} on {arg_dtypes[0].value} gives {want.value}, step says {dtype.value}"
    return None

