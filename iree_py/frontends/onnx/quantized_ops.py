"""ONNX QLinearConv, QLinearMatMul, ConvInteger and MatMulInteger -> the quantized IR ops (docs/ir.md,
"Quantized ops"), as onnxruntime computes them.

QLinearConv and QLinearMatMul with constant weights: QConv / QMatMul with onnxruntime's float
requantization (f32(acc) * (x_scale * w_scale / y_scale), rounded half to even); their scales and
zero points must be constants. ConvInteger / MatMulInteger become the IR ops of the same names
(int32 accumulation, int32 results: the qconv / qmatmul kernels without requantization, for any
reduction depth); their zero points are 1-D tensor operands, constant or computed.

QLinearMatMul / QLinearConv with a run-time b / w: the IR's MatMulInteger / ConvInteger accumulate
(a - a_zp) * (b - b_zp) in int32 for any depth (QLinearConv's int32 bias added in int32), then
f32(acc) * (a_scale * b_scale / y_scale), + y_zp, Round (half to even), Clip, Cast, as onnxruntime
requantizes. float16 scales: the multiplier is formed in float32 and rounded to float16
after each step (exact for the product; the quotient is correctly rounded since 24 >= 2*11 + 2).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx.compose import Converter
from iree_py.frontends.onnx.conv import _window_attrs
from iree_py.frontends.onnx.quantization import QRANGE, QUANT_NUMPY, _quant_dtype, _scales, _zero_points
from iree_py.ir.graph import Value

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


def _float_requant(ctx: "OnnxContext", x_scale_in: int, w_scale_in: int, y_scale_in: int, x_dtype: str,
                   w_dtype: str, channels: int) -> dict:
    """The requantization attributes of onnxruntime's QLinear ops: scale = x_scale * w_scale / y_scale
    in float32, full output range."""
    x_scale, w_scales, y_scale = (_scales(ctx, i, what) for i, what in
                                  ((x_scale_in, "x_scale"), (w_scale_in, "w_scale"), (y_scale_in, "y_scale")))
    if len(x_scale) != 1 or len(y_scale) != 1:
        raise ctx.error(f"x_scale {x_scale} and y_scale {y_scale} must be per tensor")
    if len(w_scales) not in (1, channels):
        raise ctx.error(f"w_scale has {len(w_scales)} values; expected 1 or {channels} (output channels)")
    y_zp_in = y_scale_in + 1
    if not ctx.has_input(y_zp_in):
        y_dtype = "u8"
    else:
        y_dtype = QUANT_NUMPY.get(ctx.const_input(y_zp_in, "y_zero_point").dtype)
        if y_dtype is None:
            raise ctx.error("y_zero_point must be int8 or uint8")
    x_zp = _zero_points(ctx, x_scale_in + 1, 1, x_dtype, "x_zero_point")[0]
    w_zp = _zero_points(ctx, w_scale_in + 1, len(w_scales), w_dtype, "w_zero_point")
    y_zp = _zero_points(ctx, y_zp_in, 1, y_dtype, "y_zero_point")[0]
    scales = [float(np.float32(x_scale[0]) * np.float32(w) / np.float32(y_scale[0])) for w in w_scales]
    qmin, qmax = QRANGE[y_dtype]
    return {"x_zero_point": x_zp, "w_zero_point": w_zp, "y_zero_point": y_zp, "out_dtype": y_dtype,
            "act_min": qmin, "act_max": qmax, "requant": "float", "multiplier": [], "shift": [], "scale": scales}


def _bias(ctx: "OnnxContext", i: int) -> list[Value]:
    if not ctx.has_input(i):
        return []
    b = ctx.input(i)
    if b.type.dtype.value != "i32":
        raise ctx.error(f"bias '{b.name}' is {b.type}; expected int32")
    return [b]


def _qlinear_conv_constant(ctx: "OnnxContext") -> list[Value]:

    x, w = ctx.input(0), ctx.input(3)
    if x.type.rank != 4 or w.type.rank != 4:
        raise ctx.error(f"only 2-D QLinearConv is supported (input {x.type}, weight {w.type})")
    if not w.is_const:
        raise ctx.error(f"weight '{w.name}' must be a constant")
    kernel = [int(k) for k in ctx.attr("kernel_shape", list(w.type.shape[2:]))]
    attrs = _window_attrs(ctx, x, kernel, allow_dilations=True)
    attrs["group"] = int(ctx.attr("group", 1))
    attrs.update(_float_requant(ctx, 1, 4, 6, _quant_dtype(ctx, x, "input x"), _quant_dtype(ctx, w, "weight w"),
                                int(w.type.shape[0])))
    return [ctx.emit("QConv", [x, w, *_bias(ctx, 8)], attrs, out=0)]


def _qlinear_matmul_constant(ctx: "OnnxContext") -> list[Value]:
    a, b = ctx.input(0), ctx.input(3)
    if not b.is_const:
        raise ctx.error(f"b '{b.name}' must be a constant")
    if a.type.rank < 2 or b.type.rank != 2:
        raise ctx.error(f"QLinearMatMul needs a of rank >= 2 and a 2-D constant b, got {a.type} and {b.type}")
    attrs = _float_requant(ctx, 1, 4, 6, _quant_dtype(ctx, a, "input a"), _quant_dtype(ctx, b, "input b"),
                           int(b.type.shape[1]))
    return [ctx.emit("QMatMul", [a, b], attrs, out=0)]


def integer_zero_point(ctx: "OnnxContext", zp: Value | None, data: Value, what: str) -> Value:
    """A zero point operand of the IR's ConvInteger / MatMulInteger: 1-D, data's dtype; [0] when
    absent, a scalar reshaped to [1]. The op's shape rule checks how many values it has."""
    if data.type.dtype.value not in QRANGE:
        raise ctx.error(f"'{data.name}' is {data.type}; only int8 and uint8 are supported")
    if zp is None:
        return ctx.const(np.zeros(1, data.type.dtype.numpy), what)
    if zp.type.dtype != data.type.dtype or zp.type.rank > 1:
        raise ctx.error(f"{what} '{zp.name}' is {zp.type}; expected a scalar or 1-D {data.type.dtype.value} "
                        f"(the dtype of '{data.name}')")
    return zp if zp.type.rank == 1 else ctx.emit("Reshape", [zp], {"shape": [1]})


