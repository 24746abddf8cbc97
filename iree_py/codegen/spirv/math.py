"""The f32 elementwise ops of the SPIR-V backend: op name -> how it is computed from GLSL.std.450
and arithmetic. Elementwise expressions and conv/matmul epilogues share these tables; an op missing
here is refused when the dispatch is planned (spirv/plan.py), naming the node."""
from __future__ import annotations

import math
from typing import Callable

from iree_py.codegen.spirv.builder import KernelBuilder, Value

Attrs = dict[str, float]


def _erf(b: KernelBuilder, x: Value) -> Value:
    """Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7)."""
    a = b.ext("FAbs", x)
    t = 1.0 / (a * 0.3275911 + 1.0)
    poly = t * (t * (t * (t * (t * 1.061405429 - 1.453152027) + 1.421413741) - 0.284496736) + 0.254829592)
    y = 1.0 - poly * b.ext("Exp", -(a * a))
    return b.ext("FSign", x) * y


def _sigmoid(b: KernelBuilder, x: Value) -> Value:
    return 1.0 / (b.ext("Exp", -x) + 1.0)


def _softplus(b: KernelBuilder, x: Value) -> Value:
    """log(1 + exp(x)) without overflow: max(x, 0) + log(1 + exp(-|x|))."""
    return b.max(x, 0.0) + _log1p(b, b.ext("Exp", -b.ext("FAbs", x)))


def _tanh(b: KernelBuilder, x: Value) -> Value:
    """Mesa's Tanh is (e^2x - 1) / (e^2x + 1), which loses a small x's relative precision to the
    subtraction: below |x| 0.1 the odd series to x^7 (the next term is < 2.2e-11)."""
    x2 = x * x
    series = x * (x2 * (x2 * (x2 * (-17.0 / 315.0) + 2.0 / 15.0) - 1.0 / 3.0) + 1.0)
    return b.select(b.ext("FAbs", x) < 0.1, series, b.ext("Tanh", x))


def _log1p(b: KernelBuilder, u: Value) -> Value:
    """log(1 + u) for u >= 0 without losing a small u to the rounding of 1 + u (Goldberg's trick:
    log(w) * u / (w - 1) with w = 1 + u; u itself where w rounds to 1)."""
    w = u + 1.0
    d = w - 1.0
    return b.select(d.eq(0.0), u, b.ext("Log", w) * (u / b.select(d.eq(0.0), b.float(1.0), d)))


def _clamp(b: KernelBuilder, x: Value, low: float, high: float) -> Value:
    return b.min(b.max(x, low), high)


def _asin(b: KernelBuilder, x: Value) -> Value:
    """2 atan(x / (1 + sqrt(1 - x^2))): GLSL.std.450 Asin is only good to ~4e-4 on Mesa."""
    return b.ext("Atan", x / (b.ext("Sqrt", 1.0 - x * x) + 1.0)) * 2.0


def _expm1(b: KernelBuilder, x: Value) -> Value:
    return b.ext("Exp", x) - 1.0


