"""Bit-exact numpy reference kernels of the quantized ops (docs/ir.md, "Quantized ops").

Accumulators are computed exactly in int64 and wrapped to int32, as the generated kernels do;
requantization uses quant_math.py (TFLite's fixed-point helpers, onnxruntime's float requant).
Registered in reference.py's KERNELS; imports reference.py's window helpers inside functions
(reference.py reads `KERNELS` from here while it builds its own table).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.ir import quant_math as qm
from iree_py.ir.opdef import pool_output_size


def _channel_shape(ndim: int, axis: int) -> tuple[int, ...]:
    """Shape that lines a per-channel list up with `axis` of an ndim array (-1: per tensor)."""
    if axis == -1:
        return (1,) * ndim
    return tuple(-1 if i == axis else 1 for i in range(ndim))


def quantize(ins: list[np.ndarray], a: dict[str, Any]) -> np.ndarray:
    x = ins[0].astype(np.float32)
    shape = _channel_shape(x.ndim, a["axis"])
    scale = np.asarray(a["scale"], dtype=np.float32).reshape(shape)
    zero_point = np.asarray(a["zero_point"], dtype=np.int64).reshape(shape)
    with np.errstate(all="ignore"):
        v = x / scale  # in f32, as the kernel divides
    rounded = qm.round_half_even_f32(v) if a["rounding"] == "half_even" else qm.round_half_away_f32(v)
    lo, hi = qm.QRANGE[a["dtype"]]
    rounded = np.clip(np.nan_to_num(rounded, nan=0.0), lo - 2**20, hi + 2**20).astype(np.int64)
    return np.clip(rounded + zero_point, lo, hi).astype(np.dtype(np.int8 if a["dtype"] == "i8" else np.uint8))


def dequantize(ins: list[np.ndarray], a: dict[str, Any]) -> np.ndarray:
    x = ins[0]
    shape = _channel_shape(x.ndim, a["axis"])
    scale = np.asarray(a["scale"], dtype=np.float32).reshape(shape)
    zero_point = np.asarray(a["zero_point"], dtype=np.int64).reshape(shape)
    return qm.wrap_i32(x.astype(np.int64) - zero_point).astype(np.float32) * scale


def _requantize(acc: np.ndarray, a: dict[str, Any], channel_axis: int) -> np.ndarray:
    """int32 accumulators -> out_dtype with the requantization attributes (per channel on channel_axis)."""
    shape = _channel_shape(acc.ndim, channel_axis)
    if a["requant"] == "fixed":
        mult = np.asarray(a["multiplier"], dtype=np.int64).reshape(shape)
        shift = np.asarray(a["shift"], dtype=np.int64).reshape(shape)
        y = qm.requantize_fixed(acc, mult, shift) + a["y_zero_point"]
    else:
        scale = np.asarray(a["scale"], dtype=np.float32).reshape(shape)
        y = qm.requantize_float(acc, scale, a["y_zero_point"], a["act_min"], a["act_max"])
    y = np.clip(y, a["act_min"], a["act_max"])
    return y.astype(np.int8 if a["out_dtype"] == "i8" else np.uint8)


def _conv_accumulate(x: np.ndarray, w: np.ndarray, x_zp: np.ndarray | int, w_zp: np.ndarray, a: dict[str, Any]
                     ) -> np.ndarray:
    """sum((x - x_zp) * (w - w_zp[m])) over each window, exactly in int64 (padding holds the zero
    point: it contributes nothing). w_zp: 1 or M values."""
    from iree_py.ir.reference import _pad_nchw, _windows
    x, w = x.astype(np.int64), w.astype(np.int64)
    m, cg, kh, kw = w.shape
    group, pads, strides, dil = a["group"], a["pads"], a["strides"], a["dilations"]
    oh = pool_output_size(x.shape[2], kh, strides[0], pads[0], pads[2], dil[0], 0)
    ow = pool_output_size(x.shape[3], kw, strides[1], pads[1], pads[3], dil[1], 0)
    xs = np.ascontiguousarray(_pad_nchw(x - x_zp, pads, 0))
    ws = w - np.asarray(w_zp, dtype=np.int64).reshape(-1, 1, 1, 1)
    win = _windows(xs, (kh, kw), strides, dil, (oh, ow))
    mg = m // group
    return np.concatenate([np.einsum("nchwij,mcij->nmhw", win[:, g * cg:(g + 1) * cg], ws[g * mg:(g + 1) * mg])
                           for g in range(group)], axis=1)


def _matmul_accumulate(x: np.ndarray, w: np.ndarray, x_zp: np.ndarray | int, w_zp: np.ndarray) -> np.ndarray:
    """(x - x_zp) @ (w - w_zp) exactly in int64: x_zp per tensor or per row (M values), w_zp per
    tensor or per column (N values); w [K, N] or batched like x."""
    rows = np.asarray(x_zp, dtype=np.int64).reshape(-1, 1)
    return np.matmul(x.astype(np.int64) - rows, w.astype(np.int64) - np.asarray(w_zp, dtype=np.int64).reshape(1, -1))


def qconv(ins: list[np.ndarray], a: dict[str, Any]) -> np.ndarray:
    acc = _conv_accumulate(ins[0], ins[1], a["x_zero_point"], np.asarray(a["w_zero_point"]), a)
    if len(ins) == 3 and ins[2] is not None:
        acc = acc + ins[2].astype(np.int64).reshape(1, -1, 1, 1)
    return _requantize(qm.wrap_i32(acc), a, 1)


def qmatmul(ins: list[np.ndarray], a: dict[str, Any]) -> np.ndarray:
    acc = _matmul_accumulate(ins[0], ins[1], a["x_zero_point"], np.asarray(a["w_zero_point"]))
    if len(ins) == 3 and ins[2] is not None:
        acc = acc + ins[2].astype(np.int64)
    return _requantize(qm.wrap_i32(acc), a, acc.ndim - 1)


def conv_integer(ins: list[np.ndarray], a: dict[str, Any]) -> np.ndarray:
    """int32 (wrapping) sums of (x - x_zero_point) * (w - w_zero_point[m])."""
    return qm.wrap_i32(_conv_accumulate(ins[0], ins[1], ins[2].astype(np.int64), ins[3], a)).astype(np.int32)


def matmul_integer(ins: list[np.ndarray], a: dict[str, Any]) -> np.ndarray:
    return qm.wrap_i32(_matmul_accumulate(ins[0], ins[1], ins[2], ins[3])).astype(np.int32)


def qadd(ins: list[np.ndarray], a: dict[str, Any]) -> np.ndarray:
    smaller = qm.multiply_by_quantized_multiplier_smaller_than_one_exp
    shifted_a = qm.wrap_i32((ins[0].astype(np.int64) - a["a_zero_point"]) << a["left_shift"])
    shifted_b = qm.wrap_i32((ins[1].astype(np.int64) - a["b_zero_point"]) << a["left_shift"])
    scaled_a = smaller(shifted_a, a["a_multiplier"], a["a_shift"])
    scaled_b = smaller(shifted_b, a["b_multiplier"], a["b_shift"])
    raw = smaller(qm.wrap_i32(scaled_a + scaled_b), a["y_multiplier"], a["y_shift"]) + a["y_zero_point"]
    y = np.clip(raw, a["act_min"], a["act_max"])
    return y.astype(np.int8 if a["out_dtype"] == "i8" else np.uint8)


def qaverage_pool(ins: list[np.ndarray], a: dict[str, Any]) -> np.ndarray:
    """Sum of the raw values in the window / element count (counted as AveragePool counts them),
    rounded as TFLite: (sum +- count / 2) / count with C's truncating division."""
    from iree_py.ir.reference import _pad_nchw, _pool_out_hw, _pool_padded_extent, _windows
    x = ins[0]
    out_hw = _pool_out_hw(x, a)
    ext = _pool_padded_extent(x, a, out_hw)
    xp = np.ascontiguousarray(_pad_nchw(x.astype(np.int64), ext, 0))
    sums = _windows(xp, tuple(a["kernel"]), a["strides"], [1, 1], out_hw).sum(axis=(4, 5))
    pads, (h, w) = a["pads"], x.shape[2:]
    if a["count_include_pad"]:
        mask = _pad_nchw(np.zeros((1, 1, h, w), dtype=np.int64), pads, 0) + 1
    else:
        mask = _pad_nchw(np.ones((1, 1, h, w), dtype=np.int64), pads, 0)
    mask = np.ascontiguousarray(_pad_nchw(mask, [0, 0, ext[2] - pads[2], ext[3] - pads[3]], 0))
    counts = _windows(mask, tuple(a["kernel"]), a["strides"], [1, 1], out_hw).sum(axis=(4, 5))
    num = np.where(sums > 0, sums + counts // 2, sums - counts // 2)
    avg = np.sign(num) * (np.abs(num) // counts)
    return np.clip(avg, a["act_min"], a["act_max"]).astype(x.dtype)


KERNELS = {
    "Quantize": quantize,
    "Dequantize": dequantize,
    "QConv": qconv,
    "QMatMul": qmatmul,
    "ConvInteger": conv_integer,
    "MatMulInteger": matmul_integer,
    "QAdd": qadd,
    "QAveragePool": qaverage_pool,
}
