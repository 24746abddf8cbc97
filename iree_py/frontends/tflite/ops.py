"""TFLite builtin operator -> normalized ops: one converter per operator code, in CONVERTERS.

A converter reads the current operator through the context (`ctx.input`, `ctx.options`) and
returns the Values of the operator's outputs, in order, each with the declared output shape.
Float32 compute only; float16 constants behind DEQUANTIZE become float32 constants.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.frontends.tflite import reader
from iree_py.frontends.tflite.convt_ops import TFLITE_CONVT_CONVERTERS, TFLITE_CONVT_CUSTOM_CONVERTERS
from iree_py.frontends.tflite.control_flow_ops import if_ as tflite_if, while_ as tflite_while
from iree_py.frontends.tflite.indexing_ops import TFLITE_INDEXING_CONVERTERS
from iree_py.frontends.tflite.logic_ops import TFLITE_LOGIC_CONVERTERS
from iree_py.frontends.tflite.fully_connected import fully_connected_rows
from iree_py.frontends.tflite.layout import NCHW_AXIS_OF_NHWC, from_nchw, nchw_operands, to_nchw
from iree_py.frontends.tflite.quant_ops import converters as quant_converters
from iree_py.frontends.tflite.resize_pad_ops import TFLITE_RESIZE_PAD_CONVERTERS
from iree_py.frontends.tflite.sparsity import TFLITE_SPARSITY_CONVERTERS
from iree_py.frontends.tflite.state_ops import TFLITE_STATE_CONVERTERS
from iree_py.frontends.tflite.schema.ActivationFunctionType import ActivationFunctionType as Act
from iree_py.frontends.tflite.schema.AddOptions import AddOptionsT
from iree_py.frontends.tflite.schema.BatchMatMulOptions import BatchMatMulOptionsT
from iree_py.frontends.tflite.schema.BuiltinOperator import BuiltinOperator as B
from iree_py.frontends.tflite.schema.ConcatenationOptions import ConcatenationOptionsT
from iree_py.frontends.tflite.schema.Conv2DOptions import Conv2DOptionsT
from iree_py.frontends.tflite.schema.DepthwiseConv2DOptions import DepthwiseConv2DOptionsT
from iree_py.frontends.tflite.schema.DivOptions import DivOptionsT
from iree_py.frontends.tflite.schema.GeluOptions import GeluOptionsT
from iree_py.frontends.tflite.schema.LeakyReluOptions import LeakyReluOptionsT
from iree_py.frontends.tflite.schema.MulOptions import MulOptionsT
from iree_py.frontends.tflite.schema.Padding import Padding
from iree_py.frontends.tflite.schema.Pool2DOptions import Pool2DOptionsT
from iree_py.frontends.tflite.schema.SoftmaxOptions import SoftmaxOptionsT
from iree_py.frontends.tflite.schema.StridedSliceOptions import StridedSliceOptionsT
from iree_py.frontends.tflite.schema.SubOptions import SubOptionsT
from iree_py.frontends.tflite.tflite_ops import TFLITE_OPS_CONVERTERS
from iree_py.frontends.tflite.quant_activations import quant_activation_converters
from iree_py.ir.graph import Value

if TYPE_CHECKING:
    from iree_py.frontends.tflite.importer import TfliteContext

Converter = Callable[["TfliteContext"], list[Value]]
F32 = np.float32


def _shape(v: Value) -> tuple[int, ...]:
    return tuple(int(d) for d in v.type.shape)


# ------------------------------------------------------------------------------ fused activations

def activation(ctx: "TfliteContext", v: Value, fused: int, out: int | None = None) -> Value:
    """Apply a fused activation; the result takes operator output `out`'s name when given
    (callers name the op's own result instead when there is no activation)."""
    if fused == Act.NONE:
        return v
    if fused == Act.RELU:
        return ctx.emit("Relu", [v], out=out)
    if fused == Act.RELU6:
        return ctx.emit("Clip", [v], {"min": 0.0, "max": 6.0}, out=out)
    if fused == Act.RELU_N1_TO_1:
        return ctx.emit("Clip", [v], {"min": -1.0, "max": 1.0}, out=out)
    if fused == Act.TANH:
        # TFLite's float kernels clamp nothing for a fused TANH (conv, depthwise, add, ...) or refuse it
        # (fully connected): the converter never writes one, so a model that has one is refused.
        raise ctx.error("fused activation TANH is not supported (TFLite's float kernels do not apply it)")
    raise ctx.error(f"fused activation {fused} (SIGN_BIT or unknown) is not supported")


def _nhwc_result(ctx: "TfliteContext", y_nchw: Value, fused: int) -> list[Value]:
    return [from_nchw(ctx, activation(ctx, y_nchw, fused))]


# ------------------------------------------------------------------------------ windows

def same_pads(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    """TFLite SAME padding along one axis: output ceil(size/stride); the odd pixel goes at the end."""
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - size)
    return total // 2, total - total // 2


def _pads(ctx: "TfliteContext", padding: int, hw: tuple[int, int], kernel: tuple[int, int],
          strides: tuple[int, int], dilations: tuple[int, int]) -> list[int]:
    if padding == Padding.VALID:
        return [0, 0, 0, 0]
    if padding != Padding.SAME:
        raise ctx.error(f"padding {padding} is neither SAME nor VALID")
    (top, bottom), (left, right) = (same_pads(s, k, st, d) for s, k, st, d in zip(hw, kernel, strides, dilations))
    return [top, left, bottom, right]


def _strides(ctx: "TfliteContext", opts) -> tuple[int, int]:
    strides = (int(opts.strideH), int(opts.strideW))
    if min(strides) < 1:
        raise ctx.error(f"strides (h, w) = {strides} must be >= 1")
    return strides


def _conv(ctx: "TfliteContext", x: Value, w_oihw: Value, group: int, opts) -> list[Value]:
    xn = to_nchw(ctx, x)
    strides = _strides(ctx, opts)
    dilations = (int(opts.dilationHFactor), int(opts.dilationWFactor))
    kernel = _shape(w_oihw)[2:]
    pads = _pads(ctx, opts.padding, _shape(xn)[2:], kernel, strides, dilations)
    inputs = [xn, w_oihw]
    if ctx.has_input(2):
        inputs.append(ctx.input(2))
    y = ctx.emit("Conv", inputs, {"strides": list(strides), "pads": pads, "dilations": list(dilations),
                                  "group": group})
    return _nhwc_result(ctx, y, opts.fusedActivationFunction)


def _weights(ctx: "TfliteContext", i: int, perm: list[int]) -> Value:
    w = ctx.input(i)
    if w.is_const:
        return ctx.const(np.ascontiguousarray(w.const.transpose(perm)), f"{w.name}_t")
    return ctx.emit("Transpose", [w], {"perm": perm})


def conv_2d(ctx: "TfliteContext") -> list[Value]:
    x, w = ctx.input(0), ctx.input(1)
    if x.type.rank != 4 or w.type.rank != 4:
        raise ctx.error(f"input {x.type} and filter {w.type} must be rank 4 (NHWC, OHWI)")
    channels, w_channels = _shape(x)[3], _shape(w)[3]
    if channels % w_channels:
        raise ctx.error(f"input channels {channels} not a multiple of filter channels {w_channels}")
    opts = ctx.options(Conv2DOptionsT)
    return _conv(ctx, x, _weights(ctx, 1, [0, 3, 1, 2]), channels // w_channels, opts)


def depthwise_conv_2d(ctx: "TfliteContext") -> list[Value]:
    x, w = ctx.input(0), ctx.input(1)
    if x.type.rank != 4 or w.type.rank != 4 or _shape(w)[0] != 1:
        raise ctx.error(f"input {x.type} and filter {w.type} must be rank 4 (NHWC, 1HW(C*M))")
    channels, out_channels = _shape(x)[3], _shape(w)[3]
    if out_channels % channels:
        raise ctx.error(f"filter channels {out_channels} not a multiple of input channels {channels}")
    opts = ctx.options(DepthwiseConv2DOptionsT)
    return _conv(ctx, x, _weights(ctx, 1, [3, 0, 1, 2]), channels, opts)


def _pool(op: str) -> Converter:
    def convert(ctx: "TfliteContext") -> list[Value]:
        opts = ctx.options(Pool2DOptionsT)
        xn = to_nchw(ctx, ctx.input(0))
        kernel = (int(opts.filterHeight), int(opts.filterWidth))
        strides = _strides(ctx, opts)
        pads = _pads(ctx, opts.padding, _shape(xn)[2:], kernel, strides, (1, 1))
        attrs = {"kernel": list(kernel), "strides": list(strides), "pads": pads, "ceil_mode": 0}
        if op in ("MaxPool", "AveragePool"):
            attrs["dilations"] = [1, 1]
        if op != "MaxPool":
            attrs["count_include_pad"] = 0  # TFLite averages over the pixels inside the input
        return _nhwc_result(ctx, ctx.emit(op, [xn], attrs), opts.fusedActivationFunction)
    return convert


# ------------------------------------------------------------------------------ matrix products

def fully_connected(ctx: "TfliteContext") -> list[Value]:
    opts, rows, _ = fully_connected_rows(ctx)
    y = ctx.emit("MatMul", [rows, _weights(ctx, 1, [1, 0])])
    if ctx.has_input(2):
        y = ctx.emit("Add", [y, ctx.input(2)])
    y = activation(ctx, y, opts.fusedActivationFunction)
    return [ctx.reshape(y, ctx.output_shape(0), out=0)]


def batch_matmul(ctx: "TfliteContext") -> list[Value]:
    opts = ctx.options(BatchMatMulOptionsT)
    operands = []
    for i, adjoint in ((0, opts.adjX), (1, opts.adjY)):
        v = ctx.input(i)
        if v.type.rank < 2:
            raise ctx.error(f"input {i} {v.type} must have rank >= 2")
        if adjoint:
            perm = list(range(v.type.rank - 2)) + [v.type.rank - 1, v.type.rank - 2]
            v = ctx.emit("Transpose", [v], {"perm": perm})
        operands.append(v)
    return [ctx.reshape(ctx.emit("MatMul", operands), ctx.output_shape(0), out=0)]


# ------------------------------------------------------------------------------ elementwise

def _binary(op: str, options: type) -> Converter:
    def convert(ctx: "TfliteContext") -> list[Value]:
        fused = ctx.options(options).fusedActivationFunction
        a, b = ctx.input(0), ctx.input(1)
        twins = nchw_operands(ctx, [a, b]) if len(ctx.output_shape(0)) == 4 else None
        if twins is not None:
            return _nhwc_result(ctx, ctx.emit(op, twins), fused)
        return [activation(ctx, ctx.emit(op, [a, b], out=None if fused else 0), fused, out=0 if fused else None)]
    return convert


def _unary(op: str, attrs_of: Callable[["TfliteContext"], dict] = lambda ctx: {}) -> Converter:
    def convert(ctx: "TfliteContext") -> list[Value]:
        x = ctx.input(0)
        twins = nchw_operands(ctx, [x])
        if twins is not None:
            return [from_nchw(ctx, ctx.emit(op, twins, attrs_of(ctx)))]
        return [ctx.emit(op, [x], attrs_of(ctx), out=0)]
    return convert


def prelu(ctx: "TfliteContext") -> list[Value]:
    x, alpha = ctx.input(0), ctx.input(1)
    twins = nchw_operands(ctx, [x, alpha]) if x.type.rank == 4 else None
    if twins is not None:
        return [from_nchw(ctx, ctx.emit("PRelu", twins))]
    return [ctx.emit("PRelu", [x, alpha], out=0)]


def gelu(ctx: "TfliteContext") -> list[Value]:
    op = "GeluTanh" if ctx.options(GeluOptionsT).approximate else "Gelu"
    return _unary(op)(ctx)


# ------------------------------------------------------------------------------ softmax, reductions

def _scaled(ctx: "TfliteContext", x: Value, beta: float) -> Value:
    return x if beta == 1.0 else ctx.emit("Mul", [x, ctx.const(np.array(beta, F32), "beta")])


def softmax(ctx: "TfliteContext") -> list[Value]:
    x = ctx.input(0)
    beta = float(ctx.options(SoftmaxOptionsT).beta)
    return [ctx.emit("Softmax", [_scaled(ctx, x, beta)], {"axis": x.type.rank - 1}, out=0)]


def log_softmax(ctx: "TfliteContext") -> list[Value]:
    x = ctx.input(0)
    return [ctx.emit("LogSoftmax", [x], {"axis": x.type.rank - 1}, out=0)]


def _reduce(kind: str) -> Converter:
    def convert(ctx: "TfliteContext") -> list[Value]:
        x = ctx.input(0)
        rank = x.type.rank
        axes = sorted({int(a) + rank if int(a) < 0 else int(a) for a in ctx.const_input(1, "axes").reshape(-1)})
        if any(not 0 <= a < rank for a in axes):
            raise ctx.error(f"axes {axes} out of range for {x.type}")
        if not axes:
            return [ctx.reshape(x, ctx.output_shape(0), out=0)]
        kept = [a for a in range(rank) if a not in axes]
        if axes != list(range(axes[0], axes[0] + len(axes))):   # our Reduce wants one contiguous run
            x = ctx.emit("Transpose", [x], {"perm": kept + axes})
            axes = list(range(len(kept), rank))
        y = ctx.emit("Reduce", [x], {"kind": kind, "axes": axes, "keepdims": 0})
        return [ctx.reshape(y, ctx.output_shape(0), out=0)]
    return convert


# ------------------------------------------------------------------------------ shapes and layout

def reshape_like_output(ctx: "TfliteContext") -> list[Value]:
    """RESHAPE, SQUEEZE, EXPAND_DIMS: static shapes, so the declared output shape says it all."""
    x = ctx.input(0)
    shape = ctx.output_shape(0)
    if math.prod(shape) != x.type.num_elements:
        raise ctx.error(f"cannot reshape {x.type} to the declared output shape {list(shape)}")
    return [ctx.emit("Reshape", [x], {"shape": list(shape)}, out=0)]


def transpose(ctx: "TfliteContext") -> list[Value]:
    x = ctx.input(0)
    perm = [int(p) + x.type.rank if int(p) < 0 else int(p) for p in ctx.const_input(1, "perm").reshape(-1)]
    return [ctx.emit("Transpose", [x], {"perm": perm}, out=0)]


def concatenation(ctx: "TfliteContext") -> list[Value]:
    opts = ctx.options(ConcatenationOptionsT)
    values = [ctx.input(i) for i in range(ctx.num_inputs())]
    rank = values[0].type.rank
    axis = int(opts.axis) + rank if int(opts.axis) < 0 else int(opts.axis)
    if not 0 <= axis < rank:
        raise ctx.error(f"axis {opts.axis} out of range for {values[0].type}")
    twins = nchw_operands(ctx, values) if rank == 4 else None
    if twins is not None:
        y = ctx.emit("Concat", twins, {"axis": NCHW_AXIS_OF_NHWC[axis]})
        return _nhwc_result(ctx, y, opts.fusedActivationFunction)
    fused = opts.fusedActivationFunction
    y = ctx.emit("Concat", values, {"axis": axis}, out=None if fused else 0)
    return [activation(ctx, y, fused, out=0 if fused else None)]


def pad(ctx: "TfliteContext") -> list[Value]:
    """PAD / PADV2 as a concatenation with constant blocks, axis by axis."""
    x = ctx.input(0)
    paddings = ctx.const_input(1, "paddings").reshape(-1, 2)
    if paddings.shape[0] != x.type.rank or (paddings < 0).any():
        raise ctx.error(f"paddings {paddings.tolist()} do not fit {x.type} (one non-negative pair per axis)")
    value = float(ctx.const_input(2, "constant_values").reshape(-1)[0]) if ctx.has_input(2) else 0.0
    for axis, (before, after) in enumerate(paddings.tolist()):
        if before == 0 and after == 0:
            continue
        parts = []
        for count in (before, after):
            shape = list(_shape(x))
            shape[axis] = int(count)
            parts.append(ctx.const(np.full(shape, value, F32), "pad_value") if count else None)
        x = ctx.emit("Concat", [p for p in (parts[0], x, parts[1]) if p is not None], {"axis": axis})
    return [ctx.reshape(x, ctx.output_shape(0), out=0)]


def _emit_slice(ctx: "TfliteContext", x: Value, starts: list[int], ends: list[int], steps: list[int]) -> list[Value]:
    """A normalized Slice, reshaped to the declared output shape (drops STRIDED_SLICE's shrunk axes)."""
    shape = ctx.output_shape(0)
    if starts == [0] * len(starts) and ends == list(_shape(x)) and steps == [1] * len(steps):
        return [ctx.reshape(x, shape, out=0)]
    y = ctx.emit("Slice", [x], {"starts": starts, "ends": ends, "steps": steps})
    if y.type.num_elements != math.prod(shape):
        raise ctx.error(f"slice of {x.type} gives {y.type}, which does not fit the declared output {list(shape)}")
    return [ctx.reshape(y, shape, out=0)]


def slice_(ctx: "TfliteContext") -> list[Value]:
    """SLICE: begin and size per axis (size -1: to the end)."""
    x = ctx.input(0)
    dims = _shape(x)
    begin = [int(v) for v in ctx.const_input(1, "begin").reshape(-1)]
    size = [int(v) for v in ctx.const_input(2, "size").reshape(-1)]
    if len(begin) != len(dims) or len(size) != len(dims):
        raise ctx.error(f"begin {begin} and size {size} need one entry per axis of {x.type}")
    ends = [d if n == -1 else b + n for b, n, d in zip(begin, size, dims)]
    for axis, (b, e, d) in enumerate(zip(begin, ends, dims)):
        if not 0 <= b <= e <= d:
            raise ctx.error(f"axis {axis}: begin {b}, size {size[axis]} fall outside dim {d} of {x.type}")
    return _emit_slice(ctx, x, begin, ends, [1] * len(dims))


def strided_slice_axis(dim: int, begin: int, end: int, stride: int, begin_masked: bool, end_masked: bool,
                       shrink: bool) -> tuple[int, int, int]:
    """One axis of TFLite STRIDED_SLICE as normalized (start, end, step): negative indices count from
    the end, out-of-range ones clamp (to [0, dim] going forward, [-1, dim - 1] going backward); a
    shrunk axis takes the one element at begin."""
    if begin_masked:
        start = 0 if stride > 0 else dim - 1
    else:
        start = begin + dim if begin < 0 else begin
    if shrink:
        if not 0 <= start < dim:
            raise ValueError(f"shrunk axis index {begin} is out of range for dim {dim}")
        return start, start + 1, 1
    if end_masked:
        stop = dim if stride > 0 else -1
    else:
        stop = end + dim if end < 0 else end
    if stride > 0:
        start, stop = min(max(start, 0), dim), min(max(stop, 0), dim)
        return start, max(stop, start), stride
    start, stop = min(max(start, -1), dim - 1), min(max(stop, -1), dim - 1)
    return start, min(stop, start), stride


def strided_slice(ctx: "TfliteContext") -> list[Value]:
    opts = ctx.options(StridedSliceOptionsT)
    if opts.ellipsisMask or opts.newAxisMask:
        raise ctx.error(f"ellipsis_mask {opts.ellipsisMask} / new_axis_mask {opts.newAxisMask} are not supported "
                        "(only begin_mask, end_mask and shrink_axis_mask)")
    x = ctx.input(0)
    dims = _shape(x)
    begin = [int(v) for v in ctx.const_input(1, "begin").reshape(-1)]
    end = [int(v) for v in ctx.const_input(2, "end").reshape(-1)]
    strides = [int(v) for v in ctx.const_input(3, "strides").reshape(-1)] if ctx.has_input(3) else [1] * len(begin)
    if not len(begin) == len(end) == len(strides) <= len(dims):
        raise ctx.error(f"begin {begin}, end {end} and strides {strides} need equal lengths, at most the rank of "
                        f"{x.type}")
    if 0 in strides:
        raise ctx.error(f"strides {strides} contain 0")
    if opts.offset:
        end = [b + e for b, e in zip(begin, end)]
    starts, ends, steps = [0] * len(dims), list(dims), [1] * len(dims)
    for axis, (b, e, stride) in enumerate(zip(begin, end, strides)):
        bit = 1 << axis
        try:
            starts[axis], ends[axis], steps[axis] = strided_slice_axis(
                dims[axis], b, e, stride, bool(opts.beginMask & bit), bool(opts.endMask & bit),
                bool(opts.shrinkAxisMask & bit))
        except ValueError as err:
            raise ctx.error(f"axis {axis} of {x.type}: {err}") from None
    return _emit_slice(ctx, x, starts, ends, steps)


def dequantize(ctx: "TfliteContext") -> list[Value]:
    x = ctx.input(0)
    if not x.is_const or x.const.dtype != np.float16:
        raise ctx.error(f"only float16 constants can be dequantized (got '{x.name}' {x.type}"
                        f"{'' if x.is_const else ', computed'}); int8 models are not supported yet")
    return [ctx.const(x.const.astype(F32), ctx.tensor_names[ctx._index(0, outputs=True)])]


# CUSTOM operators by custom_code (MediaPipe's ops that LiteRT's XNNPACK delegate runs).
CUSTOM_CONVERTERS: dict[str, Converter] = {
    **TFLITE_CONVT_CUSTOM_CONVERTERS,
}


def custom(ctx: "TfliteContext") -> list[Value]:
    assert ctx.op is not None
    convert = CUSTOM_CONVERTERS.get(reader.custom_code(ctx.model, ctx.op.opcodeIndex))
    if convert is None:
        raise ctx.error("op not supported by iree-py")
    return convert(ctx)


CONVERTERS: dict[int, Converter] = {
    B.CONV_2D: conv_2d,
    B.DEPTHWISE_CONV_2D: depthwise_conv_2d,
    B.FULLY_CONNECTED: fully_connected,
    B.BATCH_MATMUL: batch_matmul,
    B.ADD: _binary("Add", AddOptionsT),
    B.SUB: _binary("Sub", SubOptionsT),
    B.MUL: _binary("Mul", MulOptionsT),
    B.DIV: _binary("Div", DivOptionsT),
    B.RELU: _unary("Relu"),
    B.RELU6: _unary("Clip", lambda ctx: {"min": 0.0, "max": 6.0}),
    B.RELU_N1_TO_1: _unary("Clip", lambda ctx: {"min": -1.0, "max": 1.0}),
    B.LEAKY_RELU: _unary("LeakyRelu", lambda ctx: {"alpha": float(ctx.options(LeakyReluOptionsT).alpha)}),
    B.PRELU: prelu,
    B.LOGISTIC: _unary("Sigmoid"),
    B.TANH: _unary("Tanh"),
    B.HARD_SWISH: _unary("HardSwish"),
    B.GELU: gelu,
    B.MAX_POOL_2D: _pool("MaxPool"),
    B.AVERAGE_POOL_2D: _pool("AveragePool"),
    B.MEAN: _reduce("mean"),
    B.SUM: _reduce("sum"),
    B.REDUCE_MAX: _reduce("max"),
    B.SOFTMAX: softmax,
    B.LOG_SOFTMAX: log_softmax,
    B.RESHAPE: reshape_like_output,
    B.SQUEEZE: reshape_like_output,
    B.EXPAND_DIMS: reshape_like_output,
    B.TRANSPOSE: transpose,
    B.CONCATENATION: concatenation,
    B.SLICE: slice_,
    B.STRIDED_SLICE: strided_slice,
    B.PAD: pad,
    B.PADV2: pad,
    B.DEQUANTIZE: dequantize,
    **quant_converters({
        "CONV_2D": conv_2d, "DEPTHWISE_CONV_2D": depthwise_conv_2d, "FULLY_CONNECTED": fully_connected,
        "ADD": _binary("Add", AddOptionsT), "MAX_POOL_2D": _pool("MaxPool"), "AVERAGE_POOL_2D": _pool("AveragePool"),
        "CONCATENATION": concatenation, "DEQUANTIZE": dequantize}),
    **TFLITE_INDEXING_CONVERTERS,
    **TFLITE_RESIZE_PAD_CONVERTERS,
    **TFLITE_CONVT_CONVERTERS,
    **TFLITE_OPS_CONVERTERS,
    **quant_activation_converters({"SOFTMAX": softmax, "LOGISTIC": _unary("Sigmoid"), "TANH": _unary("Tanh")}),
    **TFLITE_STATE_CONVERTERS,
    B.IF: tflite_if,
    B.WHILE: tflite_while,
    **TFLITE_LOGIC_CONVERTERS,
    **TFLITE_SPARSITY_CONVERTERS,
    B.CUSTOM: custom,
}