UNARY: dict[str, Callable[[KernelBuilder, Value, Attrs], Value]] = {
    "Relu": lambda b, x, a: b.max(x, 0.0),
    "LeakyRelu": lambda b, x, a: b.select(x < 0.0, x * a["alpha"], x),
    "Sigmoid": lambda b, x, a: _sigmoid(b, x),
    "RationalSigmoid": lambda b, x, a: _sigmoid(b, x),
    "Tanh": lambda b, x, a: _tanh(b, x),
    "RationalTanh": lambda b, x, a: _tanh(b, x),
    "Clip": lambda b, x, a: _clamp(b, x, a["min"], a["max"]),
    "Neg": lambda b, x, a: -x,
    "Exp": lambda b, x, a: b.ext("Exp", x),
    "Sqrt": lambda b, x, a: b.ext("Sqrt", x),
    "Abs": lambda b, x, a: b.ext("FAbs", x),
    "Log": lambda b, x, a: b.ext("Log", x),
    "Reciprocal": lambda b, x, a: 1.0 / x,
    "Floor": lambda b, x, a: b.ext("Floor", x),
    "Ceil": lambda b, x, a: b.ext("Ceil", x),
    "Round": lambda b, x, a: b.ext("RoundEven", x),
    "Sign": lambda b, x, a: b.ext("FSign", x),
    "Erf": lambda b, x, a: _erf(b, x),
    "Softplus": lambda b, x, a: _softplus(b, x),
    "Softsign": lambda b, x, a: x / (b.ext("FAbs", x) + 1.0),
    "HardSigmoid": lambda b, x, a: _clamp(b, x * a["alpha"] + a["beta"], 0.0, 1.0),
    "HardSwish": lambda b, x, a: x * _clamp(b, x * (1.0 / 6.0) + 0.5, 0.0, 1.0),
    "Elu": lambda b, x, a: b.select(x < 0.0, _expm1(b, x) * a["alpha"], x),
    "Selu": lambda b, x, a: b.select(x > 0.0, x, _expm1(b, x) * a["alpha"]) * a["gamma"],
    "Celu": lambda b, x, a: b.max(x, 0.0) + b.min(_expm1(b, x * (1.0 / a["alpha"])) * a["alpha"], 0.0),
    "ThresholdedRelu": lambda b, x, a: b.select(x > a["alpha"], x, 0.0),
    "Mish": lambda b, x, a: x * _tanh(b, _softplus(b, x)),
    "Gelu": lambda b, x, a: x * 0.5 * (_erf(b, x * (1.0 / math.sqrt(2.0))) + 1.0),
    "GeluTanh": lambda b, x, a: x * 0.5 * (b.ext("Tanh", (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)) + 1.0),
    "Asin": lambda b, x, a: _asin(b, x),
    "Acos": lambda b, x, a: math.pi / 2 - _asin(b, x),
    **{op: (lambda name: lambda b, x, a: b.ext(name, x))(op)
       for op in ("Sin", "Cos", "Tan", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh")},
}


def _pow(b: KernelBuilder, x: Value, y: Value) -> Value:
    """GLSL's pow is undefined for x < 0 and for x = 0, y <= 0: those cases are handled here."""
    magnitude = b.ext("Pow", b.ext("FAbs", x), y)
    integral = b.ext("Floor", y).eq(y)
    odd = b.ext("FAbs", y) % 2.0
    signed = b.select(odd.eq(1.0), -magnitude, magnitude)
    negative = b.select(integral, signed, b.float(math.nan))
    result = b.select(x < 0.0, negative, magnitude)
    result = b.select(b.logical_and(x.eq(0.0), y < 0.0), b.float(math.inf), result)
    return b.select(y.eq(0.0), b.float(1.0), b.select(b.logical_and(x.eq(0.0), y > 0.0), b.float(0.0), result))


def fmod(b: KernelBuilder, x: Value, y: Value) -> Value:
    """C fmod from OpFRem, which gives NaN for a finite x over +-inf (x there) and leaves a zero
    result's sign open (the dividend's here, as every result's)."""
    finite_x_infinite_y = b.logical_and(b.ext("FAbs", x) < math.inf, b.ext("FAbs", y).eq(math.inf))
    magnitude = b.ext("FAbs", x % y)
    return b.select(finite_x_infinite_y, x, b.select(b.sign_bit(x), -magnitude, magnitude))


BINARY: dict[str, Callable[[KernelBuilder, Value, Value], Value]] = {
    "Add": lambda b, x, y: x + y,
    "Sub": lambda b, x, y: x - y,
    "Mul": lambda b, x, y: x * y,
    "Div": lambda b, x, y: x / y,
    "Pow": _pow,
    "Min": lambda b, x, y: b.min(x, y),
    "Max": lambda b, x, y: b.max(x, y),
    "PRelu": lambda b, x, y: b.select(x < 0.0, x * y, x),
    "Mod": fmod,
}


def unary(b: KernelBuilder, op: str, x: Value, attrs: tuple[tuple[str, float], ...]) -> Value:
    return UNARY[op](b, x, dict(attrs))


def binary(b: KernelBuilder, op: str, x: Value, y: Value) -> Value:
    return BINARY[op](b, x, y)
