"""numpy reference of the dtype-aware elementwise ops (registered in reference.py's KERNELS below the
`dtypes` marker, so they replace the float-only entries of Div, Abs, Neg, Sign, Min, Max, Mod, Relu
and Clip).

Integer semantics (docs/ir.md, "Integer and bool elementwise ops"): add/sub/mul wrap around; Div
truncates toward zero; Mod is C's remainder (sign of the dividend), FloorMod Python's (sign of the
divisor); a zero divisor gives 0 for Div, Mod and FloorMod; a shift by a negative amount or by the width
or more gives 0 (right shifts of negative signed values: -1); right shifts of signed types are arithmetic.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from iree_py.ir.narrow_types import involves_narrow, narrow_cast_array
from iree_py.ir.types import DType

Kernel = Callable[[list[np.ndarray], dict[str, Any]], np.ndarray]


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


def _x86_convert(xf: np.ndarray, wide: type) -> np.ndarray:
    """cvtt*2si: truncate toward zero into `wide` (int32/int64); NaN or out of range: its minimum."""
    limit = 2.0 ** (8 * np.dtype(wide).itemsize - 1)
    with np.errstate(all="ignore"):
        inside = (xf > -limit - 1) & (xf < limit)
        converted = np.trunc(np.where(inside, xf, 0.0)).astype(wide)
    return np.where(inside, converted, np.iinfo(wide).min).astype(wide)


def cast_array(x: np.ndarray, to: DType) -> np.ndarray:
    """ONNX Cast as onnxruntime does it on x86-64 (docs/ir.md): float -> integers narrower than 32
    bits and i32 go through a 32-bit conversion, i64 through a 64-bit one (NaN or out of range gives
    the conversion's minimum, then wraps; f16 -> u32 goes through i64); u32/u64 convert
    x - 2**31/2**63 when x is at least that and flip the top bit; integers wrap; anything -> bool
    is != 0. Narrow types (bf16, float8, 4-/2-bit): narrow_types.py."""
    if involves_narrow(x, to):
        return narrow_cast_array(x, to)
    target = to.numpy
    if to == DType.bool:
        return x != 0
    if x.dtype.kind == "f" and target.kind in "iu":
        xf = x.astype(np.float64)
        if x.dtype == np.float16 and to == DType.u32:  # onnxruntime goes through int64 here
            return _x86_convert(xf, np.int64).astype(target)
        if to in (DType.u32, DType.u64):
            wide, unsigned = (np.int32, np.uint32) if to == DType.u32 else (np.int64, np.uint64)
            top = 2.0 ** (8 * np.dtype(wide).itemsize - 1)
            high = xf >= top
            low_part = _x86_convert(xf, wide).view(unsigned)
            high_part = _x86_convert(np.where(high, xf - top, 0.0), wide).view(unsigned) ^ unsigned(top)
            return np.where(high, high_part, low_part).astype(target)
        return _x86_convert(xf, np.int64 if to == DType.i64 else np.int32).astype(target)
    with np.errstate(all="ignore"):
        return x.astype(target)


def _cast(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    return cast_array(ins[0], DType(attrs["to"]))


def _shift(left: bool) -> Kernel:
    def run(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
        a, b = ins
        bits = 8 * a.dtype.itemsize
        big = (b < 0) | (b >= bits) if b.dtype.kind == "i" else b >= bits
        amount = np.where(big, 0, b).astype(a.dtype)
        with np.errstate(all="ignore"):
            shifted = np.left_shift(a, amount) if left else np.right_shift(a, amount)
        fill = np.where(a < 0, -1, 0).astype(a.dtype) if not left else np.zeros_like(a)  # arithmetic >>
        return np.where(big, fill, shifted).astype(a.dtype)
    return run


def _isinf(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x = ins[0]
    return (np.isposinf(x) & bool(attrs["detect_positive"])) | (np.isneginf(x) & bool(attrs["detect_negative"]))


def _compare(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Kernel:
    return lambda ins, attrs: np.asarray(fn(ins[0], ins[1]), dtype=bool)


KERNELS: dict[str, Kernel] = {
    "Div": _div,
    "Pow": _pow,
    "Abs": _f64_or_exact(np.abs),
    "Neg": _f64_or_exact(np.negative),
    "Sign": _f64_or_exact(np.sign),
    "Relu": lambda ins, a: np.maximum(ins[0], ins[0].dtype.type(0)).astype(ins[0].dtype),
    "Clip": _clip,
    "Min": _elementwise(np.minimum),
    "Max": _elementwise(np.maximum),
    "Mod": lambda ins, a: c_mod(ins[0], ins[1]),
    "FloorMod": lambda ins, a: floor_mod(ins[0], ins[1]),
    "Cast": _cast,
    "Equal": _compare(np.equal),
    "Less": _compare(np.less),
    "LessOrEqual": _compare(np.less_equal),
    "Greater": _compare(np.greater),
    "GreaterOrEqual": _compare(np.greater_equal),
    "And": _compare(np.logical_and),
    "Or": _compare(np.logical_or),
    "Xor": _compare(np.logical_xor),
    "Not": lambda ins, a: np.logical_not(ins[0]),
    "Where": lambda ins, a: np.where(ins[0], ins[1], ins[2]).astype(ins[1].dtype),
    "IsNaN": lambda ins, a: np.isnan(ins[0]),
    "IsInf": _isinf,
    "ShiftLeft": _shift(left=True),
    "ShiftRight": _shift(left=False),
}
