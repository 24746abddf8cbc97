"""QLookup: an int8/uint8 elementwise function given as a 256-entry table (TFLite's LUT kernels).

    QLookup(x: i8 | u8) -> out_dtype, same shape
    attrs: table (256 ints in the output's range, indexed by the input's byte: x & 0xFF), out_dtype

TFLite's int8/uint8 LOGISTIC and TANH (reference resolver included) evaluate a table that Prepare
fills in float32: q_out = clamp(round(f(scale_in * (q - zp_in)) / scale_out) + zp_out). `lookup_table`
builds the same table at compile time; the kernel only indexes it (no float at run time).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from iree_py.ir.opdef import OpDef
from iree_py.ir.types import DType, TensorType

QLOOKUP_DTYPES = frozenset({DType.i8, DType.u8})
QRANGE = {"i8": (-128, 127), "u8": (0, 255)}


def lookup_table(dtype: str, in_scale: float, in_zero_point: int, out_scale: float, out_zero_point: int,
                 transform: Callable[[np.ndarray], np.ndarray]) -> list[int]:
    """TFLite's LUTPopulate: float32 dequantize, transform, multiply by 1/out_scale, round half away
    from zero, add the zero point, clamp. Entry i is the result for the byte i (x & 0xFF)."""
    low, high = QRANGE[dtype]
    values = np.arange(low, high + 1, dtype=np.int64)
    dequantized = np.float32(in_scale) * (values - in_zero_point).astype(np.float32)
    transformed = transform(dequantized).astype(np.float32)
    scaled = transformed * (np.float32(1.0) / np.float32(out_scale))
    rounded = np.sign(scaled) * np.floor(np.abs(scaled).astype(np.float64) + 0.5)
    quantized = np.clip(rounded.astype(np.int64) + out_zero_point, low, high)
    table = [0] * 256
    for v, q in zip(values.tolist(), quantized.tolist()):
        table[v & 0xFF] = int(q)
    return table


def _qlookup(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = inputs[0]
    if x.dtype not in QLOOKUP_DTYPES:
        raise ValueError(f"QLookup input must be i8 or u8, got {x}")
    out = attrs["out_dtype"]
    if out not in QRANGE:
        raise ValueError(f"QLookup out_dtype {out!r}: expected 'i8' or 'u8'")
    table = list(attrs["table"])
    low, high = QRANGE[out]
    if len(table) != 256 or any(not low <= int(v) <= high for v in table):
        raise ValueError(f"QLookup table must hold 256 values in [{low}, {high}], got {len(table)} values")
    return [TensorType(DType(out), x.shape)]


def qlookup(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    table = np.asarray(attrs["table"], dtype=np.int64)
    y = table[ins[0].view(np.uint8).astype(np.int64)]
    return y.astype(np.int8 if attrs["out_dtype"] == "i8" else np.uint8)


QLOOKUP_OP_DEFS = [OpDef("QLookup", ("out_dtype", "table"), 1, 1, _qlookup, elementwise=False, dtypes=QLOOKUP_DTYPES)]
QLOOKUP_KERNELS = {"QLookup": qlookup}
