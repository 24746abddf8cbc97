"""ONNX ConvTranspose, LpPool, GlobalMaxPool and GlobalLpPool -> normalized ops (registered in
onnx_ops.py's CONVERTERS).

ConvTranspose (opsets 1, 11, 22) becomes one ConvTranspose op on 1..3 spatial axes; auto_pad,
output_padding and output_shape are folded into its pads as onnxruntime computes them: with
output_shape the total padding (in - 1) * stride + output_padding + (kernel - 1) * dilation + 1 -
output_shape (at least 0) is split with the odd pixel at the start (SAME_UPPER: at the end); with
SAME_UPPER / SAME_LOWER the same total towards in * stride (at least 0: never an extension) is
split with the odd pixel at the end / the start. N, C and the spatial dims of X may be symbolic
(docs/dynamic_shapes.md): the SAME_* padding does not depend on the input size, so only
output_shape on a symbolic axis is refused.
LpPool is its own op; 1-D and 3-D LpPool, MaxPool and AveragePool run as 2-D ones (`pool_1d_3d`,
called by onnx_ops.py); GlobalMaxPool and GlobalLpPool are Reduce ops.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.frontends.onnx_dims import dims_of
from iree_py.frontends.onnx_symbolic import floordiv, sign_of, smax
from iree_py.ir.graph import Value
from iree_py.ir.ops.conv import conv_transpose_full_size
from iree_py.ir.symbols import Expr, dim, dim_text
from iree_py.ir.types import Dim

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

Converter = Callable[["OnnxContext"], list[Value]]


def _shape(ctx: "OnnxContext", v: Value) -> tuple[int, ...]:
    """The static shape of `v`; a symbolic one is refused (the pooling paths here are static only)."""
    if not v.type.is_static:
        raise ctx.error(f"{v.type} has symbolic dims, which this op supports only in 2-D ConvTranspose; "
                        f"give them values (compile --dim NAME=VALUE)")
    return tuple(int(d) for d in v.type.shape)


def _ints(ctx: "OnnxContext", name: str, count: int, default: int) -> list[int]:
    values = [int(v) for v in ctx.attr(name, [default] * count)]
    if len(values) != count:
        raise ctx.bad_attr(name, values, f"expected {count} values (one per spatial axis)")
    return values


def _transpose_pads(ctx: "OnnxContext", spatial: tuple[Dim, ...], kernel: tuple[int, ...], strides: list[int],
                    dilations: list[int], output_padding: list[int]) -> list[int]:
    """The ConvTranspose op's pads [begins..., ends...]: the crop of the full result. Spatial dims
    may be symbolic: with SAME_* the input size cancels out of the padding; output_shape on a
    symbolic axis would make the padding depend on the input size, which is refused."""
    rank = len(spatial)
    full = [conv_transpose_full_size(i, k, s, d) for i, k, s, d in zip(spatial, kernel, strides, dilations)]
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        raise ctx.bad_attr("auto_pad", auto_pad, "expected NOTSET, VALID, SAME_UPPER or SAME_LOWER")
    output_shape = ctx.attr("output_shape")
    sizes: list[Dim]
    if output_shape is not None:
        sizes = [int(d) for d in output_shape][-rank:]
        if len(sizes) != rank or min(sizes) < 1:
            raise ctx.bad_attr("output_shape", output_shape, f"expected {rank} positive spatial sizes")
        head_bigger = auto_pad != "SAME_UPPER"
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        sizes = [dim(Expr.of(i) * s) for i, s in zip(spatial, strides)]
        head_bigger = auto_pad == "SAME_LOWER"
    else:
        pads = [0] * (2 * rank) if auto_pad == "VALID" else _ints(ctx, "pads", 2 * rank, 0)
        if min(pads) < 0:
            raise ctx.bad_attr("pads", pads, "negative pads")
        return pads[:rank] + [end - extra for end, extra in zip(pads[rank:], output_padding)]
    begins: list[Dim] = []
    ends: list[Dim] = []
    for f, extra, size in zip(full, output_padding, sizes):
        total = smax(ctx, 0, Expr.of(f) + extra - size)
        begins.append(dim(Expr.of(total) - floordiv(total, 2)) if head_bigger else floordiv(total, 2))
        # output_shape fixes the size (larger: the end gets bias-only positions); SAME_* only pads
        tail = dim(Expr.of(total) - begins[-1])
        ends.append(dim(Expr.of(f) - begins[-1] - size) if output_shape is not None else dim(Expr.of(tail) - extra))
    pads = begins + ends
    if not all(isinstance(p, int) for p in pads):
        what = "output_shape" if output_shape is not None else "auto_pad"
        value = output_shape if output_shape is not None else auto_pad
        raise ctx.bad_attr(what, value, f"the padding it implies for input spatial dims "
                                        f"{[dim_text(d) for d in spatial]} depends on their values "
                                        f"({[str(p) for p in pads]}); give the symbols values (--dim NAME=VALUE)")
    return [int(p) for p in pads]


def conv_transpose(ctx: "OnnxContext") -> list[Value]:
    """X may have symbolic N, C and spatial dims (W static); C is checked against W by the op's rule
    (at run time when symbolic)."""
    x, w = ctx.input(0), ctx.input(1)
    rank = x.type.rank - 2
    if not 1 <= rank <= 3 or w.type.rank != x.type.rank:
        raise ctx.error(f"input {x.type} and weight {w.type} must both have 1..3 spatial axes")
    if not w.type.is_static:
        raise ctx.error(f"weight {w.type} must have a static shape")
    w_shape = tuple(int(d) for d in w.type.shape)
    kernel = w_shape[2:]
    declared = ctx.attr("kernel_shape")
    if declared is not None and tuple(int(k) for k in declared) != kernel:
        raise ctx.bad_attr("kernel_shape", declared, f"differs from the weight's spatial shape {list(kernel)}")
    strides = _ints(ctx, "strides", rank, 1)
    dilations = _ints(ctx, "dilations", rank, 1)
    output_padding = _ints(ctx, "output_padding", rank, 0)
    if min(strides) < 1 or min(dilations) < 1 or min(output_padding) < 0:
        raise ctx.error(f"strides {strides} / dilations {dilations} must be >= 1, output_padding {output_padding} >= 0")
    group = int(ctx.attr("group", 1))
    channels = dims_of(x)[1]
    if group < 1 or w_shape[0] % group or sign_of(ctx, channels, w_shape[0]) not in (0, None):
        raise ctx.bad_attr("group", group, f"input channels {dim_text(channels)} must equal the first dim of weight "
                                           f"{w.type} and be divisible by the group")
    pads = _transpose_pads(ctx, dims_of(x)[2:], kernel, strides, dilations, output_padding)
    attrs = {"strides": strides, "dilations": dilations, "pads": pads, "group": group}
    inputs = [x, w] + ([ctx.input(2)] if ctx.has_input(2) else [])
    return [ctx.emit("ConvTranspose", inputs, attrs, out=0)]


def _p(ctx: "OnnxContext") -> int:
    p = ctx.attr("p", 2)
    if float(p) != int(p) or int(p) < 1:
        raise ctx.bad_attr("p", p, "only integer p >= 1")
    return int(p)


def _pool_pads(ctx: "OnnxContext", spatial: tuple[int, ...], kernel: list[int], strides: list[int],
               dilations: list[int]) -> list[int]:
    """A pooling window's pads [begins..., ends...] from auto_pad / pads (output ceil(in / stride)
    for SAME_*; the odd pixel at the end for SAME_UPPER, at the start for SAME_LOWER)."""
    rank = len(spatial)
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        return _ints(ctx, "pads", 2 * rank, 0)
    if auto_pad == "VALID":
        return [0] * (2 * rank)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise ctx.bad_attr("auto_pad", auto_pad, "expected NOTSET, VALID, SAME_UPPER or SAME_LOWER")
    begins, ends = [], []
    for size, k, s, d in zip(spatial, kernel, strides, dilations):
        total = max(0, (-(-size // s) - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else big)
        ends.append(big if auto_pad == "SAME_UPPER" else small)
    return begins + ends


def _pool_2d(ctx: "OnnxContext", op: str, extra: dict, dilated: bool) -> list[Value]:
    """A 1-D, 2-D or 3-D pooling node as 2-D ops `op`. 1-D: [N, C, L] runs as [N, C, 1, L]. 3-D: the
    window is a box, so the pool is separable: first over (H, W) of [N, C*D, H, W], then over D of
    [N, C, D, OH*OW] (max of maxima; the averages' counts and the Lp sums factor per axis)."""
    x = ctx.input(0)
    kernel = [int(k) for k in ctx.attr("kernel_shape", [])]
    if x.type.rank not in (3, 4, 5) or len(kernel) != x.type.rank - 2:
        raise ctx.error(f"only 1-D, 2-D and 3-D pooling is supported (kernel_shape {kernel}, input {x.type})")
    rank = len(kernel)
    strides = _ints(ctx, "strides", rank, 1)
    dilations = _ints(ctx, "dilations", rank, 1)
    if not dilated and dilations != [1] * rank:
        raise ctx.bad_attr("dilations", dilations, f"{op} with dilations")
    pads = _pool_pads(ctx, _shape(ctx, x)[2:], kernel, strides, dilations)
    ceil_mode = int(ctx.attr("ceil_mode", 0))

    def pool(v: Value, axes: list[int], out: int | None = None) -> Value:
        """The 2-D op over the last two axes of v, with the window of spatial `axes` (-1: none)."""
        def pick(values: list[int], default: int, offset: int = 0) -> list[int]:
            return [values[offset + a] if a >= 0 else default for a in axes]
        attrs = {"kernel": pick(kernel, 1), "strides": pick(strides, 1), "ceil_mode": ceil_mode,
                 "pads": pick(pads, 0) + pick(pads, 0, rank), **extra}
        if dilated:
            attrs["dilations"] = pick(dilations, 1)
        return ctx.emit(op, [v], attrs, out=out)

    def reshape(v: Value, shape: list[int], out: int | None = None) -> Value:
        return ctx.emit("Reshape", [v], {"shape": shape}, out=out)

    n, c = _shape(ctx, x)[:2]
    if rank == 2:
        return [pool(x, [0, 1], out=0)]
    if rank == 1:
        y4 = pool(reshape(x, [n, c, 1, _shape(ctx, x)[2]]), [-1, 0])
        return [reshape(y4, [n, c, _shape(ctx, y4)[3]], out=0)]
    d, h, w = _shape(ctx, x)[2:]
    planes = pool(reshape(x, [n, c * d, h, w]), [1, 2])
    oh, ow = _shape(ctx, planes)[2:]
    y4 = pool(reshape(planes, [n, c, d, oh * ow]), [0, -1])
    return [reshape(y4, [n, c, _shape(ctx, y4)[2], oh, ow], out=0)]


def lp_pool(ctx: "OnnxContext") -> list[Value]:
    return _pool_2d(ctx, "LpPool", {"p": _p(ctx)}, dilated=True)


def pool_1d_3d(ctx: "OnnxContext", op: str) -> list[Value]:
    """ONNX MaxPool / AveragePool on [N, C, L] or [N, C, D, H, W] (onnx_ops.py converts the 2-D ones)."""
    if ctx.output_used(1):
        raise ctx.error("the Indices output of a 1-D or 3-D MaxPool is not supported (2-D is)")
    if op == "MaxPool":
        return _pool_2d(ctx, op, {}, dilated=True)
    return _pool_2d(ctx, op, {"count_include_pad": int(ctx.attr("count_include_pad", 0))}, dilated=True)


def _spatial_axes(ctx: "OnnxContext", x: Value) -> list[int]:
    if x.type.rank < 3:
        raise ctx.error(f"global pooling wants input [N, C, ...], got {x.type}")
    return list(range(2, x.type.rank))


def global_max_pool(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    return [ctx.emit("Reduce", [x], {"kind": "max", "axes": _spatial_axes(ctx, x), "keepdims": 1}, out=0)]


def global_lp_pool(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    axes, p = _spatial_axes(ctx, x), _p(ctx)
    if p in (1, 2):
        return [ctx.emit("Reduce", [x], {"kind": f"l{p}", "axes": axes, "keepdims": 1}, out=0)]
    powered = ctx.emit("Pow", [ctx.emit("Abs", [x]), ctx.const(np.array(p, dtype=np.float32), "p")])
    total = ctx.emit("Reduce", [powered], {"kind": "sum", "axes": axes, "keepdims": 1})
    return [ctx.emit("Pow", [total, ctx.const(np.array(1.0 / p, dtype=np.float32), "inv_p")], out=0)]


CONVT_CONVERTERS: dict[str, Converter] = {
    "ConvTranspose": conv_transpose,
    "LpPool": lp_pool,
    "GlobalMaxPool": global_max_pool,
    "GlobalLpPool": global_lp_pool,
}
