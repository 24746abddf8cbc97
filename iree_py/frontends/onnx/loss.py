"""ONNX NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss as compositions of normalized ops.

    x [N, C, d...] (log-probabilities), target [N, d...] (class indices), optional weight [C]
    w[n, d]    = weight[target[n, d]] (1 without weight), 0 where target == ignore_index
    loss[n, d] = -x[n, target[n, d], d] * w[n, d]
    reduction  none: loss; sum: sum(loss); mean: sum(loss) / sum(w)

An ignored target may lie outside [0, C) (it is often -1 or -100): it is replaced by 0 before any
gather, and its loss is zeroed. SoftmaxCrossEntropyLoss is the same on LogSoftmax(scores, axis=1),
whose result is the optional second output (log_prob).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx.compose import Converter, optional_input, out_index, reduce_axes, reshape, scalar, shape_of
from iree_py.ir.graph import Value
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


REDUCTIONS = ("none", "sum", "mean")


INDEX_DTYPES = (DType.i32, DType.i64)


def _check_operands(ctx: "OnnxContext", x: Value, target: Value, weight: Value | None) -> None:
    xs, ts = shape_of(x), shape_of(target)
    if len(xs) < 2:
        raise ctx.error(f"input {x.type} must have rank >= 2 ([N, C, d...])")
    if ts != xs[:1] + xs[2:]:
        raise ctx.error(f"target {target.type} must have shape {list(xs[:1] + xs[2:])} (input {x.type} without C)")
    if target.type.dtype not in INDEX_DTYPES:
        raise ctx.error(f"target {target.type} must be int32 or int64")
    if x.type.dtype != DType.f32:
        raise ctx.error(f"input {x.type} is not supported; only float32")
    if weight is not None and shape_of(weight) != (xs[1],):
        raise ctx.error(f"weight {weight.type} must have shape [{xs[1]}] (one per class)")


def _reduction(ctx: "OnnxContext") -> str:
    reduction = ctx.attr("reduction", "mean")
    if reduction not in REDUCTIONS:
        raise ctx.bad_attr("reduction", reduction, f"expected one of {', '.join(REDUCTIONS)}")
    return reduction


def negative_log_likelihood(ctx: "OnnxContext", x: Value, target: Value, weight: Value | None,
                            out: int | None) -> Value:
    """The loss of log-probabilities `x` (see the module docstring); `out` names the result."""
    _check_operands(ctx, x, target, weight)
    reduction = _reduction(ctx)
    ignore_index = ctx.attr("ignore_index")
    ignored = None
    if ignore_index is not None:
        ii = ctx.const(np.array(int(ignore_index), target.type.dtype.numpy), "ignore_index")
        ignored = ctx.emit("Equal", [target, ii])
        zero_index = ctx.const(np.array(0, target.type.dtype.numpy), "zero_index")
        target = ctx.emit("Where", [ignored, zero_index, target])
    xs = shape_of(x)
    picked = ctx.emit("GatherElements", [x, reshape(ctx, target, (xs[0], 1, *xs[2:]))], {"axis": 1})
    unweighted = weight is None and ignored is None
    loss = ctx.emit("Neg", [reshape(ctx, picked, shape_of(target))],
                    out=out if unweighted and reduction == "none" else None)
    w = ctx.emit("Gather", [weight, target], {"axis": 0}) if weight is not None else None
    if ignored is not None:
        zero = scalar(ctx, 0.0, "zero", like=x)
        w = ctx.emit("Where", [ignored, zero, w if w is not None else scalar(ctx, 1.0, "one", like=x)])
    if w is not None:
        loss = ctx.emit("Mul", [loss, w], out=out if reduction == "none" else None)
    if reduction == "none":
        return loss
    every_axis = list(range(len(shape_of(loss))))
    if reduction == "sum" or w is None:
        return reduce_axes(ctx, loss, reduction, every_axis, 0, out=out)
    total = reduce_axes(ctx, loss, "sum", every_axis, 0)
    return ctx.emit("Div", [total, reduce_axes(ctx, w, "sum", every_axis, 0)], out=out)


def nll_loss(ctx: "OnnxContext") -> list[Value]:
    return [negative_log_likelihood(ctx, ctx.input(0), ctx.input(1), optional_input(ctx, 2), out=0)]


def softmax_cross_entropy_loss(ctx: "OnnxContext") -> list[Value]:
    scores = ctx.input(0)
    if scores.type.rank < 2:
        raise ctx.error(f"scores {scores.type} must have rank >= 2 ([N, C, d...])")
    log_prob = ctx.emit("LogSoftmax", [scores], {"axis": 1}, out=out_index(ctx, 1))
    loss = negative_log_likelihood(ctx, log_prob, ctx.input(1), optional_input(ctx, 2), out=0)
    return [loss, log_prob]


CONVERTERS: dict[str, Converter] = {
    "NegativeLogLikelihoodLoss": nll_loss,
    "SoftmaxCrossEntropyLoss": softmax_cross_entropy_loss,
}
