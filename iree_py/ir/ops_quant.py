"""Shape rules of the quantized ops (Quantize, Dequantize, QConv, QMatMul, ConvInteger, MatMulInteger,
QAdd, QAveragePool), registered in ops.py's table as QUANT_OP_DEFS. The semantics are in docs/ir.md ("Quantized ops");
the reference kernels in reference_quant.py.

Every rule checks each operand's dtype and every attribute (ranges of zero points, per-channel
list lengths, requantization mode), so a frontend's mistake is caught at import with its node name.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.ir.dim_checks import require_equal, same_dims
from iree_py.ir.opdef import OpDef, pool_output_dim, pool_rule
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


QUANT_OP_DEFS = [
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
]