def integer_conv(ctx: "OnnxContext", x: Value, w: Value, x_zp: Value | None, w_zp: Value | None,
                 out: int | None = None) -> Value:
    """int32 sums of (x - x_zp) * (w - w_zp[m]) over each window (the IR's ConvInteger), with the
    node's window attributes; named after the node's output `out` when given."""

    if x.type.rank != 4 or w.type.rank != 4:
        raise ctx.error(f"only 2-D convolutions are supported (input {x.type}, weight {w.type})")
    kernel = [int(k) for k in ctx.attr("kernel_shape", list(w.type.shape[2:]))]
    attrs = _window_attrs(ctx, x, kernel, allow_dilations=True)
    attrs["group"] = int(ctx.attr("group", 1))
    zero_points = [integer_zero_point(ctx, x_zp, x, "x_zero_point"), integer_zero_point(ctx, w_zp, w, "w_zero_point")]
    return ctx.emit("ConvInteger", [x, w, *zero_points], attrs, out=out)


def integer_matmul(ctx: "OnnxContext", a: Value, b: Value, a_zp: Value | None, b_zp: Value | None,
                   out: int | None = None) -> Value:
    """int32 (a - a_zp) @ (b - b_zp) (the IR's MatMulInteger): a_zp per tensor or per row, b_zp per
    tensor or per column. Batch dims broadcast as numpy's matmul: a batched b gets a's batch dims
    (Expand where they differ)."""
    if a.type.rank < 2 or b.type.rank < 2:
        raise ctx.error(f"operands must have rank >= 2, got {a.type} and {b.type}")
    zero_points = [integer_zero_point(ctx, a_zp, a, "a_zero_point"), integer_zero_point(ctx, b_zp, b, "b_zero_point")]
    a_batch, b_batch = tuple(a.type.shape[:-2]), tuple(b.type.shape[:-2])
    if b.type.rank > 2 and a_batch != b_batch:
        if not all(isinstance(d, int) for d in (*a_batch, *b_batch)):
            raise ctx.error(f"batch dims of {a.type} and {b.type} must be equal when they are symbolic")
        try:
            batch = [int(d) for d in np.broadcast_shapes(a_batch, b_batch)]
        except ValueError:
            raise ctx.error(f"batch dims of {a.type} and {b.type} do not broadcast") from None
        if list(a_batch) != batch:
            a = ctx.emit("Expand", [a], {"shape": [*batch, *a.type.shape[-2:]]})
        if list(b_batch) != batch:
            b = ctx.emit("Expand", [b], {"shape": [*batch, *b.type.shape[-2:]]})
    return ctx.emit("MatMulInteger", [a, b, *zero_points], out=out)


