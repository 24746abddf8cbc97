"""Elementwise arithmetic and activations: Add, Sub, Mul, Div, Pow, Min, Max, Mod, FloorMod, PRelu,
Relu, Sigmoid, Tanh (and onnxruntime's RationalSigmoid / RationalTanh), LeakyRelu, Clip and the unary
math ops (Exp, Log, Sqrt, Erf, Gelu, the trigonometric ones, ...).

Each op's shape rule (numpy broadcasting; the dtypes its kernels compute in) and its numpy reference.
Floats are computed in float64 and rounded once to the input's dtype. Integer semantics (docs/ir.md,
"Integer and bool elementwise ops"): add/sub/mul wrap around; Div truncates toward zero; Mod is C's
remainder (sign of the dividend), FloorMod Python's (sign of the divisor); a zero divisor gives 0 for
Div, Mod and FloorMod.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from iree_py.ir import rational_math
from iree_py.ir.dim_checks import broadcast_shapes
from iree_py.ir.opdef import FLOAT_DTYPES, INT_DTYPES, NUMERIC_DTYPES, SINGLE_HALF_DTYPES, Kernel, OpDef
from iree_py.ir.types import Dim, TensorType


# --- shape rules -----------------------------------------------------------------------------------

def _same(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    return [inputs[0]]


def _broadcast(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    a, b = inputs
    if a.dtype != b.dtype:
        raise ValueError(f"operand dtypes differ: {a} and {b}")
    try:
        shape = broadcast_shapes([a.shape, b.shape], "broadcast operands")
    except ValueError as e:
        raise ValueError(f"shapes {a} and {b} do not broadcast ({e})") from None
    return [TensorType(a.dtype, shape)]


def broadcast_shape(*types: TensorType) -> tuple[Dim, ...]:
    """numpy broadcasting of the operands' shapes; symbolic dims record run-time checks."""
    try:
        return broadcast_shapes([t.shape for t in types], "broadcast operands")
    except ValueError as e:
        raise ValueError(f"shapes {', '.join(str(t) for t in types)} do not broadcast ({e})") from None


def _same_dtype(a: TensorType, b: TensorType) -> None:
    if a.dtype != b.dtype:
        raise ValueError(f"operand dtypes differ: {a} and {b}")


