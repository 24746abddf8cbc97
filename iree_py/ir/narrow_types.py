"""Storage-only element types: bf16, the float8 formats, f4e2m1 and the 4-/2-bit integers.

They exist for Cast, quantization and data movement only; no op computes in them. In memory they
take one byte per element (bf16: two), as numpy/ml_dtypes stores them: a 4- or 2-bit value sits in
the low bits of its byte (signed ones in two's complement, the high bits zero). Kernels load a
narrow float as the exact f32 value and a narrow integer as an i8 (sign- or zero-extended).

Cast to a narrow float rounds to nearest even. Float8 targets saturate (ONNX Cast's default
saturate=1: out-of-range values and infinities become the largest finite value, NaN stays NaN);
bf16 never saturates (overflow gives inf); f4e2m1 has no inf or NaN, so it always saturates and
NaN becomes -0 (code 0b1000, as ml_dtypes and the ONNX tests have it). Narrow integers wrap; a float
cast to one rounds half away from zero first, as onnxruntime does (the ONNX reference truncates).

f8e8m0 (the MX scale format) is an exponent only: code c is 2**(c - 127), 0xFF is NaN; no sign, no
zero, no inf. Cast to it is ONNX's default round_mode="up", saturate=1, as onnx.numpy_helper's
to_float8e8m0 computes it from the f32 bits: the f32 exponent field, plus one when any mantissa
bit is set (except at 0xFE, which saturates); f32 inf and NaN give 0xFF; the sign is ignored
(negative inputs are undefined in the spec). A store of a value already in the format keeps its
exponent field.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iree_py.ir.types import DType


@dataclass(frozen=True)
class FloatFormat:
    """A small binary float: sign bit, `exponent` bits with `bias`, `mantissa` bits.

    `nan`: how NaN is encoded: "ieee" (exponent all ones, mantissa not zero; inf exists),
    "fn" (only all-ones exponent and mantissa is NaN; no inf), "fnuz" (only the negative-zero code
    is NaN; no inf, no -0), "none" (no NaN, no inf)."""

    exponent: int
    mantissa: int
    bias: int
    nan: str
    saturates: bool  # ONNX Cast saturate=1 applies (float8) or always on (f4e2m1)

    @property
    def width(self) -> int:
        return 1 + self.exponent + self.mantissa

    @property
    def sign_bit(self) -> int:
        return 1 << (self.width - 1)

    @property
    def max_code(self) -> int:
        """The code of the largest finite magnitude."""
        all_ones = (1 << (self.exponent + self.mantissa)) - 1
        return {"ieee": all_ones - (1 << self.mantissa), "fn": all_ones - 1}.get(self.nan, all_ones)

    @property
    def inf_code(self) -> int | None:
        return (((1 << self.exponent) - 1) << self.mantissa) if self.nan == "ieee" else None

    @property
    def nan_code(self) -> int:
        """The code a NaN result gets (without sign)."""
        if self.nan == "ieee":
            return (((1 << self.exponent) - 1) << self.mantissa) | (1 << (self.mantissa - 1))  # quiet NaN
        if self.nan == "fn":
            return (1 << (self.exponent + self.mantissa)) - 1
        return self.sign_bit  # fnuz: the -0 code; none (f4e2m1): -0 itself

    @property
    def max_value(self) -> float:
        code = self.max_code
        e, f = code >> self.mantissa, code & ((1 << self.mantissa) - 1)
        return (1.0 + f / (1 << self.mantissa)) * 2.0 ** (e - self.bias)


FLOAT_FORMATS: dict[DType, FloatFormat] = {
    DType.bf16: FloatFormat(8, 7, 127, "ieee", saturates=False),
    DType.f8e4m3fn: FloatFormat(4, 3, 7, "fn", saturates=True),
    DType.f8e4m3fnuz: FloatFormat(4, 3, 8, "fnuz", saturates=True),
    DType.f8e5m2: FloatFormat(5, 2, 15, "ieee", saturates=True),
    DType.f8e5m2fnuz: FloatFormat(5, 2, 16, "fnuz", saturates=True),
    DType.f4e2m1: FloatFormat(2, 1, 1, "none", saturates=True),
}
FLOAT8_DTYPES = frozenset({DType.f8e4m3fn, DType.f8e4m3fnuz, DType.f8e5m2, DType.f8e5m2fnuz})
E8M0_NAN = 0xFF
NARROW_FLOAT_DTYPES = frozenset(FLOAT_FORMATS) | {DType.f8e8m0}
# bits, signed
NARROW_INT_BITS: dict[DType, tuple[int, bool]] = {DType.i4: (4, True), DType.u4: (4, False),
                                                  DType.i2: (2, True), DType.u2: (2, False)}
NARROW_INT_DTYPES = frozenset(NARROW_INT_BITS)
NARROW_DTYPES = NARROW_FLOAT_DTYPES | NARROW_INT_DTYPES


def f32_to_e8m0_codes(x: np.ndarray) -> np.ndarray:
    """Cast to f8e8m0 (round up, saturate) as uint8 codes (module docstring)."""
    bits = np.asarray(x, np.float32).view(np.uint32)
    exponent = ((bits >> 23) & 0xFF).astype(np.uint16)
    up = ((bits & 0x7FFFFF) != 0) & (exponent < 0xFE)
    return np.where(exponent == 0xFF, E8M0_NAN, exponent + up).astype(np.uint8)


def narrow_int_range(dtype: DType) -> tuple[int, int]:
    width, signed = NARROW_INT_BITS[dtype]
    return (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)


def _dtype_of(array: np.ndarray) -> DType | None:
    try:
        return DType.from_numpy(array.dtype)
    except ValueError:
        return None


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """Float -> int64 as onnxruntime casts to 4-/2-bit integers: round half away from zero, where
    the kernels' 32-bit intermediate overflows (or NaN) INT32_MIN."""
    xf = x.astype(np.float64)
    with np.errstate(all="ignore"):
        inside = (xf > -2.0 ** 31) & (xf < 2.0 ** 31)
        whole = np.trunc(np.where(inside, xf, 0.0))
        rounded = whole + (xf - whole >= 0.5) - (xf - whole <= -0.5)
    return np.where(inside, rounded, -2.0 ** 31).astype(np.int64)


