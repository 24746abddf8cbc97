"""Elementwise math in LLVM IR, for f32 scalars and f32 vectors alike (no libm).

`emit_unary(b, op, attrs, x)` and `emit_binary(b, op, lhs, rhs)` cover kernel_spec.UNARY_OPS and
BINARY_OPS. exp and log use range reduction + the Cephes single-precision polynomials; sigmoid and
tanh are written so that large |x| gives exact 0/±1 and never NaN. No fast-math flags are used:
the rounding trick in `_round` depends on it.
"""
from __future__ import annotations

from typing import Callable

from llvmlite import ir

from iree_py.codegen.llvm.common import I32, splat

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


def _int_type_like(ty: ir.Type) -> ir.Type:
    return ir.VectorType(I32, ty.count) if isinstance(ty, ir.VectorType) else I32


def _c(value: float, ty: ir.Type) -> ir.Value:
    return splat(float(value), ty)


def _ci(value: int, ty: ir.Type) -> ir.Value:
    ity = _int_type_like(ty)
    if isinstance(ity, ir.VectorType):
        return ir.Constant(ity, [value] * ity.count)
    return ir.Constant(ity, value)


def _select_lt(b: ir.IRBuilder, x: ir.Value, y: ir.Value, then: ir.Value, other: ir.Value) -> ir.Value:
    return b.select(b.fcmp_ordered("<", x, y), then, other)


