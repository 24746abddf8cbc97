"""ONNX elementwise arithmetic and activations -> normalized elementwise ops: Add, Sub, Mul, Div, Sum,
Mean, Min, Max, Mod, Pow, Clip, PRelu, Relu, Sigmoid and Tanh (onnxruntime's rational forms), the
unary math ops, the activations with float attributes (HardSigmoid, Elu, Selu, Celu,
ThresholdedRelu), Gelu, and the compositions Swish, Shrink and SwiGLU.

Pow(X, Y): a float base takes any exponent (converted to the base's dtype); an integer base takes an
integer exponent (exact, wrapping), or a float one computed in f64. Clip with computed bounds is
Max then Min. Known values (shape arithmetic, symbolic.py) are folded at import by
SYMBOLIC_CONVERTERS.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from iree_py.frontends.onnx.compose import Converter, require_float, scalar
from iree_py.frontends.onnx.dtypes import _cast_to
from iree_py.frontends.onnx.symbolic import SymbolicConverter, floordiv, fold_elementwise, smax, smin
from iree_py.ir.graph import Value
from iree_py.ir.opdef import FLOAT_DTYPES, INT_DTYPES
from iree_py.ir.types import Dim, DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


F32 = np.float32


def _binary(op: str) -> Converter:
    def convert(ctx: "OnnxContext") -> list[Value]:
        return [ctx.emit(op, [ctx.input(0), ctx.input(1)], out=0)]
    return convert


def _unary(op: str) -> Converter:
    def convert(ctx: "OnnxContext") -> list[Value]:
        return [ctx.emit(op, [ctx.input(0)], out=0)]
    return convert


def sum_(ctx: "OnnxContext") -> list[Value]:
    values = ctx.inputs()
    if len(values) == 1:
        return values
    acc = values[0]
    for i, v in enumerate(values[1:], start=2):
        acc = ctx.emit("Add", [acc, v], out=0 if i == len(values) else None)
    return [acc]


def leaky_relu(ctx: "OnnxContext") -> list[Value]:
    return [ctx.emit("LeakyRelu", [ctx.input(0)], {"alpha": float(ctx.attr("alpha", 0.01))}, out=0)]


def _variadic(op: str, scale_by_count: bool = False) -> Converter:
    """Min/Max/Mean of any number of inputs: a chain of two-operand ops (Mean: Add, then * 1/n)."""
    def convert(ctx: "OnnxContext") -> list[Value]:
        values = ctx.inputs()
        if len(values) == 1:
            return values
        acc = values[0]
        for i, v in enumerate(values[1:], start=2):
            last = i == len(values) and not scale_by_count
            acc = ctx.emit(op, [acc, v], out=0 if last else None)
        if scale_by_count:
            acc = ctx.emit("Mul", [acc, ctx.const(np.array(1.0 / len(values), F32), "inv_count")], out=0)
        return [acc]
    return convert


# Activations with float attributes: ONNX attribute -> default (the same at every opset that has the op).
SELU_ALPHA = 1.67326319217681884765625


SELU_GAMMA = 1.05070102214813232421875


ACTIVATION_DEFAULTS: dict[str, dict[str, float]] = {
    "HardSigmoid": {"alpha": 0.2, "beta": 0.5},
    "Elu": {"alpha": 1.0},
    "Selu": {"alpha": SELU_ALPHA, "gamma": SELU_GAMMA},
    "Celu": {"alpha": 1.0},
    "ThresholdedRelu": {"alpha": 1.0},
}


def _activation(op: str) -> Converter:
    def convert(ctx: "OnnxContext") -> list[Value]:
        attrs = {name: float(ctx.attr(name, default)) for name, default in ACTIVATION_DEFAULTS[op].items()}
        return [ctx.emit(op, [ctx.input(0)], attrs, out=0)]
    return convert


def gelu(ctx: "OnnxContext") -> list[Value]:
    approximate = ctx.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise ctx.bad_attr("approximate", approximate, "expected 'none' or 'tanh'")
    return [ctx.emit("Gelu" if approximate == "none" else "GeluTanh", [ctx.input(0)], out=0)]


def _same_dtypes(ctx: "OnnxContext", values: list[Value]) -> None:
    if len({v.type.dtype for v in values}) > 1:
        raise ctx.error(f"operand dtypes differ: {', '.join(str(v.type) for v in values)}")


def mod(ctx: "OnnxContext") -> list[Value]:
    """fmod=1: C's remainder (sign of the dividend); fmod=0: Python's (sign of the divisor)."""
    fmod = int(ctx.attr("fmod", 0))
    if fmod not in (0, 1):
        raise ctx.bad_attr("fmod", fmod, "expected 0 or 1")
    a, b = ctx.input(0), ctx.input(1)
    _same_dtypes(ctx, [a, b])
    return [ctx.emit("Mod" if fmod else "FloorMod", [a, b], out=0)]


def clip(ctx: "OnnxContext") -> list[Value]:
    """Constant bounds (attributes before opset 11): one Clip; computed bounds: Max, then Min
    (min(max(x, lo), hi): min > max gives max, NaN stays NaN, as ONNX)."""
    x = ctx.input(0)
    if ctx.opset < 11:
        lo, hi = float(ctx.attr("min", -math.inf)), float(ctx.attr("max", math.inf))
        return [ctx.emit("Clip", [x], {"min": lo, "max": hi}, out=0)]
    bounds = [ctx.input(i) if ctx.has_input(i) else None for i in (1, 2)]
    for name, b in zip(("min", "max"), bounds):
        if b is not None and b.type.num_elements != 1:
            raise ctx.error(f"{name} '{b.name}' is {b.type}; Clip's bounds are scalars")
    if all(b is None or b.is_const for b in bounds):
        lo, hi = (float(b.const) if b is not None else default for b, default in zip(bounds, (-math.inf, math.inf)))
        return [ctx.emit("Clip", [x], {"min": lo, "max": hi}, out=0)]
    steps = [(op, b) for op, b in zip(("Max", "Min"), bounds) if b is not None]
    _same_dtypes(ctx, [x, *(b for _, b in steps)])
    for i, (op, b) in enumerate(steps):
        x = ctx.emit(op, [x, b], out=0 if i == len(steps) - 1 else None)
    return [x]


def pow_(ctx: "OnnxContext") -> list[Value]:
    """Pow(X, Y): a float base takes any exponent (converted to the base's dtype); an integer base
    takes an integer exponent (exact, wrapping). An integer base with a float exponent computes in
    double and converts back like Cast (as numpy's int ** float -> float64 -> astype and
    onnxruntime's static_cast of std::pow): f64 Pow is exact for integral exponents, so 3 ** 2.0
    is 9, not the 8 a truncated exp(2 log 3) would give."""
    x, y = ctx.input(0), ctx.input(1)
    if x.type.dtype in FLOAT_DTYPES:
        return [ctx.emit("Pow", [x, _cast_to(ctx, y, x.type.dtype, out=None)], out=0)]
    if x.type.dtype not in INT_DTYPES:
        raise ctx.error(f"Pow of {x.type} is not supported")
    if y.type.dtype in FLOAT_DTYPES:
        wide = ctx.emit("Pow", [_cast_to(ctx, x, DType.f64, out=None), _cast_to(ctx, y, DType.f64, out=None)])
        return [_cast_to(ctx, wide, x.type.dtype)]
    if y.type.dtype not in INT_DTYPES:
        raise ctx.error(f"Pow exponent {y.type} is not supported")
    return [ctx.emit("Pow", [x, _cast_to(ctx, y, x.type.dtype, out=None)], out=0)]


def swish(ctx: "OnnxContext") -> list[Value]:
    """Opset 24: x * sigmoid(alpha * x)."""
    x = ctx.input(0)
    alpha = float(ctx.attr("alpha", 1.0))
    scaled = x if alpha == 1.0 else ctx.emit("Mul", [x, scalar(ctx, alpha, "alpha", like=x)])
    return [ctx.emit("Mul", [x, ctx.emit("Sigmoid", [scaled])], out=0)]


def shrink(ctx: "OnnxContext") -> list[Value]:
    """y = x - bias if x > lambd, x + bias if x < -lambd, else 0; written without compares as
    sign(relu(|x| - lambd)) * (x - bias * sign(x)) (|x| - lambd is exactly 0 only when |x| == lambd)."""
    x = ctx.input(0)
    if x.type.dtype.numpy != np.float32:
        raise ctx.error(f"Shrink on {x.type} is not supported; only float32")
    lambd, bias = float(ctx.attr("lambd", 0.5)), float(ctx.attr("bias", 0.0))
    beyond = ctx.emit("Sub", [ctx.emit("Abs", [x]), scalar(ctx, lambd, "lambd", like=x)])
    outside = ctx.emit("Sign", [ctx.emit("Relu", [beyond])])
    shifted = x
    if bias != 0.0:
        shifted = ctx.emit("Sub", [x, ctx.emit("Mul", [ctx.emit("Sign", [x]), scalar(ctx, bias, "bias", like=x)])])
    return [ctx.emit("Mul", [outside, shifted], out=0)]


def swiglu(ctx: "OnnxContext") -> list[Value]:
    a, b = ctx.input(0), ctx.input(1)
    require_float(ctx, a, "input A")
    if a.type != b.type:
        raise ctx.error(f"A {a.type} and B {b.type} must have the same shape and type (no broadcasting)")
    alpha = float(ctx.attr("alpha", 1.0))
    scaled = a if alpha == 1.0 else ctx.emit("Mul", [a, scalar(ctx, alpha, "alpha", like=a)])
    swish = ctx.emit("Mul", [a, ctx.emit("Sigmoid", [scaled])])
    return [ctx.emit("Mul", [swish, b], out=0)]


def _truncating_div(a: Any, b: Any) -> Dim:
    """ONNX integer Div: truncation toward zero for numbers; floordiv for dims (non-negative)."""
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q
    return floordiv(a, b)


CONVERTERS: dict[str, Converter] = {
    "Add": _binary("Add"),
    "Sub": _binary("Sub"),
    "Mul": _binary("Mul"),
    "Div": _binary("Div"),
    "Sum": sum_,
    "Relu": _unary("Relu"),
    "Sigmoid": _unary("RationalSigmoid"),  # onnxruntime's arithmetic (iree_py/ir/rational_math.py)
    "Tanh": _unary("RationalTanh"),
    "LeakyRelu": leaky_relu,
    **{op: _unary(op) for op in ("Exp", "Log", "Sqrt", "Abs", "Neg", "Reciprocal", "Floor", "Ceil", "Round", "Sign",
                                 "Erf", "Softplus", "Softsign", "HardSwish", "Mish", "Sin", "Cos", "Tan", "Atan",
                                 "Asin", "Acos", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh")},
    **{op: _activation(op) for op in ACTIVATION_DEFAULTS},
    "Gelu": gelu,
    "PRelu": _binary("PRelu"),
    "Min": _variadic("Min"),
    "Max": _variadic("Max"),
    "Mean": _variadic("Add", scale_by_count=True),
    "Mod": mod,
    "Pow": pow_,
    "Clip": clip,
    "Swish": swish,
    "Shrink": shrink,
    "SwiGLU": swiglu,
}

# Known values (symbolic.py) folded at import: shape arithmetic on dims.
SYMBOLIC_CONVERTERS: dict[str, SymbolicConverter] = {
    "Add": fold_elementwise(lambda ctx: lambda a, b: a + b),
    "Sub": fold_elementwise(lambda ctx: lambda a, b: a - b),
    "Mul": fold_elementwise(lambda ctx: lambda a, b: a * b),
    "Div": fold_elementwise(lambda ctx: _truncating_div),
    "Max": fold_elementwise(lambda ctx: lambda a, b: smax(ctx, a, b)),
    "Min": fold_elementwise(lambda ctx: lambda a, b: smin(ctx, a, b)),
    "Neg": fold_elementwise(lambda ctx: lambda a: -a),
}
