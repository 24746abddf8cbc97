"""ONNX DeformConv (19, 22), 2-D, static shapes, float32, as a composition (the ONNX reference's
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
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx_compose import reshape, shape_of, transpose
from iree_py.ir.graph import Value
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext


def _ints(ctx: "OnnxContext", name: str, default: list[int], length: int) -> list[int]:
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
    kernel = _ints(ctx, "kernel_shape", [kh, kw], 2)
    if kernel != [kh, kw]:
        raise ctx.bad_attr("kernel_shape", kernel, f"W is {w.type}; the kernel shape must match its last two dims")
    sh, sw = _ints(ctx, "strides", [1, 1], 2)
    dh, dw = _ints(ctx, "dilations", [1, 1], 2)
    pt, pl, pb, pr = _ints(ctx, "pads", [0, 0, 0, 0], 4)
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