def _optional(ctx: "OnnxContext", i: int) -> Value | None:
    return ctx.input(i) if ctx.has_input(i) else None


def conv_integer(ctx: "OnnxContext") -> list[Value]:
    """int32 = Conv(x - x_zero_point, w - w_zero_point), accumulated in int32."""
    return [integer_conv(ctx, ctx.input(0), ctx.input(1), _optional(ctx, 2), _optional(ctx, 3), out=0)]


def matmul_integer(ctx: "OnnxContext") -> list[Value]:
    """int32 = MatMul(a - a_zero_point, b - b_zero_point), accumulated in int32."""
    return [integer_matmul(ctx, ctx.input(0), ctx.input(1), _optional(ctx, 2), _optional(ctx, 3), out=0)]


# --- QLinearConv / QLinearMatMul with a weight given at run time ------------------------------------

def _per_tensor(ctx: "OnnxContext", i: int, what: str) -> Value:
    v = ctx.input(i)
    if v.type.num_elements != 1:
        raise ctx.error(f"{what} '{v.name}' is {v.type}; only a per-tensor value is supported with a run-time weight")
    return v if v.type.rank == 0 else ctx.emit("Reshape", [v], {"shape": []})


def _channel_param(ctx: "OnnxContext", i: int, what: str, channels: int, shape: list[int]) -> Value:
    """A per-tensor or per-channel (`channels` values) parameter reshaped to broadcast (`shape`)."""
    v = ctx.input(i)
    if v.type.num_elements == 1:
        return _per_tensor(ctx, i, what)
    if v.type.rank != 1 or v.type.num_elements != channels:
        raise ctx.error(f"{what} '{v.name}' is {v.type}; expected 1 or {channels} values")
    return ctx.emit("Reshape", [v], {"shape": shape})


def _zp(ctx: "OnnxContext", i: int) -> Value | None:
    return ctx.input(i) if ctx.has_input(i) else None


def _multiplier(ctx: "OnnxContext", a_scale: Value, b_scale: Value, y_scale: Value) -> Value:
    """a_scale * b_scale / y_scale in the scales' dtype (f32, or f16 rounded per step), as float32."""
    dtype = a_scale.type.dtype.value
    if dtype not in ("f32", "f16") or b_scale.type.dtype.value != dtype or y_scale.type.dtype.value != dtype:
        raise ctx.error(f"scales are {a_scale.type}, {b_scale.type}, {y_scale.type}; expected all float32 or "
                        "all float16")
    if dtype == "f32":
        return ctx.emit("Div", [ctx.emit("Mul", [a_scale, b_scale]), y_scale])

    def f32(v: Value) -> Value:
        return ctx.emit("Cast", [v], {"to": "f32"})

    def f16(v: Value) -> Value:
        return ctx.emit("Cast", [v], {"to": "f16"})

    product = f16(ctx.emit("Mul", [f32(a_scale), f32(b_scale)]))
    return f32(f16(ctx.emit("Div", [f32(product), f32(y_scale)])))


