"""ONNX normalizations and the softmax family: BatchNormalization (inference: one op; parameters
computed at run time: elementwise ops; training_mode=1: below), LayerNormalization, RMSNormalization,
GroupNormalization, InstanceNormalization, MeanVarianceNormalization, LpNormalization, LRN,
Softmax, LogSoftmax and Hardmax (one axis from opset 13; before, over the input flattened to 2-D at
axis).

Normalizations use the numerically sensible form: mean, then the mean of squared deviations.
LpNormalization: x / ||x||_p along axis (p 1 or 2); a zero norm gives 0 (as the ONNX reference).

BatchNormalization with training_mode=1 (opset 14+) as a composition of normalized ops.

    x [N, C, d...], scale/B/input_mean/input_var [C]; statistics over every axis but 1:
    current_mean = ReduceMean(x)                 current_var = ReduceMean((x - current_mean)^2)  (biased)
    Y            = (x - current_mean) / sqrt(current_var + epsilon) * scale + B
    running_mean = input_mean * momentum + current_mean * (1 - momentum)     (optional output 1)
    running_var  = input_var * momentum + current_var * (1 - momentum)       (optional output 2)

The variance in running_var is the biased one (numpy's x.var(), as onnx's reference and the backend
test data use). training_mode=0 and opsets before 14 go to the inference converter given to
`with_training_mode` (batch_norm).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx.compose import (Converter, affine, axis_attr, check_float_stash, checked_axis, normalize,
                                            optional_input, out_index, reduce_axes, require_float, reshape, scalar,
                                            shape_of)
from iree_py.frontends.onnx.dims import dims_of
from iree_py.frontends.onnx.layout import _reshape
from iree_py.ir.graph import Value
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


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
            axis = checked_axis(ctx, int(ctx.attr("axis", -1)), rank)
            return [ctx.emit(op, [x], {"axis": axis}, out=0)]
        axis = checked_axis(ctx, int(ctx.attr("axis", 1)), rank)
        if axis == rank - 1:  # the flattened trailing part is just the last axis
            return [ctx.emit(op, [x], {"axis": axis}, out=0)]
        shape = dims_of(x)
        flat = _reshape(ctx, x, (math.prod(shape[:axis]), math.prod(shape[axis:])))
        y = ctx.emit(op, [flat], {"axis": 1})
        return [_reshape(ctx, y, shape, out=0)]
    return convert


softmax = _softmax_like("Softmax")


FLOAT_DTYPES = (DType.f32, DType.f64)


def _training_mode(ctx: "OnnxContext") -> bool:
    training = int(ctx.attr("training_mode", 0))
    if training not in (0, 1):
        raise ctx.bad_attr("training_mode", training, "expected 0 or 1")
    return ctx.opset >= 14 and training == 1


def _check_operands(ctx: "OnnxContext", x: Value, params: list[Value]) -> None:
    if x.type.rank < 2:
        raise ctx.error(f"input {x.type} must have rank >= 2 ([N, C, d...])")
    if x.type.dtype not in FLOAT_DTYPES:
        raise ctx.error(f"input {x.type} is not supported in training mode; only float32 or float64")
    channels = shape_of(x)[1]
    for name, p in zip(("scale", "B", "input_mean", "input_var"), params):
        if p.type.dtype != x.type.dtype:
            raise ctx.error(f"{name} {p.type} must have the input's type {x.type.dtype.value} in training mode")
        if shape_of(p) != (channels,):
            raise ctx.error(f"{name} {p.type} must have shape [{channels}] (one per channel of input {x.type})")


def _running(ctx: "OnnxContext", given: Value, current: Value, momentum: float, out: int | None) -> Value:
    """given * momentum + current * (1 - momentum), named like output `out`."""
    kept = ctx.emit("Mul", [given, scalar(ctx, momentum, "momentum", like=given)])
    new = ctx.emit("Mul", [current, scalar(ctx, 1.0 - momentum, "one_minus_momentum", like=current)])
    return ctx.emit("Add", [kept, new], out=out)


def batch_norm_training(ctx: "OnnxContext") -> list[Value]:
    """Y, then running_mean and running_var when the node names them (see the module docstring)."""
    x = ctx.input(0)
    params = [ctx.input(i) for i in range(1, 5)]
    _check_operands(ctx, x, params)
    rank, channels = x.type.rank, shape_of(x)[1]
    # ONNX float attributes (and their schema defaults) are float32 values: the same numbers for float64
    epsilon = float(np.float32(ctx.attr("epsilon", 1e-5)))
    momentum = float(np.float32(ctx.attr("momentum", 0.9)))
    axes = [0, *range(2, rank)]
    mean = reduce_axes(ctx, x, "mean", axes, 1)  # [1, C, 1...]
    centered = ctx.emit("Sub", [x, mean])
    var = reduce_axes(ctx, ctx.emit("Mul", [centered, centered]), "mean", axes, 1)  # biased
    channel_shape = (channels, *([1] * (rank - 2)))
    scale, bias = (reshape(ctx, p, channel_shape) for p in params[:2])
    std = ctx.emit("Sqrt", [ctx.emit("Add", [var, scalar(ctx, epsilon, "epsilon", like=var)])])
    gain = ctx.emit("Div", [scale, std])
    y = ctx.emit("Add", [ctx.emit("Mul", [centered, gain]), bias], out=0)
    mean_out, var_out = out_index(ctx, 1), out_index(ctx, 2)
    if mean_out is None and var_out is None:
        return [y]
    running_mean = _running(ctx, params[2], reshape(ctx, mean, (channels,)), momentum, mean_out)
    if var_out is None:
        return [y, running_mean]
    return [y, running_mean, _running(ctx, params[3], reshape(ctx, var, (channels,)), momentum, var_out)]


def with_training_mode(inference: Converter) -> Converter:
    """BatchNormalization: training_mode=1 (opset 14+) here, everything else to `inference`."""
    def convert(ctx: "OnnxContext") -> list[Value]:
        return batch_norm_training(ctx) if _training_mode(ctx) else inference(ctx)
    return convert


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


def lp_normalization(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    require_float(ctx, x, "input")
    axis = axis_attr(ctx, x.type.rank, -1)
    p = int(ctx.attr("p", 2))
    if p not in (1, 2):
        raise ctx.bad_attr("p", p, "only 1 and 2")
    norm = reduce_axes(ctx, x, "l1" if p == 1 else "l2", [axis], 1)
    zero = scalar(ctx, 0.0, "zero", like=x)
    is_zero = ctx.emit("Equal", [norm, zero])
    safe = ctx.emit("Where", [is_zero, scalar(ctx, 1.0, "one", like=x), norm])
    return [ctx.emit("Where", [is_zero, zero, ctx.emit("Div", [x, safe])], out=0)]


CONVERTERS: dict[str, Converter] = {
    "BatchNormalization": with_training_mode(batch_norm),
    "LayerNormalization": layer_normalization,
    "RMSNormalization": rms_normalization,
    "GroupNormalization": group_normalization,
    "InstanceNormalization": instance_normalization,
    "MeanVarianceNormalization": mean_variance_normalization,
    "LpNormalization": lp_normalization,
    "LRN": lrn,
    "Softmax": softmax,
    "LogSoftmax": _softmax_like("LogSoftmax"),
    "Hardmax": _softmax_like("Hardmax"),
}
