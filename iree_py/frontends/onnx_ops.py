"""ONNX op -> normalized ops: one converter per ONNX op type, listed in CONVERTERS at the bottom.

A converter reads the current node through the context (`ctx.input`, `ctx.attr`, `ctx.opset`) and
returns the Values of the node's outputs, in order (a shorter list: the rest are not computed).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.frontends.onnx_convt import CONVT_CONVERTERS, pool_1d_3d
from iree_py.frontends.onnx_bntrain import with_training_mode
from iree_py.frontends.onnx_control_flow import CONTROL_FLOW_CONVERTERS
from iree_py.frontends.onnx_cumulative import CUMULATIVE_CONVERTERS
from iree_py.frontends.onnx_datadep import DATADEP_CONVERTERS
from iree_py.frontends.onnx_nms import NMS_CONVERTERS
from iree_py.frontends.onnx_sequences import SEQUENCE_CONVERTERS
from iree_py.frontends.onnx_dtypes2 import DTYPES2_CONVERTERS
from iree_py.frontends.onnx_grid_sample import GRID_SAMPLE_CONVERTERS
from iree_py.frontends.onnx_imageops import IMAGEOPS_CONVERTERS
from iree_py.frontends.onnx_indexing import INDEXING_CONVERTERS
from iree_py.frontends.onnx_linear_attention import LINEAR_ATTENTION_CONVERTERS
from iree_py.frontends.onnx_logic import LOGIC_CONVERTERS
from iree_py.frontends.onnx_strings import with_string_equal
from iree_py.frontends.onnx_loss import LOSS_CONVERTERS
from iree_py.frontends.onnx_misc import MISC_CONVERTERS
from iree_py.frontends.onnx_nn import NN_CONVERTERS
from iree_py.frontends.onnx_quant import CONVERTERS as QUANT_CONVERTERS
from iree_py.frontends.onnx_reduce import REDUCE_CONVERTERS
from iree_py.frontends.onnx_resize_pad import RESIZE_PAD_CONVERTERS
from iree_py.frontends.onnx_signal import SIGNAL_CONVERTERS
from iree_py.frontends.onnx_signal_rt import SIGNAL_RT_CONVERTERS
from iree_py.frontends.onnx_textops import TEXTOPS_CONVERTERS
from iree_py.frontends.onnx_scan8 import SCAN8_CONVERTERS
from iree_py.frontends.onnx_qlstm import MICROSOFT_CONVERTERS
from iree_py.frontends.onnx_recurrent import RECURRENT_CONVERTERS
from iree_py.frontends.onnx_bf16 import wrap_bf16
from iree_py.frontends.onnx_dims import dim_list, dims_of
from iree_py.ir.graph import Value
from iree_py.ir.symbols import Expr, call, dim
from iree_py.ir.types import Dim

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

Converter = Callable[["OnnxContext"], list[Value]]
F32 = np.float32


def _axis(ctx: "OnnxContext", axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise ctx.bad_attr(what, axis, f"out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _shape(v: Value) -> tuple[Dim, ...]:
    return dims_of(v)


def _reshape(ctx: "OnnxContext", v: Value, shape: tuple[int, ...], out: int | None = None) -> Value:
    return ctx.emit("Reshape", [v], {"shape": dim_list(shape)}, out=out)


# ------------------------------------------------------------------------------- windows (conv/pool)

def _explicit_pads(ctx: "OnnxContext", spatial: tuple[int, ...], kernel: list[int], strides: list[int],
                   dilations: list[int]) -> list[int]:
    """ONNX pads [begin..., end...] from auto_pad / pads."""
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    n = len(spatial)
    if auto_pad == "NOTSET":
        pads = [int(p) for p in ctx.attr("pads", [0] * (2 * n))]
        if len(pads) != 2 * n:
            raise ctx.bad_attr("pads", pads, f"expected {2 * n} values")
        return pads
    if auto_pad == "VALID":
        return [0] * (2 * n)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise ctx.bad_attr("auto_pad", auto_pad, "expected NOTSET, VALID, SAME_UPPER or SAME_LOWER")
    begins, ends = [], []
    for size, k, s, d in zip(spatial, kernel, strides, dilations):
        if isinstance(size, Expr):  # the same arithmetic on a symbolic size
            total = call("max", 0, (call("ceildiv", size, s) - 1) * s + (k - 1) * d + 1 - size)
            small, big = dim(total // 2), dim(total - total // 2)
            begins.append(small if auto_pad == "SAME_UPPER" else big)
            ends.append(big if auto_pad == "SAME_UPPER" else small)
            continue
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else big)
        ends.append(big if auto_pad == "SAME_UPPER" else small)
    return begins + ends


def _window_attrs(ctx: "OnnxContext", x: Value, kernel: list[int], allow_dilations: bool) -> dict:
    spatial = _shape(x)[2:]
    if len(spatial) != 2:
        raise ctx.error(f"{len(spatial)}-D windows (input {x.type}) are not supported; only 2-D")
    strides = [int(s) for s in ctx.attr("strides", [1, 1])]
    dilations = [int(d) for d in ctx.attr("dilations", [1, 1])]
    for name, values in (("kernel_shape", kernel), ("strides", strides), ("dilations", dilations)):
        if len(values) != 2 or any(v < 1 for v in values):
            raise ctx.bad_attr(name, values, "expected 2 values, each at least 1")
    if not allow_dilations and dilations != [1, 1]:
        raise ctx.bad_attr("dilations", dilations, "AveragePool with dilations")
    pads = _explicit_pads(ctx, spatial, kernel, strides, dilations)
    return {"strides": strides, "pads": pads, "dilations": dilations}


def conv(ctx: "OnnxContext") -> list[Value]:
    x, w = ctx.input(0), ctx.input(1)
    rank = x.type.rank
    if rank == 3:  # 1-D conv: [N,C,L] -> [N,C,1,L]
        return [_conv_1d(ctx, x, w)]
    if rank != 4:
        raise ctx.error(f"{rank - 2}-D Conv (input {x.type}) is not supported; only 1-D and 2-D")
    kernel = [int(k) for k in ctx.attr("kernel_shape", _shape(w)[2:])]
    attrs = _window_attrs(ctx, x, kernel, allow_dilations=True)
    attrs["group"] = int(ctx.attr("group", 1))
    inputs = [x, w] + ([ctx.input(2)] if ctx.has_input(2) else [])
    return [ctx.emit("Conv", inputs, attrs, out=0)]


def _conv_1d(ctx: "OnnxContext", x: Value, w: Value) -> Value:
    if w.type.rank != 3:
        raise ctx.error(f"a 1-D Conv of {x.type} needs a weight of rank 3, got {w.type}")
    n, c, length = _shape(x)
    m, cg, k = _shape(w)
    strides = [1] + [int(s) for s in ctx.attr("strides", [1])]
    dilations = [1] + [int(d) for d in ctx.attr("dilations", [1])]
    begin, end = _explicit_pads(ctx, (length,), [k], strides[1:], dilations[1:])
    x4 = _reshape(ctx, x, (n, c, 1, length))
    w4 = _reshape(ctx, w, (m, cg, 1, k))
    inputs = [x4, w4] + ([ctx.input(2)] if ctx.has_input(2) else [])
    attrs = {"strides": strides, "pads": [0, begin, 0, end], "dilations": dilations,
             "group": int(ctx.attr("group", 1))}
    y4 = ctx.emit("Conv", inputs, attrs)
    n, m, _, out_len = _shape(y4)
    return _reshape(ctx, y4, (n, m, out_len), out=0)


def _pool(ctx: "OnnxContext", op: str) -> list[Value]:
    x = ctx.input(0)
    if x.type.rank in (3, 5):
        return pool_1d_3d(ctx, op)  # convt: as 2-D
    kernel = [int(k) for k in ctx.attr("kernel_shape", [])]
    if len(kernel) != 2 or x.type.rank != 4:
        raise ctx.error(f"only 2-D pooling on rank-4 input is supported (kernel_shape {kernel}, input {x.type})")
    attrs = _window_attrs(ctx, x, kernel, allow_dilations=True)
    attrs["kernel"] = kernel
    attrs["ceil_mode"] = int(ctx.attr("ceil_mode", 0))
    if op == "AveragePool":
        attrs["count_include_pad"] = int(ctx.attr("count_include_pad", 0))
    if op == "MaxPool" and ctx.output_used(1):
        indices = ctx.emit("MaxPoolIndices", [x], {**attrs, "storage_order": int(ctx.attr("storage_order", 0))}, out=1)
        return [ctx.emit(op, [x], attrs, out=0) if ctx.output_used(0) else None, indices]
    return [ctx.emit(op, [x], attrs, out=0)]


def global_average_pool(ctx: "OnnxContext") -> list[Value]:
    return [ctx.emit("GlobalAveragePool", [ctx.input(0)], out=0)]


# ------------------------------------------------------------------------------------------ linear

def gemm(ctx: "OnnxContext") -> list[Value]:
    a, b = ctx.input(0), ctx.input(1)
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    if a.type.rank != 2 or b.type.rank != 2:
        raise ctx.error(f"Gemm operands must be 2-D, got {a.type} and {b.type}")
    if ctx.attr("transA", 0):
        a = ctx.emit("Transpose", [a], {"perm": [1, 0]})
    if ctx.attr("transB", 0):
        b = ctx.emit("Transpose", [b], {"perm": [1, 0]})
    has_c = ctx.has_input(2) and beta != 0.0
    scale_b = alpha != 1.0 and b.is_const
    if scale_b:
        b = ctx.emit("Mul", [b, ctx.const(np.array(alpha, F32), "alpha")])
    last = not has_c and (alpha == 1.0 or scale_b)
    y = ctx.emit("MatMul", [a, b], out=0 if last else None)
    if alpha != 1.0 and not scale_b:
        y = ctx.emit("Mul", [y, ctx.const(np.array(alpha, F32), "alpha")], out=None if has_c else 0)
    if not has_c:
        return [y]
    c = ctx.input(2)
    if beta != 1.0:
        c = ctx.emit("Mul", [c, ctx.const(np.array(beta, F32), "beta")])
    return [ctx.emit("Add", [y, c], out=0)]


def matmul(ctx: "OnnxContext") -> list[Value]:
    a, b = ctx.input(0), ctx.input(1)
    a_vec, b_vec = a.type.rank == 1, b.type.rank == 1
    if a_vec:
        a = _reshape(ctx, a, (1, *_shape(a)))
    if b_vec:
        b = _reshape(ctx, b, (*_shape(b), 1))
    if not (a_vec or b_vec):
        return [ctx.emit("MatMul", [a, b], out=0)]
    y = ctx.emit("MatMul", [a, b])
    shape = list(_shape(y))
    if b_vec:
        shape.pop(-1)
    if a_vec:
        shape.pop(-2 if not b_vec else -1)
    return [_reshape(ctx, y, tuple(shape), out=0)]


# ------------------------------------------------------------------------------------- elementwise

def _binary(op: str) -> Converter:
    def convert(ctx: "OnnxContext") -> list[Value]:
        return [ctx.emit(op, [ctx.input(0), ctx.input(1)], out=0)]
    return convert


def _unary(op: str) -> Converter:
    def convert(ctx: "OnnxContext") -> list[Value]:
        return [ctx.emit(op, [ctx.input(0)], out=0)]
    return convert


def sum_(ctx: "OnnxContext") -> list[Value]:
    values = ctx.inputs()
    if len(values) == 1:
        return values
    acc = values[0]
    for i, v in enumerate(values[1:], start=2):
        acc = ctx.emit("Add", [acc, v], out=0 if i == len(values) else None)
    return [acc]


def leaky_relu(ctx: "OnnxContext") -> list[Value]:
    return [ctx.emit("LeakyRelu", [ctx.input(0)], {"alpha": float(ctx.attr("alpha", 0.01))}, out=0)]


def _variadic(op: str, scale_by_count: bool = False) -> Converter:
    """Min/Max/Mean of any number of inputs: a chain of two-operand ops (Mean: Add, then * 1/n)."""
    def convert(ctx: "OnnxContext") -> list[Value]:
        values = ctx.inputs()
        if len(values) == 1:
            return values
        acc = values[0]
        for i, v in enumerate(values[1:], start=2):
            last = i == len(values) and not scale_by_count
            acc = ctx.emit(op, [acc, v], out=0 if last else None)
        if scale_by_count:
            acc = ctx.emit("Mul", [acc, ctx.const(np.array(1.0 / len(values), F32), "inv_count")], out=0)
        return [acc]
    return convert


# Activations with float attributes: ONNX attribute -> default (the same at every opset that has the op).
SELU_ALPHA = 1.67326319217681884765625
SELU_GAMMA = 1.05070102214813232421875
ACTIVATION_DEFAULTS: dict[str, dict[str, float]] = {
    "HardSigmoid": {"alpha": 0.2, "beta": 0.5},
    "Elu": {"alpha": 1.0},
    "Selu": {"alpha": SELU_ALPHA, "gamma": SELU_GAMMA},
    "Celu": {"alpha": 1.0},
    "ThresholdedRelu": {"alpha": 1.0},
}


def _activation(op: str) -> Converter:
    def convert(ctx: "OnnxContext") -> list[Value]:
        attrs = {name: float(ctx.attr(name, default)) for name, default in ACTIVATION_DEFAULTS[op].items()}
        return [ctx.emit(op, [ctx.input(0)], attrs, out=0)]
    return convert


def gelu(ctx: "OnnxContext") -> list[Value]:
    approximate = ctx.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise ctx.bad_attr("approximate", approximate, "expected 'none' or 'tanh'")
    return [ctx.emit("Gelu" if approximate == "none" else "GeluTanh", [ctx.input(0)], out=0)]


# ----------------------------------------------------------------------------------- normalization

def batch_norm(ctx: "OnnxContext") -> list[Value]:
    if ctx.opset < 9 and int(ctx.attr("spatial", 1)) != 1:
        raise ctx.bad_attr("spatial", ctx.attr("spatial"), "only spatial=1 (per-channel) BatchNormalization")
    if int(ctx.attr("training_mode", 0)) != 0:
        raise ctx.bad_attr("training_mode", 1, "training-mode BatchNormalization")
    x = ctx.input(0)
    if x.type.rank < 2:
        raise ctx.error(f"input {x.type} must have rank >= 2")
    params = [ctx.input(i) for i in range(1, 5)]
    if not all(p.is_const for p in params):
        return [_batch_norm_of_runtime_params(ctx, x, params)]
    for i, p in enumerate(params, start=1):
        if p.type.rank != 1:
            params[i - 1] = _reshape(ctx, p, (p.type.num_elements,))
    attrs = {"epsilon": float(ctx.attr("epsilon", 1e-5))}
    return [ctx.emit("BatchNormalization", [x, *params], attrs, out=0)]


def _batch_norm_of_runtime_params(ctx: "OnnxContext", x: Value, params: list[Value]) -> Value:
    """y = (x - mean) * (scale / sqrt(var + epsilon)) + bias with parameters computed at run time
    (or passed as inputs): elementwise ops over the channel axis (constant ones fold into the
    BatchNormalization op instead)."""
    channel_shape = (x.type.shape[1], *([1] * (x.type.rank - 2)))
    scale, bias, mean, var = (_reshape(ctx, p, channel_shape) for p in params)
    if any(p.type.dtype != x.type.dtype for p in params):
        raise ctx.error(f"parameters {[str(p.type) for p in params]} must have the input's type {x.type.dtype.value}")
    eps = ctx.const(np.array(float(ctx.attr("epsilon", 1e-5)), x.type.dtype.numpy), "epsilon")
    gain = ctx.emit("Div", [scale, ctx.emit("Sqrt", [ctx.emit("Add", [var, eps])])])
    return ctx.emit("Add", [ctx.emit("Mul", [ctx.emit("Sub", [x, mean]), gain]), bias], out=0)


def lrn(ctx: "OnnxContext") -> list[Value]:
    attrs = {"size": int(ctx.attr("size")), "alpha": float(ctx.attr("alpha", 1e-4)),
             "beta": float(ctx.attr("beta", 0.75)), "bias": float(ctx.attr("bias", 1.0))}
    return [ctx.emit("LRN", [ctx.input(0)], attrs, out=0)]


def _softmax_like(op: str) -> Converter:
    """Softmax, LogSoftmax, Hardmax: one axis from opset 13; before, over the input flattened to 2-D at axis."""
    def convert(ctx: "OnnxContext") -> list[Value]:
        x = ctx.input(0)
        rank = x.type.rank
        if ctx.opset >= 13:
            axis = _axis(ctx, int(ctx.attr("axis", -1)), rank)
            return [ctx.emit(op, [x], {"axis": axis}, out=0)]
        axis = _axis(ctx, int(ctx.attr("axis", 1)), rank)
        if axis == rank - 1:  # the flattened trailing part is just the last axis
            return [ctx.emit(op, [x], {"axis": axis}, out=0)]
        shape = _shape(x)
        flat = _reshape(ctx, x, (math.prod(shape[:axis]), math.prod(shape[axis:])))
        y = ctx.emit(op, [flat], {"axis": 1})
        return [_reshape(ctx, y, shape, out=0)]
    return convert


softmax = _softmax_like("Softmax")


# ---------------------------------------------------------------------------------- shape & layout

def concat(ctx: "OnnxContext") -> list[Value]:
    values = ctx.inputs()
    if not values:
        raise ctx.error("Concat needs at least one input")
    axis = _axis(ctx, int(ctx.attr("axis", 1 if ctx.opset < 4 else 0)), values[0].type.rank)
    if len(values) == 1:
        return values
    return [ctx.emit("Concat", values, {"axis": axis}, out=0)]


def _resolve_shape(ctx: "OnnxContext", x: Value, requested: list[int], allow_zero: bool) -> tuple[int, ...]:
    shape = list(requested)
    src = _shape(x)
    for i, d in enumerate(shape):
        if d == 0 and not allow_zero:
            if i >= len(src):
                raise ctx.error(f"shape {requested}: 0 at index {i} but input {x.type} has rank {len(src)}")
            shape[i] = src[i]
    if shape.count(-1) > 1:
        raise ctx.error(f"shape {requested} has more than one -1")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        total = math.prod(src)
        if known == 0 or total % known:
            raise ctx.error(f"cannot reshape {x.type} to {requested}")
        shape[shape.index(-1)] = total // known
    if math.prod(shape) != math.prod(src) or any(d < 0 for d in shape):
        raise ctx.error(f"cannot reshape {x.type} to {requested}")
    return tuple(shape)


def reshape(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    if ctx.opset < 5:
        requested = [int(d) for d in ctx.attr("shape", [])]
    else:
        requested = [int(d) for d in ctx.const_input(1, "shape").reshape(-1)]
    allow_zero = bool(ctx.attr("allowzero", 0))
    return [_reshape(ctx, x, _resolve_shape(ctx, x, requested, allow_zero), out=0)]


def flatten(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    shape = _shape(x)
    axis = int(ctx.attr("axis", 1))
    if axis < 0:
        axis += len(shape)
    if not 0 <= axis <= len(shape):
        raise ctx.bad_attr("axis", ctx.attr("axis"), f"out of range for {x.type}")
    return [_reshape(ctx, x, (math.prod(shape[:axis]), math.prod(shape[axis:])), out=0)]


def transpose(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    perm = [int(p) for p in ctx.attr("perm", list(range(x.type.rank))[::-1])]
    if sorted(perm) != list(range(x.type.rank)):
        raise ctx.bad_attr("perm", perm, f"not a permutation of the {x.type.rank} axes of {x.type}")
    if perm == list(range(x.type.rank)):
        return [x]
    return [ctx.emit("Transpose", [x], {"perm": perm}, out=0)]


def normalize_slice(dim: int, start: int, end: int, step: int) -> tuple[int, int]:
    """ONNX Slice clamping for one axis: negative indices count from the end, out-of-range ones
    (INT_MAX included) clamp; an empty range becomes end == start (docs/ir.md, Slice)."""
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        return start, max(end, start)
    start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return start, min(end, start)


def _slice_lists(ctx: "OnnxContext") -> tuple[list[int], list[int], list[int], list[int]]:
    """(starts, ends, axes, steps) as the node gives them: attributes before opset 10, constant inputs after."""
    if ctx.opset < 10:
        starts, ends = ([int(v) for v in ctx.attr(k, [])] for k in ("starts", "ends"))
        axes = ctx.attr("axes")
        axes = list(range(len(starts))) if axes is None else [int(a) for a in axes]
        return starts, ends, axes, [1] * len(starts)
    starts = [int(v) for v in ctx.const_input(1, "starts").reshape(-1)]
    ends = [int(v) for v in ctx.const_input(2, "ends").reshape(-1)]
    axes = [int(v) for v in ctx.const_input(3, "axes").reshape(-1)] if ctx.has_input(3) else list(range(len(starts)))
    steps = [int(v) for v in ctx.const_input(4, "steps").reshape(-1)] if ctx.has_input(4) else [1] * len(starts)
    return starts, ends, axes, steps


def slice_(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    shape = _shape(x)
    starts, ends, axes, steps = _slice_lists(ctx)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} differ in length")
    axes = [_axis(ctx, a, len(shape), "axes") for a in axes]
    if len(set(axes)) != len(axes):
        raise ctx.bad_attr("axes", axes, "an axis is repeated")
    if 0 in steps:
        raise ctx.error(f"steps {steps} contain 0")
    full = {"starts": [0] * len(shape), "ends": list(shape), "steps": [1] * len(shape)}
    for axis, start, end, step in zip(axes, starts, ends, steps):
        full["starts"][axis], full["ends"][axis] = normalize_slice(shape[axis], start, end, step)
        full["steps"][axis] = step
    if full == {"starts": [0] * len(shape), "ends": list(shape), "steps": [1] * len(shape)}:
        return [x]
    return [ctx.emit("Slice", [x], full, out=0)]


def _split_sizes(ctx: "OnnxContext", dim: int) -> list[int]:
    count = len(ctx.node.output)
    if ctx.opset < 13 and ctx.attr("split") is not None:
        return [int(v) for v in ctx.attr("split")]
    if ctx.opset >= 13 and ctx.has_input(1):
        return [int(v) for v in ctx.const_input(1, "split").reshape(-1)]
    if ctx.opset >= 18:
        count = int(ctx.attr("num_outputs", count))
        part = -(-dim // count)
        return [part] * (dim // part) + ([dim % part] if dim % part else [])
    if dim % count:
        raise ctx.error(f"axis size {dim} does not split evenly into {count} outputs")
    return [dim // count] * count


def split(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    shape = _shape(x)
    axis = _axis(ctx, int(ctx.attr("axis", 0)), len(shape))
    sizes = _split_sizes(ctx, shape[axis])
    if sum(sizes) != shape[axis] or any(n < 0 for n in sizes) or len(sizes) != len(ctx.node.output):
        raise ctx.error(f"split sizes {sizes} must be {len(ctx.node.output)} non-negative sizes summing to "
                        f"axis {axis} of {x.type}")
    if len(sizes) == 1:
        return [x]
    results, offset = [], 0
    for i, n in enumerate(sizes):
        attrs = {"starts": [0] * len(shape), "ends": list(shape), "steps": [1] * len(shape)}
        attrs["starts"][axis], attrs["ends"][axis] = offset, offset + n
        results.append(ctx.emit("Slice", [x], attrs, out=i))
        offset += n
    return results


def _axes(ctx: "OnnxContext") -> list[int] | None:
    if ctx.opset < 13:
        axes = ctx.attr("axes")
        return None if axes is None else [int(a) for a in axes]
    if not ctx.has_input(1):
        return None
    return [int(a) for a in ctx.const_input(1, "axes").reshape(-1)]


def squeeze(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    shape = _shape(x)
    axes = _axes(ctx)
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    axes = [_axis(ctx, a, len(shape), "axes") for a in axes]
    for a in axes:  # a symbolic dim is checked to be 1 at run time (the Reshape's rule)
        if isinstance(shape[a], int) and shape[a] != 1:
            raise ctx.bad_attr("axes", axes, f"dim {a} of {x.type} is not 1")
    return [_reshape(ctx, x, tuple(d for i, d in enumerate(shape) if i not in axes), out=0)]


def unsqueeze(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    axes = _axes(ctx)
    if axes is None:
        raise ctx.error("axes are required")
    out_rank = x.type.rank + len(axes)
    axes = sorted(_axis(ctx, a, out_rank, "axes") for a in axes)
    shape = list(_shape(x))
    for a in axes:
        shape.insert(a, 1)
    return [_reshape(ctx, x, tuple(shape), out=0)]


# -------------------------------------------------------------------------------- removed / folded

def identity(ctx: "OnnxContext") -> list[Value]:
    return [ctx.input(0)]


def dropout(ctx: "OnnxContext") -> list[Value]:
    if ctx.opset >= 12 and ctx.has_input(2) and bool(ctx.const_input(2, "training_mode")):
        raise ctx.error("training_mode=true is not supported (inference only)")
    x = ctx.input(0)
    if not ctx.output_used(1):
        return [x]
    return [x, ctx.const(np.ones(_shape(x), dtype=np.bool_), out=1)]


def constant(ctx: "OnnxContext") -> list[Value]:
    for attr, dtype in (("value", None), ("value_float", np.float32), ("value_floats", np.float32),
                        ("value_int", np.int64), ("value_ints", np.int64)):
        value = ctx.attr(attr)
        if value is not None:
            return [ctx.const(np.asarray(value, dtype=dtype), out=0)]
    raise ctx.error("only value, value_float(s) and value_int(s) constants are supported")


def constant_of_shape(ctx: "OnnxContext") -> list[Value]:
    shape = tuple(int(d) for d in ctx.const_input(0, "shape").reshape(-1))
    fill = ctx.attr("value")
    fill = np.zeros(1, np.float32) if fill is None else fill.reshape(-1)
    array = np.full(shape, fill[0], dtype=fill.dtype) if math.prod(shape) <= 4096 else \
        np.broadcast_to(fill[:1].reshape(()), shape)  # a read-only view: no memory for big weights
    return [ctx.const(array, out=0)]


def shape(ctx: "OnnxContext") -> list[Value]:
    dims = np.array(_shape(ctx.input(0)), dtype=np.int64)
    start, end = int(ctx.attr("start", 0)), ctx.attr("end")
    return [ctx.const(dims[start:None if end is None else int(end)], out=0)]


CONVERTERS: dict[str, Converter] = {
    "Conv": conv,
    "Gemm": gemm,
    "MatMul": matmul,
    "Add": _binary("Add"),
    "Sub": _binary("Sub"),
    "Mul": _binary("Mul"),
    "Div": _binary("Div"),
    "Sum": sum_,
    "Relu": _unary("Relu"),
    "Sigmoid": _unary("RationalSigmoid"),  # onnxruntime's arithmetic (iree_py/ir/rational_math.py)
    "Tanh": _unary("RationalTanh"),
    "LeakyRelu": leaky_relu,
    **{op: _unary(op) for op in ("Exp", "Log", "Sqrt", "Abs", "Neg", "Reciprocal", "Floor", "Ceil", "Round", "Sign",
                                 "Erf", "Softplus", "Softsign", "HardSwish", "Mish", "Sin", "Cos", "Tan", "Atan",
                                 "Asin", "Acos", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh")},
    **{op: _activation(op) for op in ACTIVATION_DEFAULTS},
    "Gelu": gelu,
    "PRelu": _binary("PRelu"),
    "Min": _variadic("Min"),
    "Max": _variadic("Max"),
    "Mean": _variadic("Add", scale_by_count=True),
    "MaxPool": lambda ctx: _pool(ctx, "MaxPool"),
    "AveragePool": lambda ctx: _pool(ctx, "AveragePool"),
    "GlobalAveragePool": global_average_pool,
    "BatchNormalization": with_training_mode(batch_norm),  # training_mode=1: onnx_bntrain.py
    "LRN": lrn,
    "Concat": concat,
    "Reshape": reshape,
    "Flatten": flatten,
    "Transpose": transpose,
    "Slice": slice_,
    "Split": split,
    "Softmax": softmax,
    "LogSoftmax": _softmax_like("LogSoftmax"),
    "Hardmax": _softmax_like("Hardmax"),
    **REDUCE_CONVERTERS,
    "Dropout": dropout,
    "Identity": identity,
    "Constant": constant,
    "ConstantOfShape": constant_of_shape,
    "Squeeze": squeeze,
    "Unsqueeze": unsqueeze,
    "Shape": shape,
    **LOGIC_CONVERTERS,
    **SEQUENCE_CONVERTERS,
    **NN_CONVERTERS,
    **QUANT_CONVERTERS,
    **INDEXING_CONVERTERS,
    **RESIZE_PAD_CONVERTERS,
    **RECURRENT_CONVERTERS,
    **CONVT_CONVERTERS,
    **DTYPES2_CONVERTERS,
    **LOSS_CONVERTERS,
    **MISC_CONVERTERS,
    **CUMULATIVE_CONVERTERS,
    **GRID_SAMPLE_CONVERTERS,
    **SIGNAL_CONVERTERS,
    **LINEAR_ATTENTION_CONVERTERS,
    **CONTROL_FLOW_CONVERTERS,
    **DATADEP_CONVERTERS,
    **SIGNAL_RT_CONVERTERS,
    **IMAGEOPS_CONVERTERS,
    **NMS_CONVERTERS,
    **TEXTOPS_CONVERTERS,
    **SCAN8_CONVERTERS,
}
CONVERTERS["Equal"] = with_string_equal(CONVERTERS["Equal"])  # string operands (onnx_strings.py)

# Ops of other domains: domain -> op type -> converter (onnxruntime's contrib ops that its tools write).
DOMAIN_CONVERTERS: dict[str, dict[str, Converter]] = {
    "com.microsoft": MICROSOFT_CONVERTERS,
}
wrap_bf16(CONVERTERS)  # bf16 operands computed in f32 (onnx_bf16.py)