def fmax(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """max(x, y); NaN in x propagates (x < y is false for NaN)."""
    return _select_lt(b, x, y, y, x)


def fmin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """min(x, y); NaN in x propagates."""
    return _select_lt(b, y, x, y, x)


def _poly(b: ir.IRBuilder, x: ir.Value, coeffs: tuple[float, ...]) -> ir.Value:
    """Horner: ((c0 * x + c1) * x + c2) ..."""
    ty = x.type
    acc = _c(coeffs[0], ty)
    for c in coeffs[1:]:
        acc = b.fadd(b.fmul(acc, x), _c(c, ty))
    return acc


def _round(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Round to nearest integer (as float) for |x| < 2**22, without llvm.rint (may be a libcall)."""
    ty = x.type
    return b.fsub(b.fadd(x, _c(ROUND_MAGIC, ty)), _c(ROUND_MAGIC, ty))


def _pow2i(b: ir.IRBuilder, n: ir.Value, ty: ir.Type) -> ir.Value:
    """2**n as float for integer n in [-126, 127]."""
    bits = b.shl(b.add(n, _ci(127, ty)), _ci(23, ty))
    return b.bitcast(bits, ty)


def emit_exp(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ty = x.type
    clamped = fmin(b, fmax(b, x, _c(EXP_LO, ty)), _c(EXP_HI, ty))
    n = _round(b, b.fmul(clamped, _c(LOG2E, ty)))
    r = b.fsub(clamped, b.fmul(n, _c(LN2_HI, ty)))
    r = b.fsub(r, b.fmul(n, _c(LN2_LO, ty)))
    p = _poly(b, r, EXP_POLY)
    y = b.fadd(b.fadd(b.fmul(p, b.fmul(r, r)), r), _c(1.0, ty))
    # 2**n as 2**h * 2**(n-h) so that both factors stay normal for n in [-150, 128].
    ni = b.fptosi(n, _int_type_like(ty))
    half = b.ashr(ni, _ci(1, ty))
    y = b.fmul(b.fmul(y, _pow2i(b, half, ty)), _pow2i(b, b.sub(ni, half), ty))
    y = b.select(b.fcmp_ordered(">", x, _c(EXP_HI, ty)), _c(float("inf"), ty), y)
    return b.select(b.fcmp_ordered("<", x, _c(EXP_LO, ty)), _c(0.0, ty), y)


def emit_log(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Natural log for positive normal x; 0 -> -inf, x < 0 -> NaN, +inf -> +inf."""
    ty = x.type
    ity = _int_type_like(ty)
    bits = b.bitcast(x, ity)
    exponent = b.sub(b.and_(b.lshr(bits, _ci(23, ty)), _ci(0xFF, ty)), _ci(126, ty))
    mant = b.bitcast(b.or_(b.and_(bits, _ci(0x007FFFFF, ty)), _ci(0x3F000000, ty)), ty)  # [0.5, 1)
    e = b.sitofp(exponent, ty)
    small = b.fcmp_ordered("<", mant, _c(SQRT_HALF, ty))
    e = b.select(small, b.fsub(e, _c(1.0, ty)), e)
    m = b.select(small, b.fsub(b.fadd(mant, mant), _c(1.0, ty)), b.fsub(mant, _c(1.0, ty)))
    z = b.fmul(m, m)
    y = b.fmul(_poly(b, m, LOG_POLY), b.fmul(m, z))
    y = b.fadd(y, b.fmul(e, _c(LN2_LO, ty)))
    y = b.fsub(y, b.fmul(z, _c(0.5, ty)))
    result = b.fadd(b.fadd(m, y), b.fmul(e, _c(LN2_HI, ty)))
    result = b.select(b.fcmp_ordered("==", x, _c(float("inf"), ty)), x, result)
    result = b.select(b.fcmp_ordered("==", x, _c(0.0, ty)), _c(float("-inf"), ty), result)
    return b.select(b.fcmp_unordered("<", x, _c(0.0, ty)), _c(float("nan"), ty), result)


def emit_pow(b: ir.IRBuilder, x: ir.Value, exponent: ir.Value) -> ir.Value:
    """x ** exponent for x > 0, as exp(exponent * log(x))."""
    return emit_exp(b, b.fmul(exponent, emit_log(b, x)))


def _abs(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ity = _int_type_like(x.type)
    return b.bitcast(b.and_(b.bitcast(x, ity), _ci(0x7FFFFFFF, x.type)), x.type)


def _copysign(b: ir.IRBuilder, magnitude: ir.Value, sign_of: ir.Value) -> ir.Value:
    ty = magnitude.type
    ity = _int_type_like(ty)
    sign = b.and_(b.bitcast(sign_of, ity), _ci(-0x80000000, ty))
    return b.bitcast(b.or_(b.bitcast(magnitude, ity), sign), ty)


def emit_sigmoid(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """1 / (1 + exp(-x)) computed from e = exp(-|x|) <= 1, so nothing overflows."""
    ty = x.type
    e = emit_exp(b, b.fneg(_abs(b, x)))
    s = b.fdiv(_c(1.0, ty), b.fadd(_c(1.0, ty), e))
    return b.select(b.fcmp_ordered("<", x, _c(0.0, ty)), b.fmul(e, s), s)


def emit_tanh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ty = x.type
    ax = _abs(b, x)
    z = b.fmul(x, x)
    small = b.fadd(b.fmul(b.fmul(_poly(b, z, TANH_POLY), z), x), x)
    e = emit_exp(b, b.fadd(ax, ax))  # inf for large |x|: 2/inf = 0, so the result is exactly 1
    large = b.fsub(_c(1.0, ty), b.fdiv(_c(2.0, ty), b.fadd(e, _c(1.0, ty))))
    large = _copysign(b, large, x)
    return b.select(b.fcmp_ordered("<", ax, _c(TANH_SMALL, ty)), small, large)


def _sqrt(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ty = x.type
    suffix = f"v{ty.count}f32" if isinstance(ty, ir.VectorType) else "f32"
    name = f"llvm.sqrt.{suffix}"
    module = b.block.function.module
    fn = module.globals.get(name) or ir.Function(module, ir.FunctionType(ty, [ty]), name=name)
    return b.call(fn, [x])


def _attr(attrs: dict[str, float], op: str, name: str) -> float:
    if name not in attrs:
        raise ValueError(f"elementwise op {op} needs attribute {name!r}; got {sorted(attrs)}")
    return float(attrs[name])


def _relu(b, attrs, x):
    return _select_lt(b, x, _c(0.0, x.type), _c(0.0, x.type), x)


def _leaky_relu(b, attrs, x):
    alpha = _attr(attrs, "LeakyRelu", "alpha")
    return _select_lt(b, x, _c(0.0, x.type), b.fmul(x, _c(alpha, x.type)), x)


def _clip(b, attrs, x):
    lo = attrs.get("min", float("-inf"))
    hi = attrs.get("max", float("inf"))
    return fmin(b, fmax(b, x, _c(lo, x.type)), _c(hi, x.type))


UNARY_EMITTERS: dict[str, Callable[[ir.IRBuilder, dict[str, float], ir.Value], ir.Value]] = {
    "Relu": _relu,
    "LeakyRelu": _leaky_relu,
    "Sigmoid": lambda b, attrs, x: emit_sigmoid(b, x),
    "Tanh": lambda b, attrs, x: emit_tanh(b, x),
    "Clip": _clip,
    "Neg": lambda b, attrs, x: b.fneg(x),
    "Exp": lambda b, attrs, x: emit_exp(b, x),
    "Sqrt": lambda b, attrs, x: _sqrt(b, x),
    "Abs": lambda b, attrs, x: _abs(b, x),
}

BINARY_EMITTERS: dict[str, Callable[[ir.IRBuilder, ir.Value, ir.Value], ir.Value]] = {
    "Add": lambda b, x, y: b.fadd(x, y),
    "Sub": lambda b, x, y: b.fsub(x, y),
    "Mul": lambda b, x, y: b.fmul(x, y),
    "Div": lambda b, x, y: b.fdiv(x, y),
}


def emit_unary(b: ir.IRBuilder, op: str, attrs: dict[str, float], x: ir.Value) -> ir.Value:
    """op(x) for one of kernel_spec.UNARY_OPS; x is an f32 or an f32 vector."""
    emitter = UNARY_EMITTERS.get(op)
    if emitter is None:
        raise ValueError(f"unsupported unary elementwise op {op!r}; supported: {sorted(UNARY_EMITTERS)}")
    return emitter(b, dict(attrs), x)


def emit_binary(b: ir.IRBuilder, op: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    """op(lhs, rhs) for one of kernel_spec.BINARY_OPS; both operands have the same type."""
    emitter = BINARY_EMITTERS.get(op)
    if emitter is None:
        raise ValueError(f"unsupported binary elementwise op {op!r}; supported: {sorted(BINARY_EMITTERS)}")
    if lhs.type != rhs.type:
        raise ValueError(f"binary op {op}: operand types differ ({lhs.type} vs {rhs.type})")
    return emitter(b, lhs, rhs)