def involves_narrow(x: np.ndarray, to: DType) -> bool:
    return to in NARROW_DTYPES or _dtype_of(x) in NARROW_DTYPES


def narrow_cast_array(x: np.ndarray, to: DType) -> np.ndarray:
    """Cast where the source or the target is a narrow type, as the kernels do (module docstring).
    Narrow sources widen exactly (floats to f32, integers to i8); a wide target then casts the
    usual way through `wide_cast`."""
    from iree_py.ir.ops.cast import cast_array as wide_cast
    src = _dtype_of(x)
    if src in NARROW_FLOAT_DTYPES:
        x = x.astype(np.float32)
    elif src in NARROW_INT_DTYPES:
        x = x.astype(np.int8)
    if to not in NARROW_DTYPES:
        return wide_cast(x, to)
    if to == DType.bool:
        return x != 0
    if to in NARROW_INT_DTYPES:
        if x.dtype == np.bool_:
            x = x.astype(np.int8)
        wide = _round_half_away(x) if x.dtype.kind == "f" else x.astype(np.int64)
        width, _ = NARROW_INT_BITS[to]
        bits = (np.asarray(wide).astype(np.int64) & ((1 << width) - 1)).astype(np.uint8)
        return bits.view(to.numpy) if to.numpy.itemsize == 1 else bits.astype(to.numpy)
    if to == DType.f8e8m0:
        return f32_to_e8m0_codes(x.astype(np.float32)).view(to.numpy)
    fmt = FLOAT_FORMATS[to]
    if x.dtype.kind != "f":
        x = x.astype(np.float32)  # ints: exact for every value a narrow float can tell apart
    if x.dtype == np.float64:
        x = x.astype(np.float32)  # the kernels convert f64 to f32 first as well
    with np.errstate(all="ignore"):
        if fmt.saturates:  # saturate=0 is a Where around this Cast (frontends/onnx/dtypes.py)
            x = np.clip(x, -fmt.max_value, fmt.max_value)  # NaN stays NaN
        result = x.astype(to.numpy)
    if to == DType.f4e2m1:
        result = np.where(np.isnan(x), np.array(fmt.sign_bit, np.uint8).view(to.numpy), result)
    return result
