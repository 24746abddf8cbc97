"""The quantized ops (docs/ir.md, "Quantized ops"): Quantize, Dequantize, QConv, QMatMul, ConvInteger,
MatMulInteger, QAdd, QAveragePool and QLookup: shape rules and bit-exact numpy references.

Every rule checks each operand's dtype and every attribute (ranges of zero points, per-channel
list lengths, requantization mode), so a frontend's mistake is caught at import with its node name.
The references compute accumulators exactly in int64 and wrap them to int32, as the generated
kernels do; requantization uses quant_math.py (TFLite's fixed-point helpers, onnxruntime's float
requant).

QLookup: an int8/uint8 elementwise function given as a 256-entry table (TFLite's LUT kernels).

    QLookup(x: i8 | u8) -> out_dtype, same shape
    attrs: table (256 ints in the output's range, indexed by the input's byte: x & 0xFF), out_dtype

TFLite's int8/uint8 LOGISTIC and TANH (reference resolver included) evaluate a table that Prepare
fills in float32: q_out = clamp(round(f(scale_in * (q - zp_in)) / scale_out) + zp_out). `lookup_table`
builds the same table at compile time; the kernel only indexes it (no float at run time).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from iree_py.ir import quant_math as qm
from iree_py.ir.dim_checks import require_equal, same_dims
from iree_py.ir.opdef import Kernel, OpDef, pool_output_dim, pool_output_size, pool_rule
from iree_py.ir.quant_math import QRANGE
from iree_py.ir.types import Dim, DType, TensorType


QUANT_DTYPES = frozenset({DType.i8, DType.u8})


ROUNDINGS = ("half_even", "half_away")


REQUANT_MODES = ("fixed", "float")


REQUANT_ATTRS = ("act_max", "act_min", "multiplier", "out_dtype", "requant", "scale", "shift", "w_zero_point",
                 "x_zero_point", "y_zero_point")


QADD_ATTRS = ("a_multiplier", "a_shift", "a_zero_point", "act_max", "act_min", "b_multiplier", "b_shift",
              "b_zero_point", "left_shift", "out_dtype", "y_multiplier", "y_shift", "y_zero_point")


def _static(t: TensorType) -> tuple[int, ...]:
    if not t.is_static:
        raise ValueError(f"shape {t} is not static")
    return tuple(int(d) for d in t.shape)


def _quant_dtype(t: TensorType, what: str) -> str:
    if t.dtype not in QUANT_DTYPES:
        raise ValueError(f"{what} must be i8 or u8, got {t}")
    return t.dtype.value


def _out_dtype(attrs: dict[str, Any]) -> DType:
    name = attrs["out_dtype"]
    if name not in QRANGE:
        raise ValueError(f"out_dtype must be one of {sorted(QRANGE)}, got {name!r}")
    return DType(name)


def _in_range(value: Any, dtype: str, what: str) -> None:
    lo, hi = QRANGE[dtype]
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not lo <= value <= hi:
        raise ValueError(f"{what} must be an integer in [{lo}, {hi}] ({dtype}), got {value!r}")


def _per_channel(values: Any, channels: int, what: str) -> list:
    if not isinstance(values, (list, tuple)) or len(values) not in (1, channels):
        raise ValueError(f"{what} must be a list of 1 or {channels} values, got {values!r}")
    return list(values)


def _check_act(attrs: dict[str, Any], dtype: str) -> None:
    _in_range(attrs["act_min"], dtype, "act_min")
    _in_range(attrs["act_max"], dtype, "act_max")
    if attrs["act_min"] > attrs["act_max"]:
        raise ValueError(f"act_min {attrs['act_min']} > act_max {attrs['act_max']}")


def _check_shift(shifts: list, low: int, high: int, what: str) -> None:
    for s in shifts:
        if not isinstance(s, (int, np.integer)) or not low <= s <= high:
            raise ValueError(f"{what} entries must be integers in [{low}, {high}], got {shifts}")


def _check_multipliers(values: list, what: str) -> None:
    for m in values:
        if not isinstance(m, (int, np.integer)) or not 0 <= m <= 2**31 - 1:
            raise ValueError(f"{what} entries must be Q31 integers in [0, 2**31 - 1], got {values}")


def _check_requant(attrs: dict[str, Any], x_dtype: str, w_dtype: str, channels: int) -> DType:
    """The requantization attributes of QConv/QMatMul; returns the output dtype."""
    out = _out_dtype(attrs)
    _in_range(attrs["x_zero_point"], x_dtype, "x_zero_point")
    for zp in _per_channel(attrs["w_zero_point"], channels, "w_zero_point"):
        _in_range(zp, w_dtype, "w_zero_point entry")
    _in_range(attrs["y_zero_point"], out.value, "y_zero_point")
    _check_act(attrs, out.value)
    mode = attrs["requant"]
    if mode == "fixed":
        mult = _per_channel(attrs["multiplier"], channels, "multiplier")
        shift = _per_channel(attrs["shift"], channels, "shift")
        if len(mult) != len(shift):
            raise ValueError(f"multiplier {mult} and shift {shift} must have the same length")
        _check_multipliers(mult, "multiplier")
        _check_shift(shift, -31, 30, "shift")
        if list(attrs["scale"]) != []:
            raise ValueError(f"requant 'fixed' takes scale [], got {attrs['scale']!r}")
    elif mode == "float":
        for s in _per_channel(attrs["scale"], channels, "scale"):
            if not isinstance(s, float) or not np.isfinite(s) or s <= 0:
                raise ValueError(f"scale entries must be finite positive floats, got {attrs['scale']!r}")
        if list(attrs["multiplier"]) != [] or list(attrs["shift"]) != []:
            raise ValueError(f"requant 'float' takes multiplier [] and shift [], got {attrs['multiplier']!r} "
                             f"and {attrs['shift']!r}")
    else:
        raise ValueError(f"requant must be one of {list(REQUANT_MODES)}, got {mode!r}")
    return out


def _check_bias(inputs: list[TensorType], channels: int) -> None:
    if len(inputs) == 3 and inputs[2] is not None:
        if inputs[2].dtype != DType.i32 or _static(inputs[2]) != (channels,):
            raise ValueError(f"bias must be i32 [{channels}], got {inputs[2]}")


def _check_scales(attrs: dict[str, Any], shape: tuple[int, ...], dtype: str) -> None:
    """scale / zero_point / axis of Quantize and Dequantize."""
    axis = attrs["axis"]
    if not isinstance(axis, int) or not (axis == -1 or 0 <= axis < len(shape)):
        raise ValueError(f"axis must be -1 (per tensor) or in [0, {len(shape)}), got {axis!r}")
    channels = 1 if axis == -1 else shape[axis]
    scales = _per_channel(attrs["scale"], channels, "scale")
    zero_points = _per_channel(attrs["zero_point"], channels, "zero_point")
    if len(scales) != len(zero_points):
        raise ValueError(f"scale {scales} and zero_point {zero_points} must have the same length")
    for s in scales:
        if not isinstance(s, float) or not np.isfinite(s) or s <= 0:
            raise ValueError(f"scale entries must be finite positive floats, got {scales}")
    for zp in zero_points:
        if dtype == "i32":
            if not isinstance(zp, (int, np.integer)) or not -2**31 <= zp < 2**31:
                raise ValueError(f"zero_point entries must be i32 integers, got {zero_points}")
        else:
            _in_range(zp, dtype, "zero_point entry")


def _quantize(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = inputs[0]
    if x.dtype != DType.f32:
        raise ValueError(f"Quantize input must be f32, got {x}")
    dtype = attrs["dtype"]
    if dtype not in QRANGE:
        raise ValueError(f"Quantize dtype must be one of {sorted(QRANGE)}, got {dtype!r}")
    if attrs["rounding"] not in ROUNDINGS:
        raise ValueError(f"Quantize rounding must be one of {list(ROUNDINGS)}, got {attrs['rounding']!r}")
    _check_scales(attrs, _static(x), dtype)
    return [TensorType(DType(dtype), x.shape)]


def _dequantize(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = inputs[0]
    if x.dtype not in (DType.i8, DType.u8, DType.i32):
        raise ValueError(f"Dequantize input must be i8, u8 or i32, got {x}")
    _check_scales(attrs, _static(x), x.dtype.value)
    return [TensorType(DType.f32, x.shape)]


def _window_output(x_t: TensorType, w_t: TensorType, attrs: dict[str, Any], op: str) -> tuple[Dim, ...]:
    """[N, M, OH, OW] of QConv / ConvInteger: X [N, C, H, W] (dims may be symbolic), W [M, C/group, KH, KW]
    static."""
    x, w = x_t.shape, _static(w_t)
    if len(x) != 4 or len(w) != 4:
        raise ValueError(f"{op} wants X rank 4 and W rank 4, got {x_t} and {w_t}")
    group = attrs["group"]
    if group < 1 or w[0] % group:
        raise ValueError(f"{op} channels: input {x[1]}, weight {w}, group {group} do not match")
    try:
        require_equal(x[1], w[1] * group, f"{op} input channels")
    except ValueError:
        raise ValueError(f"{op} channels: input {x[1]}, weight {w}, group {group} do not match") from None
    (sh, sw), (pt, pl, pb, pr), (dh, dw) = attrs["strides"], attrs["pads"], attrs["dilations"]
    oh = pool_output_dim(x[2], w[2], sh, pt, pb, dh, 0)
    ow = pool_output_dim(x[3], w[3], sw, pl, pr, dw, 0)
    return (x[0], w[0], oh, ow)


def _matmul_output(a_t: TensorType, b_t: TensorType, op: str) -> tuple[Dim, ...]:
    """[..., M, N] of QMatMul / MatMulInteger: A [..., M, K]; B [K, N], or [..., K, N] with A's batch
    dims (each batch its own B). Dims may be symbolic."""
    a, b = a_t.shape, b_t.shape
    if len(a) < 2 or len(b) < 2 or (len(b) > 2 and len(b) != len(a)):
        raise ValueError(f"{op} wants A of rank >= 2 and B of rank 2 or A's rank, got {a_t} and {b_t}")
    try:
        require_equal(a[-1], b[-2], f"{op} inner dims")
    except ValueError:
        raise ValueError(f"{op} inner dims differ: {a_t} x {b_t}") from None
    if len(b) > 2:
        same_dims(a[:-2], b[:-2], f"{op} batch dims of A and B")
    return (*a[:-1], b[-1])


def _qconv(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x_dtype = _quant_dtype(inputs[0], "QConv input X")
    w_dtype = _quant_dtype(inputs[1], "QConv weight W")
    shape = _window_output(inputs[0], inputs[1], attrs, "QConv")
    m = int(shape[1])
    _check_bias(inputs, m)
    out = _check_requant(attrs, x_dtype, w_dtype, m)
    return [TensorType(out, shape)]


def _qmatmul(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    a_dtype = _quant_dtype(inputs[0], "QMatMul input A")
    b_dtype = _quant_dtype(inputs[1], "QMatMul input B")
    if inputs[1].rank != 2:
        raise ValueError(f"QMatMul wants A of rank >= 2 and B of rank 2, got {inputs[0]} and {inputs[1]}")
    shape = _matmul_output(inputs[0], inputs[1], "QMatMul")
    n = _static(inputs[1])[1]
    _check_bias(inputs, n)
    out = _check_requant(attrs, a_dtype, b_dtype, n)
    return [TensorType(out, shape)]


def _zero_point_operand(zp: TensorType, data: TensorType, counts: tuple[Dim, ...], what: str) -> None:
    """A zero point tensor of ConvInteger / MatMulInteger: 1-D, the dtype of its data operand, with one
    of `counts` values (1: per tensor; a dim: per channel, row or column)."""
    if zp.dtype != data.dtype or zp.rank != 1 or not zp.is_static:
        raise ValueError(f"{what} must be a static 1-D {data.dtype.value} tensor, got {zp}")
    count = int(zp.shape[0])
    if count == 1:
        return
    wanted = [c for c in counts if c != 1]
    if not wanted:
        raise ValueError(f"{what} must have 1 value, got {zp}")
    require_equal(count, wanted[0], f"{what} length")


def _conv_integer(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    """ConvInteger: X, W i8/u8, x_zero_point [1] (X's dtype), w_zero_point [1] or [M] (W's dtype) -> i32."""
    _quant_dtype(inputs[0], "ConvInteger input X")
    _quant_dtype(inputs[1], "ConvInteger weight W")
    shape = _window_output(inputs[0], inputs[1], attrs, "ConvInteger")
    _zero_point_operand(inputs[2], inputs[0], (1,), "ConvInteger x_zero_point")
    _zero_point_operand(inputs[3], inputs[1], (shape[1],), "ConvInteger w_zero_point")
    return [TensorType(DType.i32, shape)]


def _matmul_integer(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    """MatMulInteger: A, B i8/u8, a_zero_point [1] or [M] (per row), b_zero_point [1] or [N] (per column) -> i32."""
    _quant_dtype(inputs[0], "MatMulInteger input A")
    _quant_dtype(inputs[1], "MatMulInteger input B")
    shape = _matmul_output(inputs[0], inputs[1], "MatMulInteger")
    _zero_point_operand(inputs[2], inputs[0], (inputs[0].shape[-2],), "MatMulInteger a_zero_point")
    _zero_point_operand(inputs[3], inputs[1], (inputs[1].shape[-1],), "MatMulInteger b_zero_point")
    return [TensorType(DType.i32, shape)]


def _qadd(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    a_dtype = _quant_dtype(inputs[0], "QAdd input A")
    b_dtype = _quant_dtype(inputs[1], "QAdd input B")
    out = _out_dtype(attrs)
    _in_range(attrs["a_zero_point"], a_dtype, "a_zero_point")
    _in_range(attrs["b_zero_point"], b_dtype, "b_zero_point")
    _in_range(attrs["y_zero_point"], out.value, "y_zero_point")
    _check_act(attrs, out.value)
    _check_shift([attrs["left_shift"]], 0, 20, "left_shift")
    _check_multipliers([attrs["a_multiplier"], attrs["b_multiplier"], attrs["y_multiplier"]], "QAdd multipliers")
    _check_shift([attrs["a_shift"], attrs["b_shift"], attrs["y_shift"]], -31, 0, "QAdd shifts (a, b, y)")
    try:
        shape = np.broadcast_shapes(_static(inputs[0]), _static(inputs[1]))
    except ValueError:
        raise ValueError(f"shapes {inputs[0]} and {inputs[1]} do not broadcast") from None
    return [TensorType(out, tuple(int(d) for d in shape))]


def _qavgpool(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    dtype = _quant_dtype(inputs[0], "QAveragePool input")
    _check_act(attrs, dtype)
    return pool_rule(inputs, attrs)


QLOOKUP_DTYPES = frozenset({DType.i8, DType.u8})


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


# --- numpy reference -------------------------------------------------------------------------------

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
    from iree_py.ir.ops.conv import _pad_nchw, _windows  # conv.py imports this module
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
    from iree_py.ir.ops.conv import _pad_nchw, _windows  # conv.py imports this module
    from iree_py.ir.ops.pool import _pool_out_hw, _pool_padded_extent
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


def qlookup(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    table = np.asarray(attrs["table"], dtype=np.int64)
    y = table[ins[0].view(np.uint8).astype(np.int64)]
    return y.astype(np.int8 if attrs["out_dtype"] == "i8" else np.uint8)


OP_DEFS = [
    OpDef("Quantize", ("axis", "dtype", "rounding", "scale", "zero_point"), 1, 1, _quantize),
    OpDef("Dequantize", ("axis", "scale", "zero_point"), 1, 1, _dequantize,
          dtypes=frozenset({DType.i8, DType.u8, DType.i32})),
    OpDef("QConv", ("dilations", "group", "pads", "strides", *REQUANT_ATTRS), 2, 3, _qconv, dtypes=QUANT_DTYPES),
    OpDef("QMatMul", REQUANT_ATTRS, 2, 3, _qmatmul, dtypes=QUANT_DTYPES),
    OpDef("ConvInteger", ("dilations", "group", "pads", "strides"), 4, 4, _conv_integer, dtypes=QUANT_DTYPES),
    OpDef("MatMulInteger", (), 4, 4, _matmul_integer, dtypes=QUANT_DTYPES),
    OpDef("QAdd", QADD_ATTRS, 2, 2, _qadd, dtypes=QUANT_DTYPES),
    OpDef("QAveragePool", ("act_max", "act_min", "ceil_mode", "count_include_pad", "kernel", "pads", "strides"),
          1, 1, _qavgpool, dtypes=QUANT_DTYPES),
    OpDef("QLookup", ("out_dtype", "table"), 1, 1, _qlookup, elementwise=False, dtypes=QLOOKUP_DTYPES),
]

KERNELS: dict[str, Kernel] = {
    "Quantize": quantize,
    "Dequantize": dequantize,
    "QConv": qconv,
    "QMatMul": qmatmul,
    "ConvInteger": conv_integer,
    "MatMulInteger": matmul_integer,
    "QAdd": qadd,
    "QAveragePool": qaverage_pool,
    "QLookup": qlookup,
}
