"""ONNX normalization ops, Swish and Shrink as compositions of normalized ops (Reduce, elementwise,
Reshape, Transpose); Attention (onnx_attention.py) and Einsum (onnx_einsum.py) are listed here too,
and Range of constants (used by the expanded Attention functions).

Normalizations use the numerically sensible form: mean, then the mean of squared deviations.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.frontends.onnx_attention import attention
from iree_py.frontends.onnx_compose import (affine, axis_attr, check_float_stash, normalize, optional_input,
                                            out_index, reduce_axes, reshape, scalar, shape_of)
from iree_py.frontends.onnx_einsum import einsum
from iree_py.ir.graph import Value

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext


# ----------------------------------------------------------------------------------- normalizations

def layer_normalization(ctx: "OnnxContext") -> list[Value]:
    """Opset 17: normalize over axes [axis, rank); optional outputs Mean and InvStdDev (keepdims)."""
    check_float_stash(ctx)
    x = ctx.input(0)
    rank = x.type.rank
    if rank == 0:
        raise ctx.error(f"input {x.type} must have rank >= 1")
    axis = axis_attr(ctx, rank, -1)
    axes = list(range(axis, rank))
    epsilon = float(ctx.attr("epsilon", 1e-5))
    y, mean, inv_std = normalize(ctx, x, axes, epsilon, mean_out=out_index(ctx, 1), inv_out=out_index(ctx, 2))
    y = affine(ctx, y, ctx.input(1), optional_input(ctx, 2), out=0)
    return [y, mean, inv_std]


def rms_normalization(ctx: "OnnxContext") -> list[Value]:
    """Opset 23: x / sqrt(mean(x^2) + epsilon) * scale over axes [axis, rank)."""
    check_float_stash(ctx)
    x = ctx.input(0)
    rank = x.type.rank
    if rank == 0:
        raise ctx.error(f"input {x.type} must have rank >= 1")
    axes = list(range(axis_attr(ctx, rank, -1), rank))
    epsilon = float(ctx.attr("epsilon", 1e-5))
    mean_square = reduce_axes(ctx, ctx.emit("Mul", [x, x]), "mean", axes, 1)
    rms = ctx.emit("Sqrt", [ctx.emit("Add", [mean_square, scalar(ctx, epsilon, "epsilon", like=x)])])
    y = ctx.emit("Mul", [x, ctx.emit("Reciprocal", [rms])])
    return [affine(ctx, y, ctx.input(1), None, out=0)]


def group_normalization(ctx: "OnnxContext") -> list[Value]:
    """Opset 18: scale/bias per group ([G]); opset 21: per channel ([C]). Statistics per (n, group)."""
    if ctx.opset >= 21:
        check_float_stash(ctx)
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.input(2)
    shape = shape_of(x)
    if len(shape) < 2:
        raise ctx.error(f"input {x.type} must have rank >= 2 ([N, C, ...])")
    groups = int(ctx.attr("num_groups"))
    n, c, spatial = shape[0], shape[1], shape[2:]
    if groups <= 0 or c % groups:
        raise ctx.bad_attr("num_groups", groups, f"must divide the {c} channels of {x.type}")
    per_group = (c // groups) * math.prod(spatial)
    grouped = reshape(ctx, x, (n, groups, per_group))
    y, _, _ = normalize(ctx, grouped, [2], float(ctx.attr("epsilon", 1e-5)))
    params = groups if ctx.opset < 21 else c
    for name, p in (("scale", scale), ("bias", bias)):
        if p.type.num_elements != params:
            raise ctx.error(f"{name} {p.type} must have {params} elements (one per "
                            f"{'group' if ctx.opset < 21 else 'channel'} at opset {ctx.opset})")
    if ctx.opset < 21:
        y = affine(ctx, y, reshape(ctx, scale, (groups, 1)), reshape(ctx, bias, (groups, 1)), out=None)
        return [reshape(ctx, y, shape, out=0)]
    y = reshape(ctx, y, shape)
    per_channel = (c,) + (1,) * len(spatial)
    return [affine(ctx, y, reshape(ctx, scale, per_channel), reshape(ctx, bias, per_channel), out=0)]


def instance_normalization(ctx: "OnnxContext") -> list[Value]:
    """Statistics per (n, c) over the spatial axes; scale and bias per channel."""
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.input(2)
    shape = shape_of(x)
    if len(shape) < 3:
        raise ctx.error(f"input {x.type} must have rank >= 3 ([N, C, D1, ...])")
    y, _, _ = normalize(ctx, x, list(range(2, len(shape))), float(ctx.attr("epsilon", 1e-5)))
    per_channel = (shape[1],) + (1,) * (len(shape) - 2)
    return [affine(ctx, y, reshape(ctx, scale, per_channel), reshape(ctx, bias, per_channel), out=0)]


MVN_EPSILON = 1e-9  # the ONNX function body: (X - mean) / (sqrt(var) + 1e-9)


def mean_variance_normalization(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    rank = x.type.rank
    requested = [int(a) for a in ctx.attr("axes", [0, 2, 3])]
    axes = sorted({a + rank if a < 0 else a for a in requested})
    if not axes or not all(0 <= a < rank for a in axes):
        raise ctx.bad_attr("axes", requested, f"out of range for input {x.type}")
    mean = reduce_axes(ctx, x, "mean", axes, 1)
    centered = ctx.emit("Sub", [x, mean])
    var = reduce_axes(ctx, ctx.emit("Mul", [centered, centered]), "mean", axes, 1)
    std = ctx.emit("Add", [ctx.emit("Sqrt", [var]), scalar(ctx, MVN_EPSILON, "epsilon", like=x)])
    return [ctx.emit("Div", [centered, std], out=0)]


# ------------------------------------------------------------------------------------ activations

def swish(ctx: "OnnxContext") -> list[Value]:
    """Opset 24: x * sigmoid(alpha * x)."""
    x = ctx.input(0)
    alpha = float(ctx.attr("alpha", 1.0))
    scaled = x if alpha == 1.0 else ctx.emit("Mul", [x, scalar(ctx, alpha, "alpha", like=x)])
    return [ctx.emit("Mul", [x, ctx.emit("Sigmoid", [scaled])], out=0)]


def shrink(ctx: "OnnxContext") -> list[Value]:
    """y = x - bias if x > lambd, x + bias if x < -lambd, else 0; written without compares as
    sign(relu(|x| - lambd)) * (x - bias * sign(x)) (|x| - lambd is exactly 0 only when |x| == lambd)."""
    x = ctx.input(0)
    if x.type.dtype.numpy != np.float32:
        raise ctx.error(f"Shrink on {x.type} is not supported; only float32")
    lambd, bias = float(ctx.attr("lambd", 0.5)), float(ctx.attr("bias", 0.0))
    beyond = ctx.emit("Sub", [ctx.emit("Abs", [x]), scalar(ctx, lambd, "lambd", like=x)])
    outside = ctx.emit("Sign", [ctx.emit("Relu", [beyond])])
    shifted = x
    if bias != 0.0:
        shifted = ctx.emit("Sub", [x, ctx.emit("Mul", [ctx.emit("Sign", [x]), scalar(ctx, bias, "bias", like=x)])])
    return [ctx.emit("Mul", [outside, shifted], out=0)]


# ---------------------------------------------------------------------------- shape computations

def range_(ctx: "OnnxContext") -> list[Value]:
    """Range of constants (the causal-mask index math of expanded Attention functions)."""
    start, limit, delta = (ctx.const_input(i, name) for i, name in enumerate(("start", "limit", "delta")))
    for i, (name, v) in enumerate((("start", start), ("limit", limit), ("delta", delta))):
        if v.size != 1:  # the spec says scalar; one-element tensors (as onnx's reference takes) are read as one
            raise ctx.error(f"{name} (input {i}) must be a scalar, got shape {list(v.shape)}")
    start, limit, delta = (v.reshape(()) for v in (start, limit, delta))
    if float(delta) == 0:
        raise ctx.error("delta (input 2) is 0")
    count = max(int(np.ceil((float(limit) - float(start)) / float(delta))), 0)
    values = start + np.arange(count, dtype=start.dtype) * delta
    return [ctx.const(values.astype(start.dtype), out=0)]


NN_CONVERTERS: dict[str, Callable[["OnnxContext"], list[Value]]] = {
    "LayerNormalization": layer_normalization,
    "RMSNormalization": rms_normalization,
    "GroupNormalization": group_normalization,
    "InstanceNormalization": instance_normalization,
    "MeanVarianceNormalization": mean_variance_normalization,
    "Swish": swish,
    "Shrink": shrink,
    "Attention": attention,
    "Einsum": einsum,
    "Range": range_,
}
