"""ONNX BatchNormalization with training_mode=1 (opset 14+) as a composition of normalized ops.

    x [N, C, d...], scale/B/input_mean/input_var [C]; statistics over every axis but 1:
    current_mean = ReduceMean(x)                 current_var = ReduceMean((x - current_mean)^2)  (biased)
    Y            = (x - current_mean) / sqrt(current_var + epsilon) * scale + B
    running_mean = input_mean * momentum + current_mean * (1 - momentum)     (optional output 1)
    running_var  = input_var * momentum + current_var * (1 - momentum)       (optional output 2)

The variance in running_var is the biased one (numpy's x.var(), as onnx's reference and the backend
test data use). training_mode=0 and opsets before 14 go to the inference converter given to
`with_training_mode` (onnx_ops.batch_norm).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.frontends.onnx_compose import out_index, reduce_axes, reshape, scalar, shape_of
from iree_py.ir.graph import Value
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

Converter = Callable[["OnnxContext"], list[Value]]
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