def _binary_same(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    a, b = inputs
    _same_dtype(a, b)
    return [TensorType(a.dtype, broadcast_shape(a, b))]


# --- numpy reference -------------------------------------------------------------------------------

def _f64(fn: Callable[..., np.ndarray]) -> Kernel:
    """An elementwise op computed in float64 (attrs passed by keyword), result in the input's dtype."""
    def run(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(*(x.astype(np.float64) for x in ins), **attrs)).astype(ins[0].dtype)
    return run


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


_ERF = np.vectorize(math.erf, otypes=[np.float64])


def _is_int(a: np.ndarray) -> bool:
    return a.dtype.kind in "iu"


def _quiet(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    def run(*args: Any) -> np.ndarray:
        with np.errstate(all="ignore"):
            return fn(*args)
    return run


@_quiet
def int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Truncating integer division; 0 where b == 0."""
    safe = np.where(b == 0, 1, b).astype(a.dtype)
    q = a // safe
    r = a - q * safe
    q = np.where((r != 0) & ((a < 0) != (safe < 0)), q + 1, q).astype(a.dtype)  # floor -> toward zero
    return np.where(b == 0, 0, q).astype(a.dtype)


@_quiet
def c_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Remainder with the dividend's sign (C %, fmod); integers: 0 where b == 0."""
    if not _is_int(a):
        return np.fmod(a, b).astype(a.dtype)
    return (a - int_div(a, b) * b).astype(a.dtype) * (b != 0)


@_quiet
def floor_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Remainder with the divisor's sign (Python %); integers: 0 where b == 0."""
    r = c_mod(a, b)
    fix = (r != 0) & ((r < 0) != (b < 0))
    r = np.where(fix, r + b, r).astype(a.dtype)
    if not _is_int(a):
        r = np.where(r == 0, np.copysign(np.zeros_like(r), b), r).astype(a.dtype)  # 0 takes b's sign
    return r


def int_pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x ** y for integers, wrapping; a negative y gives 1 / x ** -y truncated (1, +-1 for x = -1,
    else 0; also 0 for x = 0)."""
    x, y = np.broadcast_arrays(x, y.astype(x.dtype))
    result = np.ones(x.shape, x.dtype)
    base, e = x.copy(), np.where(y < 0, 0, y).astype(np.uint64)
    with np.errstate(all="ignore"):
        while np.any(e):
            result = np.where(e & 1, result * base, result).astype(x.dtype)
            base = (base * base).astype(x.dtype)
            e >>= np.uint64(1)
    if x.dtype.kind == "i":
        negative = np.where(x == 1, 1, np.where(x == -1, np.where(y % 2 == 0, 1, -1), 0)).astype(x.dtype)
        result = np.where(y < 0, negative, result).astype(x.dtype)
    return result


def _pow(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    a, b = ins
    if _is_int(a):
        return int_pow(a, b)
    with np.errstate(all="ignore"):
        return np.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)


def _elementwise(fn: Callable[..., np.ndarray]) -> Kernel:
    def run(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(*ins)).astype(ins[0].dtype)
    return run


def _div(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    a, b = ins
    if _is_int(a):
        return int_div(a, b)
    with np.errstate(all="ignore"):
        return np.divide(a, b).astype(a.dtype)


def _f64_or_exact(fn: Callable[[np.ndarray], np.ndarray]) -> Kernel:
    """Float inputs computed in float64 (rounded once to the input's dtype), integers exactly."""
    def run(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
        x = ins[0]
        with np.errstate(all="ignore"):
            if _is_int(x):
                return np.asarray(fn(x)).astype(x.dtype)
            return np.asarray(fn(x.astype(np.float64))).astype(x.dtype)
    return run


def _clip(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x = ins[0]
    if not _is_int(x):
        return np.minimum(np.maximum(x, attrs["min"]), attrs["max"]).astype(x.dtype)
    lo, hi = int_clip_bounds(x.dtype, attrs["min"], attrs["max"])
    return np.minimum(np.maximum(x, x.dtype.type(lo)), x.dtype.type(hi))


def int_clip_bounds(dtype: np.dtype, lo: float, hi: float) -> tuple[int, int]:
    """Clip's float bounds as integers of `dtype`: rounded inward and clamped to the type's range."""
    info = np.iinfo(dtype)
    lo_i = info.min if lo <= info.min else int(np.ceil(lo))
    hi_i = info.max if hi >= info.max else int(np.floor(hi))
    return min(max(lo_i, info.min), info.max), max(min(hi_i, info.max), info.min)


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Kernel:
    def run(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
        a, b = ins
        return fn(a, b).astype(a.dtype)
    return run


OP_DEFS = [
    *(OpDef(op, (), 2, 2, _broadcast, elementwise=True, dtypes=NUMERIC_DTYPES) for op in ("Add", "Sub", "Mul", "Div")),
    OpDef("Relu", (), 1, 1, _same, elementwise=True, dtypes=NUMERIC_DTYPES),
    OpDef("Sigmoid", (), 1, 1, _same, elementwise=True, dtypes=SINGLE_HALF_DTYPES),
    OpDef("Tanh", (), 1, 1, _same, elementwise=True, dtypes=SINGLE_HALF_DTYPES),
    # onnxruntime's rational approximations (docs/ir.md): ONNX Sigmoid and Tanh import as these.
    OpDef("RationalSigmoid", (), 1, 1, _same, elementwise=True, dtypes=SINGLE_HALF_DTYPES),
    OpDef("RationalTanh", (), 1, 1, _same, elementwise=True, dtypes=SINGLE_HALF_DTYPES),
    OpDef("LeakyRelu", ("alpha",), 1, 1, _same, elementwise=True, dtypes=SINGLE_HALF_DTYPES),
    OpDef("Clip", ("max", "min"), 1, 1, _same, elementwise=True, dtypes=NUMERIC_DTYPES),
    *(OpDef(op, attrs, 1, 1, _same, elementwise=True,
            dtypes=NUMERIC_DTYPES if op in ("Abs", "Neg", "Sign") else
            FLOAT_DTYPES if op in ("Sqrt", "Floor", "Ceil", "Exp", "Log", "Reciprocal") else SINGLE_HALF_DTYPES)
      for op, attrs in (
        ("Exp", ()), ("Log", ()), ("Sqrt", ()), ("Abs", ()), ("Neg", ()), ("Reciprocal", ()), ("Floor", ()),
        ("Ceil", ()), ("Round", ()), ("Sign", ()), ("Erf", ()), ("Softplus", ()), ("Softsign", ()),
        ("HardSigmoid", ("alpha", "beta")), ("HardSwish", ()), ("Elu", ("alpha",)), ("Selu", ("alpha", "gamma")),
        ("Celu", ("alpha",)), ("ThresholdedRelu", ("alpha",)), ("Mish", ()), ("Gelu", ()), ("GeluTanh", ()),
        ("Sin", ()), ("Cos", ()), ("Tan", ()), ("Atan", ()), ("Asin", ()), ("Acos", ()),
        ("Sinh", ()), ("Cosh", ()), ("Asinh", ()), ("Acosh", ()), ("Atanh", ()))),
    *(OpDef(op, (), 2, 2, _broadcast, elementwise=True,
            dtypes=NUMERIC_DTYPES if op in ("Min", "Max", "Mod") else
            FLOAT_DTYPES | INT_DTYPES if op == "Pow" else SINGLE_HALF_DTYPES)
      for op in ("Pow", "Min", "Max", "PRelu", "Mod")),
    OpDef("FloorMod", (), 2, 2, _binary_same, elementwise=True, dtypes=NUMERIC_DTYPES),
]

KERNELS: dict[str, Kernel] = {
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Div": _div,
    "Pow": _pow,
    "Min": _elementwise(np.minimum),
    "Max": _elementwise(np.maximum),
    "Mod": lambda ins, a: c_mod(ins[0], ins[1]),
    "FloorMod": lambda ins, a: floor_mod(ins[0], ins[1]),
    "PRelu": _f64(lambda x, slope: np.where(x < 0, x * slope, x)),
    "Relu": lambda ins, a: np.maximum(ins[0], ins[0].dtype.type(0)).astype(ins[0].dtype),
    "Sigmoid": lambda ins, a: (1.0 / (1.0 + np.exp(-ins[0].astype(np.float64)))).astype(ins[0].dtype),
    "Tanh": lambda ins, a: np.tanh(ins[0]),
    "RationalSigmoid": lambda ins, a: rational_math.rational_sigmoid(ins[0]).astype(ins[0].dtype),
    "RationalTanh": lambda ins, a: rational_math.rational_tanh(ins[0]).astype(ins[0].dtype),
    "LeakyRelu": lambda ins, a: np.where(ins[0] >= 0, ins[0], ins[0] * a["alpha"]).astype(ins[0].dtype),
    "Clip": _clip,
    "Abs": _f64_or_exact(np.abs),
    "Neg": _f64_or_exact(np.negative),
    "Sign": _f64_or_exact(np.sign),
    "Exp": _f64(np.exp), "Log": _f64(np.log), "Sqrt": _f64(np.sqrt),
    "Reciprocal": _f64(np.reciprocal), "Floor": _f64(np.floor), "Ceil": _f64(np.ceil),
    "Round": _f64(np.round),  # half to even, as ONNX
    "Erf": _f64(_ERF), "Softplus": _f64(_softplus),
    "Softsign": _f64(lambda x: x / (1 + np.abs(x))),
    "HardSigmoid": _f64(lambda x, alpha, beta: np.clip(alpha * x + beta, 0, 1)),
    "HardSwish": _f64(lambda x: x * np.clip(x / 6 + 0.5, 0, 1)),
    "Elu": _f64(lambda x, alpha: np.where(x < 0, alpha * np.expm1(x), x)),
    "Selu": _f64(lambda x, alpha, gamma: gamma * np.where(x <= 0, alpha * np.expm1(x), x)),
    "Celu": _f64(lambda x, alpha: np.maximum(0, x) + np.minimum(0, alpha * np.expm1(x / alpha))),
    "ThresholdedRelu": _f64(lambda x, alpha: np.where(x > alpha, x, 0.0)),
    "Mish": _f64(lambda x: x * np.tanh(_softplus(x))),
    "Gelu": _f64(lambda x: 0.5 * x * (1 + _ERF(x / math.sqrt(2)))),
    "GeluTanh": _f64(lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    "Sin": _f64(np.sin), "Cos": _f64(np.cos), "Tan": _f64(np.tan), "Atan": _f64(np.arctan),
    "Asin": _f64(np.arcsin), "Acos": _f64(np.arccos), "Sinh": _f64(np.sinh), "Cosh": _f64(np.cosh),
    "Asinh": _f64(np.arcsinh), "Acosh": _f64(np.arccosh), "Atanh": _f64(np.arctanh),
}
