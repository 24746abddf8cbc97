"""ONNX pooling: MaxPool (and its Indices output), AveragePool, LpPool, GlobalAveragePool,
GlobalMaxPool, GlobalLpPool and MaxUnpool. 1-D and 3-D LpPool, MaxPool and AveragePool run as 2-D ones
(`pool_1d_3d`); GlobalMaxPool and GlobalLpPool are Reduce ops.

MaxUnpool: X scattered into zeros at MaxPool's flat indices (ScatterElements). With output_shape
given at run time, as the ONNX reference does, X is scattered into the inferred shape and the
result zero-padded at the end of each axis up to output_shape.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np
import onnx.helper

from iree_py.frontends.onnx.compose import Converter, reshape, shape_of
from iree_py.frontends.onnx.conv import _ints, _shape, _window_attrs
from iree_py.frontends.onnx.dims import dims_of
from iree_py.frontends.onnx.symbolic import INDEX_DTYPES, _cast, iota, runtime_symbols
from iree_py.ir.graph import Value
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


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
    """ONNX MaxPool / AveragePool on [N, C, L] or [N, C, D, H, W] (_pool converts the 2-D ones)."""
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


def _constant_max_unpool(ctx: "OnnxContext") -> list[Value]:
    """Zeros of the output shape, flattened, with X scattered to the flat indices I (as MaxPool's
    Indices output gives them: over the whole output tensor); an index out of range is skipped."""
    x, idx = ctx.input(0), ctx.input(1)
    xs = shape_of(x)
    if shape_of(idx) != xs or idx.type.dtype != DType.i64:
        raise ctx.error(f"indices {idx.type} must be int64 of the shape of X {x.type}")
    kernel = [int(k) for k in ctx.attr("kernel_shape", [])]
    spatial = len(xs) - 2
    if len(kernel) != spatial:
        raise ctx.bad_attr("kernel_shape", kernel, f"expected {spatial} sizes for X {x.type}")
    strides = [int(v) for v in ctx.attr("strides", [1] * spatial)]
    pads = [int(v) for v in ctx.attr("pads", [0] * 2 * spatial)]
    out_shape = tuple(xs[:2]) + tuple((d - 1) * s + k - pads[i] - pads[i + spatial]
                                      for i, (d, s, k) in enumerate(zip(xs[2:], strides, kernel)))
    if ctx.has_input(2):
        out_shape = tuple(int(d) for d in np.asarray(ctx.const_input(2, "output_shape")).reshape(-1))
    total = int(np.prod(out_shape))
    zeros = ctx.const(np.zeros((total,), x.type.dtype.numpy), "unpooled")
    flat = ctx.emit("ScatterElements", [zeros, reshape(ctx, idx, (int(np.prod(xs)),)),
                                        reshape(ctx, x, (int(np.prod(xs)),))], {"axis": 0, "reduction": "none"})
    return [reshape(ctx, flat, out_shape, out=0)]


def runtime_max_unpool(static: Callable[["OnnxContext"], list[Value]]) -> Callable[["OnnxContext"], list[Value]]:
    """MaxUnpool: `static` unless output_shape is given at run time. Then, as the ONNX reference does,
    X is scattered to the flat indices I of the inferred shape (the static path) and the result is
    zero-padded at the end of each axis up to output_shape: per axis a Gather whose index is
    min(o, inferred) of the result with one zero appended to each axis (index `inferred` reads it; a
    Gather fails the call on an index outside its axis). An output_shape below the inferred shape on some
    axis makes that size -1 when read, which the run-time dim checks reject."""
    def convert(ctx: "OnnxContext") -> list[Value]:
        if not ctx.has_input(2) or ctx.input(2).is_const:
            return static(ctx)
        x, shape = ctx.input(0), ctx.input(2)
        rank = x.type.rank
        if shape.type.dtype not in INDEX_DTYPES or shape.type.shape != (rank,):
            raise ctx.error(f"output_shape (input 2) {shape.type} must be {rank} int64 sizes for X {x.type}")
        inferred = _unpooled(ctx, static)
        dims = [int(d) for d in dims_of(inferred)]
        i64 = np.int64
        sizes = _cast(ctx, shape, DType.i64)
        fits = ctx.emit("Not", [ctx.emit("Less", [sizes, ctx.const(np.array(dims, i64), "inferred_shape")])])
        sizes = ctx.emit("Where", [fits, sizes, ctx.const(np.array(-1, i64), "too_small")])
        out_dims = runtime_symbols(ctx, sizes, "MaxUnpool output_shape")
        y = ctx.emit("Pad", [inferred], {"mode": "constant", "pads": [0] * rank + [1] * rank,
                                         "value": 0 if x.type.dtype.numpy.kind in "iub" else 0.0})
        for axis, (d, n) in enumerate(zip(dims, out_dims)):
            index = ctx.emit("Min", [iota(ctx, n, DType.i64), ctx.const(np.array(d, i64), f"inferred_{axis}")])
            y = ctx.emit("Gather", [y, index], {"axis": axis})
        return [ctx.emit("Reshape", [y], {"shape": list(dims_of(y))}, out=0)]
    return convert


def _unpooled(ctx: "OnnxContext", static: Callable[["OnnxContext"], list[Value]]) -> Value:
    """The static MaxUnpool (inferred output shape) of this node, under a fresh name."""
    assert ctx.node is not None
    node = ctx.node
    unpooled = onnx.helper.make_node("MaxUnpool", list(node.input[:2]), [ctx.names.fresh(f"{node.output[0]}_inferred")],
                                     name=node.name, domain=node.domain)
    unpooled.attribute.extend(node.attribute)
    ctx.node = unpooled
    try:
        return static(ctx)[0]
    finally:
        ctx.node = node


CONVERTERS: dict[str, Converter] = {
    "MaxPool": lambda ctx: _pool(ctx, "MaxPool"),
    "AveragePool": lambda ctx: _pool(ctx, "AveragePool"),
    "LpPool": lp_pool,
    "GlobalAveragePool": global_average_pool,
    "GlobalMaxPool": global_max_pool,
    "GlobalLpPool": global_lp_pool,
    "MaxUnpool": runtime_max_unpool(_constant_max_unpool),
}