def _requantize(ctx: "OnnxContext", acc: Value, multiplier: Value, y_zp_in: int, fallback_dtype: str) -> Value:
    y = ctx.emit("Mul", [acc, multiplier])
    if ctx.has_input(y_zp_in):
        zp = _per_tensor(ctx, y_zp_in, "y_zero_point")
        dtype = zp.type.dtype.value
        y = ctx.emit("Add", [y, ctx.emit("Cast", [zp], {"to": "f32"})])
    else:
        dtype = fallback_dtype
    if dtype not in QRANGE:
        raise ctx.error(f"the output would be {dtype}; only int8 and uint8 outputs are supported")
    low, high = QRANGE[dtype]
    y = ctx.emit("Clip", [ctx.emit("Round", [y])], {"min": float(low), "max": float(high)})
    return ctx.emit("Cast", [y], {"to": dtype}, out=0)


def _check_8bit(ctx: "OnnxContext", v: Value, what: str) -> None:
    if v.type.dtype.value not in QRANGE:
        raise ctx.error(f"{what} '{v.name}' is {v.type}; only int8 and uint8 are supported")


def qlinear_matmul(ctx: "OnnxContext") -> list[Value]:
    a, b = ctx.input(0), ctx.input(3)
    if b.is_const:
        return _qlinear_matmul_constant(ctx)
    _check_8bit(ctx, a, "a")
    _check_8bit(ctx, b, "b")
    acc = integer_matmul(ctx, a, b, _zp(ctx, 2), _zp(ctx, 5))
    columns = int(b.type.shape[-1])
    m = _multiplier(ctx, _per_tensor(ctx, 1, "a_scale"), _channel_param(ctx, 4, "b_scale", columns, [columns]),
                    _per_tensor(ctx, 6, "y_scale"))
    return [_requantize(ctx, ctx.emit("Cast", [acc], {"to": "f32"}), m, 7, a.type.dtype.value)]


def qlinear_conv(ctx: "OnnxContext") -> list[Value]:
    x, w = ctx.input(0), ctx.input(3)
    if w.is_const:
        return _qlinear_conv_constant(ctx)
    _check_8bit(ctx, x, "x")
    _check_8bit(ctx, w, "w")
    channels = int(w.type.shape[0]) if w.type.rank == 4 else 0
    acc = integer_conv(ctx, x, w, _zp(ctx, 2), _zp(ctx, 5))
    if ctx.has_input(8):
        bias = ctx.input(8)
        if bias.type.dtype.value != "i32" or tuple(bias.type.shape) != (channels,):
            raise ctx.error(f"bias '{bias.name}' is {bias.type}; expected int32 [{channels}]")
        acc = ctx.emit("Add", [acc, ctx.emit("Reshape", [bias], {"shape": [1, channels, 1, 1]})])  # wraps, as int32
    m = _multiplier(ctx, _per_tensor(ctx, 1, "x_scale"),
                    _channel_param(ctx, 4, "w_scale", channels, [1, channels, 1, 1]), _per_tensor(ctx, 6, "y_scale"))
    return [_requantize(ctx, ctx.emit("Cast", [acc], {"to": "f32"}), m, 7, x.type.dtype.value)]


CONVERTERS: dict[str, Converter] = {
    "QLinearConv": qlinear_conv,
    "QLinearMatMul": qlinear_matmul,
    "ConvInteger": conv_integer,
    "MatMulInteger": matmul_integer,
}
