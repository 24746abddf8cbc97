"""ONNX Conv (1-D as 2-D, 2-D), ConvTranspose, DeformConv and CausalConvWithState, and the window
attributes (auto_pad, pads, strides, dilations) that pooling shares.

ConvTranspose (opsets 1, 11, 22) becomes one ConvTranspose op on 1..3 spatial axes; auto_pad,
output_padding and output_shape are folded into its pads as onnxruntime computes them: with
output_shape the total padding (in - 1) * stride + output_padding + (kernel - 1) * dilation + 1 -
output_shape (at least 0) is split with the odd pixel at the start (SAME_UPPER: at the end); with
SAME_UPPER / SAME_LOWER the same total towards in * stride (at least 0: never an extension) is
split with the odd pixel at the end / the start. N, C and the spatial dims of X may be symbolic
(docs/dynamic_shapes.md): the SAME_* padding does not depend on the input size, so only
output_shape on a symbolic axis is refused.

DeformConv: (19, 22), 2-D, static shapes, float32, as a composition (the ONNX reference's
definition: a bilinear GridSample with align_corners=1 and zero padding per kernel tap, then a
convolution):

1. Sampling point of output (oh, ow), kernel tap (i, j), offset group g:
   y = oh * stride_h - pad_top + i * dilation_h + offset[n, g, i, j, 0, oh, ow], x likewise (index 1).
2. Bilinear taps floor(y) + 0..1, floor(x) + 0..1 with weights (1 - t, t); a tap outside the image
   weighs 0 (its index is clamped so the gather stays in bounds); weights times mask (if given).
3. One GatherND per tap combination on X laid out [N, G, H*W, C/G] gives columns
   [N, G, K*P, C/G] (K = kH*kW, P = oH*oW); they are summed, reordered to [N, group, C/group*K, P]
   and multiplied by W reshaped to [group, oC/group, C/group*K]; bias added last.
Computed in float32, so results can differ from the float64 reference in the last bits.

CausalConvWithState (27): the depthwise 1-D convolution over past_state ++ input (a grouped Conv),
optionally followed by SiLU; present_state is the last k - 1 positions.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx.compose import (Converter, optional_input, out_index, require_float, reshape, shape_of,
                                            slice_axis, transpose)
from iree_py.frontends.onnx.dims import dims_of
from iree_py.frontends.onnx.layout import _reshape
from iree_py.frontends.onnx.symbolic import floordiv, sign_of, smax
from iree_py.ir.graph import Value
from iree_py.ir.ops.conv import conv_transpose_full_size
from iree_py.ir.symbols import Expr, call, dim, dim_text
from iree_py.ir.types import Dim, DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


def _explicit_pads(ctx: "OnnxContext", spatial: tuple[int, ...], kernel: list[int], strides: list[int],
                   dilations: list[int]) -> list[int]:
    """ONNX pads [begin..., end...] from auto_pad / pads."""
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    n = len(spatial)
    if auto_pad == "NOTSET":
        pads = [int(p) for p in ctx.attr("pads", [0] * (2 * n))]
        if len(pads) != 2 * n:
            raise ctx.bad_attr("pads", pads, f"expected {2 * n} values")
        if min(pads, default=0) < 0:
            raise ctx.bad_attr("pads", pads, "negative pads")
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
    spatial = dims_of(x)[2:]
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
    kernel = [int(k) for k in ctx.attr("kernel_shape", dims_of(w)[2:])]
    attrs = _window_attrs(ctx, x, kernel, allow_dilations=True)
    attrs["group"] = int(ctx.attr("group", 1))
    inputs = [x, w] + ([ctx.input(2)] if ctx.has_input(2) else [])
    return [ctx.emit("Conv", inputs, attrs, out=0)]


def _conv_1d(ctx: "OnnxContext", x: Value, w: Value) -> Value:
    if w.type.rank != 3:
        raise ctx.error(f"a 1-D Conv of {x.type} needs a weight of rank 3, got {w.type}")
    n, c, length = dims_of(x)
    m, cg, k = dims_of(w)
    strides = [1] + [int(s) for s in ctx.attr("strides", [1])]
    dilations = [1] + [int(d) for d in ctx.attr("dilations", [1])]
    begin, end = _explicit_pads(ctx, (length,), [k], strides[1:], dilations[1:])
    x4 = _reshape(ctx, x, (n, c, 1, length))
    w4 = _reshape(ctx, w, (m, cg, 1, k))
    inputs = [x4, w4] + ([ctx.input(2)] if ctx.has_input(2) else [])
    attrs = {"strides": strides, "pads": [0, begin, 0, end], "dilations": dilations,
             "group": int(ctx.attr("group", 1))}
    y4 = ctx.emit("Conv", inputs, attrs)
    n, m, _, out_len = dims_of(y4)
    return _reshape(ctx, y4, (n, m, out_len), out=0)


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


def _deform_ints(ctx: "OnnxContext", name: str, default: list[int], length: int) -> list[int]:
    values = [int(v) for v in ctx.attr(name, default)]
    if len(values) != length:
        raise ctx.bad_attr(name, values, f"expected {length} values for 2-D DeformConv")
    return values


def _static_input(ctx: "OnnxContext", i: int, what: str, rank: int) -> Value:
    v = ctx.input(i)
    if v.type.dtype != DType.f32:
        raise ctx.error(f"{what} (input {i}, '{v.name}') is {v.type}; only float32 is supported")
    if not v.type.is_static or v.type.rank != rank:
        raise ctx.error(f"{what} (input {i}, '{v.name}') is {v.type}; a static rank-{rank} tensor is required")
    return v


def deform_conv(ctx: "OnnxContext") -> list[Value]:
    x = _static_input(ctx, 0, "X", 4)
    w = _static_input(ctx, 1, "W", 4)
    offset = _static_input(ctx, 2, "offset", 4)
    n, c, h, wd = (int(d) for d in shape_of(x))
    oc, cpg, kh, kw = (int(d) for d in shape_of(w))
    _, off_c, oh, ow = (int(d) for d in shape_of(offset))
    kernel = _deform_ints(ctx, "kernel_shape", [kh, kw], 2)
    if kernel != [kh, kw]:
        raise ctx.bad_attr("kernel_shape", kernel, f"W is {w.type}; the kernel shape must match its last two dims")
    sh, sw = _deform_ints(ctx, "strides", [1, 1], 2)
    dh, dw = _deform_ints(ctx, "dilations", [1, 1], 2)
    pt, pl, pb, pr = _deform_ints(ctx, "pads", [0, 0, 0, 0], 4)
    group, og = int(ctx.attr("group", 1)), int(ctx.attr("offset_group", 1))
    k, p = kh * kw, oh * ow
    if group < 1 or og < 1 or c != cpg * group or oc % group or c % og:
        raise ctx.error(f"X {x.type}, W {w.type}, group {group}, offset_group {og} are inconsistent")
    if off_c != og * 2 * k or shape_of(offset)[0] != n:
        raise ctx.error(f"offset {offset.type} must be [{n}, {og * 2 * k}, oH, oW]")
    if oh != (h + pt + pb - (kh - 1) * dh - 1) // sh + 1 or ow != (wd + pl + pr - (kw - 1) * dw - 1) // sw + 1:
        raise ctx.error(f"offset {offset.type}: its spatial dims do not match the output size of this convolution")
    mask = None
    if ctx.has_input(4):
        mask = _static_input(ctx, 4, "mask", 4)
        if tuple(shape_of(mask)) != (n, og * k, oh, ow):
            raise ctx.error(f"mask {mask.type} must be [{n}, {og * k}, {oh}, {ow}]")
        mask = reshape(ctx, mask, (n, og, k * p))

    # 1. sampling points [N, G, K*P]
    offs = reshape(ctx, offset, (n, og, k, 2, p))

    def component(axis: int) -> Value:
        part = ctx.emit("Slice", [offs], {"starts": [0, 0, 0, axis, 0], "ends": [n, og, k, axis + 1, p],
                                          "steps": [1] * 5})
        return reshape(ctx, part, (n, og, k * p))

    ki, kj = np.meshgrid(np.arange(kh), np.arange(kw), indexing="ij")
    oi, oj = np.meshgrid(np.arange(oh), np.arange(ow), indexing="ij")
    base_y = (ki.reshape(k, 1) * dh + oi.reshape(1, p) * sh - pt).astype(np.float32).reshape(1, 1, k * p)
    base_x = (kj.reshape(k, 1) * dw + oj.reshape(1, p) * sw - pl).astype(np.float32).reshape(1, 1, k * p)
    y = ctx.emit("Add", [component(0), ctx.const(base_y, "base_y")])
    xx = ctx.emit("Add", [component(1), ctx.const(base_x, "base_x")])

    # 2. bilinear taps per axis: (index i64 clamped, weight zeroed outside)
    def taps(coord: Value, size: int) -> list[tuple[Value, Value]]:
        lo = ctx.emit("Floor", [coord])
        t = ctx.emit("Sub", [coord, lo])
        one = ctx.const(np.array(1.0, np.float32), "one")
        result = []
        for delta, weight in ((0.0, ctx.emit("Sub", [one, t])), (1.0, t)):
            tap = lo if delta == 0.0 else ctx.emit("Add", [lo, one])
            inside = ctx.emit("And", [ctx.emit("GreaterOrEqual", [tap, ctx.const(np.array(0.0, np.float32), "zero")]),
                                      ctx.emit("LessOrEqual", [tap, ctx.const(np.array(size - 1.0, np.float32), "last")])])
            weight = ctx.emit("Where", [inside, weight, ctx.const(np.array(0.0, np.float32), "zero")])
            index = ctx.emit("Cast", [ctx.emit("Clip", [tap], {"min": 0.0, "max": float(size - 1)})], {"to": "i64"})
            result.append((index, weight))
        return result

    # 3. gather, weigh, sum: columns [N, G, K*P, C/G]
    cg = c // og
    data = transpose(ctx, reshape(ctx, x, (n, og, cg, h * wd)), [0, 1, 3, 2])
    width = ctx.const(np.array(wd, np.int64), "width")
    total: Value | None = None
    for yi, yw in taps(y, h):
        for xi, xw in taps(xx, wd):
            flat = ctx.emit("Add", [ctx.emit("Mul", [yi, width]), xi])
            values = ctx.emit("GatherND", [data, reshape(ctx, flat, (n, og, k * p, 1))], {"batch_dims": 2})
            weight = ctx.emit("Mul", [yw, xw])
            if mask is not None:
                weight = ctx.emit("Mul", [weight, mask])
            values = ctx.emit("Mul", [values, reshape(ctx, weight, (n, og, k * p, 1))])
            total = values if total is None else ctx.emit("Add", [total, values])
    assert total is not None

    # 4. convolution as a MatMul per group
    cols = transpose(ctx, reshape(ctx, total, (n, og, k, p, cg)), [0, 1, 4, 2, 3])  # [N, G, C/G, K, P]
    cols = reshape(ctx, cols, (n, group, cpg * k, p))
    weights = reshape(ctx, w, (group, oc // group, cpg * k))
    y_out = reshape(ctx, ctx.emit("MatMul", [weights, cols]), (n, oc, oh, ow),
                    out=None if ctx.has_input(3) else 0)
    if ctx.has_input(3):
        bias = _static_input(ctx, 3, "B", 1)
        if tuple(shape_of(bias)) != (oc,):
            raise ctx.error(f"B {bias.type} must be [{oc}]")
        y_out = ctx.emit("Add", [y_out, reshape(ctx, bias, (1, oc, 1, 1))], out=0)
    return [y_out]


CAUSAL_ACTIVATIONS = ("none", "silu", "swish")


def causal_conv_with_state(ctx: "OnnxContext") -> list[Value]:
    """float16 computes in float32 (Casts around the Conv), as the ONNX reference does."""
    x, w = ctx.input(0), ctx.input(1)
    require_float(ctx, x, "input")
    if x.type.rank != 3 or w.type.rank != 3:
        raise ctx.error(f"input {x.type} must be [B, C, L] and weight {w.type} [C, 1, k]")
    batch, channels, length = shape_of(x)
    k = shape_of(w)[2]
    if shape_of(w)[:2] != (channels, 1) or k < 1:
        raise ctx.error(f"weight {w.type} must be [{channels}, 1, k] (depthwise)")
    activation = ctx.attr("activation", "none")
    if activation not in CAUSAL_ACTIVATIONS:
        raise ctx.bad_attr("activation", activation, f"expected one of {', '.join(CAUSAL_ACTIVATIONS)}")
    past = optional_input(ctx, 3)
    if past is None:
        past = ctx.const(np.zeros((batch, channels, k - 1), x.type.dtype.numpy), "past_state")
    elif shape_of(past) != (batch, channels, k - 1):
        raise ctx.error(f"past_state {past.type} must be [{batch}, {channels}, {k - 1}]")
    padded = ctx.emit("Concat", [past, x], {"axis": 2}) if k > 1 else x
    half = x.type.dtype == DType.f16
    inputs = [reshape(ctx, padded, (batch, channels, 1, length + k - 1)), reshape(ctx, w, (channels, 1, 1, k))]
    bias = optional_input(ctx, 2)
    if bias is not None:
        inputs.append(bias)
    if half:
        inputs = [ctx.emit("Cast", [v], {"to": "f32"}) for v in inputs]
    attrs = {"strides": [1, 1], "pads": [0, 0, 0, 0], "dilations": [1, 1], "group": channels}
    y = reshape(ctx, ctx.emit("Conv", inputs, attrs), (batch, channels, length))
    if activation != "none":
        y = ctx.emit("Mul", [y, ctx.emit("Sigmoid", [y])])
    y = ctx.emit("Cast", [y], {"to": "f16"}, out=0) if half else reshape(ctx, y, shape_of(y), out=0)
    if out_index(ctx, 1) is None:
        return [y]
    present = slice_axis(ctx, padded, 2, length, length + k - 1, out=1) if k > 1 else \
        ctx.const(np.zeros((batch, channels, 0), x.type.dtype.numpy), out=1)
    return [y, present]


CONVERTERS: dict[str, Converter] = {
    "Conv": conv,
    "ConvTranspose": conv_transpose,
    "DeformConv": deform_conv,
    "CausalConvWithState": causal_conv_with_state,
}
