"""Cast and BitCast: shape rules and numpy references.

Cast follows onnxruntime on x86-64 (docs/ir.md); the narrow storage types (bf16, float8, 4-/2-bit
integers) convert through iree_py/ir/narrow_types.py. BitCast keeps the bytes and reads them as
`to`, a dtype of the same element size.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.ir.narrow_types import NARROW_DTYPES, involves_narrow, narrow_cast_array
from iree_py.ir.opdef import ANY_DTYPE, BOOL_DTYPES, NUMERIC_DTYPES, Kernel, OpDef
from iree_py.ir.types import DType, TensorType


def _cast(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    names = [d.value for d in DType]
    if attrs["to"] not in names:
        raise ValueError(f"Cast to {attrs['to']!r}: expected one of {names}")
    return [TensorType(DType(attrs["to"]), inputs[0].shape)]


def bitcast_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    names = [d.value for d in DType]
    if attrs["to"] not in names:
        raise ValueError(f"BitCast to {attrs['to']!r}: expected one of {names}")
    to = DType(attrs["to"])
    if to.itemsize != inputs[0].dtype.itemsize:
        raise ValueError(f"BitCast {inputs[0]} to {to.value}: element sizes differ")
    return [TensorType(to, inputs[0].shape)]


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


def _cast_kernel(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    return cast_array(ins[0], DType(attrs["to"]))


OP_DEFS = [
    OpDef("Cast", ("to",), 1, 1, _cast, elementwise=True, dtypes=NUMERIC_DTYPES | BOOL_DTYPES | NARROW_DTYPES),
    OpDef("BitCast", ("to",), 1, 1, bitcast_rule, dtypes=ANY_DTYPE),
]

KERNELS: dict[str, Kernel] = {
    "Cast": _cast_kernel,
    "BitCast": lambda ins, attrs: np.array(ins[0], order="C").view(DType(attrs["to"]).numpy),
}
