"""ONNX Col2Im (18) with image_shape and block_shape given at run time (static input [N, C*B, L]),
as a gather and a sum rather than a scatter:

  Per spatial axis k (image size i_k, block size b_k, blocks n_k = (i_k + pads - d_k (b_k - 1) - 1)
  / s_k + 1), output position y and block offset j come from t = y + pad_begin - j * d_k: the pair
  contributes when t >= 0, t % s_k == 0 and t / s_k < n_k, from block t / s_k. The input element of
  (c, y_1.., j_1..) is flat index (c * B + b) * L + l (b, l row-major over the j's and block
  indices); one Gather reads [N, C, i_1.., b_1..], Where zeroes the pairs that do not contribute
  and a sum over the block axes gives [N, C, i_1..].

The image, block and block-count sizes are symbols read at run time; C = C*B / B. Reshaping the
input to [N, C * B, L] with those symbols makes the run time check that the sizes agree with the
input (a failed check names this node), so inconsistent sizes fail instead of reading wrong data.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx_compose import reduce_axes, shape_of
from iree_py.ir.graph import Value

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext


def _ints(ctx: "OnnxContext", name: str, default: list[int], length: int, least: int) -> list[int]:
    values = [int(v) for v in ctx.attr(name, default)]
    if len(values) != length or any(v < least for v in values):
        raise ctx.bad_attr(name, values, f"expected {length} integers >= {least}")
    return values


def col2im(ctx: "OnnxContext") -> list[Value]:
    from iree_py.frontends.onnx_imageops import _i64, _iota, _pick, _shape_tensor
    from iree_py.frontends.onnx_symbolic import runtime_symbols
    x = ctx.input(0)
    if not x.type.is_static or x.type.rank != 3:
        raise ctx.error(f"input '{x.name}' is {x.type}; a static [N, C * prod(block_shape), L] tensor is required")
    n, cb, length = (int(d) for d in shape_of(x))
    image, image_syms = _shape_tensor(ctx, 1, "image_shape", None)
    r = len(image_syms)
    block, block_syms = _shape_tensor(ctx, 2, "block_shape", r)
    if r < 1:
        raise ctx.error("image_shape is empty; at least one spatial axis is required")
    strides = _ints(ctx, "strides", [1] * r, r, 1)
    dilations = _ints(ctx, "dilations", [1] * r, r, 1)
    pads = _ints(ctx, "pads", [0] * (2 * r), 2 * r, 0)
    zero, one = _i64(ctx, [0], "zero"), _i64(ctx, [1], "one")

    # block counts per axis, read as symbols
    counts = []
    for k in range(r):
        extent = ctx.emit("Add", [ctx.emit("Mul", [ctx.emit("Sub", [_pick(ctx, block, k), one]),
                                                    _i64(ctx, [dilations[k]], "dilation")]), one])
        span = ctx.emit("Sub", [ctx.emit("Add", [_pick(ctx, image, k), _i64(ctx, [pads[k] + pads[k + r]], "pads")]),
                                extent])
        quotient = ctx.emit("Div", [ctx.emit("Max", [span, zero]), _i64(ctx, [strides[k]], "stride")])
        counts.append(ctx.emit("Where", [ctx.emit("Less", [span, zero]), zero, ctx.emit("Add", [quotient, one])]))
    count_t = ctx.emit("Concat", counts, {"axis": 0}, hint=f"{ctx.node_name}_block_counts")
    count_syms = runtime_symbols(ctx, count_t, "Col2Im block count")
    block_total = _pick(ctx, block, 0)
    for k in range(1, r):
        block_total = ctx.emit("Mul", [block_total, _pick(ctx, block, k)])
    channels_t = ctx.emit("Div", [_i64(ctx, [cb], "cb"), ctx.emit("Max", [block_total, one])],
                          hint=f"{ctx.node_name}_channels")
    c_sym = runtime_symbols(ctx, channels_t, "Col2Im channels")[0]
    b_sym, l_sym = block_syms[0], count_syms[0]
    for k in range(1, r):
        b_sym, l_sym = b_sym * block_syms[k], l_sym * count_syms[k]
    # the element-count check of this reshape rejects sizes that do not fit the input
    checked = ctx.emit("Reshape", [x], {"shape": [n, c_sym * b_sym, l_sym]})
    flat = ctx.emit("Reshape", [checked], {"shape": [n, c_sym * b_sym * l_sym]})

    # per axis: tensors over [i_1.., b_1..] (rank 2r) giving validity and the block / offset index
    rank = 2 * r
    l_index: Value | None = None
    b_index: Value | None = None
    valid: Value | None = None
    l_stride, b_stride = one, one
    for k in reversed(range(r)):
        y_shape: list = [1] * rank
        y_shape[k] = image_syms[k]
        j_shape: list = [1] * rank
        j_shape[r + k] = block_syms[k]
        y = ctx.emit("Reshape", [_iota(ctx, image_syms[k])], {"shape": y_shape})
        j = ctx.emit("Reshape", [_iota(ctx, block_syms[k])], {"shape": j_shape})
        t = ctx.emit("Sub", [ctx.emit("Add", [y, _i64(ctx, pads[k], "pad")]),
                             ctx.emit("Mul", [j, _i64(ctx, dilations[k], "dilation")])])
        t_pos = ctx.emit("Max", [t, _i64(ctx, 0, "zero")])
        stride = _i64(ctx, strides[k], "stride")
        blk = ctx.emit("Div", [t_pos, stride])
        ok = ctx.emit("And", [ctx.emit("GreaterOrEqual", [t, _i64(ctx, 0, "zero")]),
                              ctx.emit("Equal", [ctx.emit("Mul", [blk, stride]), t_pos])])
        ok = ctx.emit("And", [ok, ctx.emit("Less", [blk, ctx.emit("Reshape", [counts[k]], {"shape": []})])])
        valid = ok if valid is None else ctx.emit("And", [valid, ok])
        lk = ctx.emit("Mul", [blk, l_stride])
        bk = ctx.emit("Mul", [j, b_stride])
        l_index = lk if l_index is None else ctx.emit("Add", [l_index, lk])
        b_index = bk if b_index is None else ctx.emit("Add", [b_index, bk])
        l_stride = ctx.emit("Mul", [l_stride, counts[k]])
        b_stride = ctx.emit("Mul", [b_stride, _pick(ctx, block, k)])
    assert l_index is not None and b_index is not None and valid is not None
    # clamp the block index of pairs that do not contribute, so the gather stays in bounds
    l_index = ctx.emit("Where", [valid, l_index, _i64(ctx, 0, "zero")])
    l_total = ctx.emit("Reshape", [l_stride], {"shape": []})
    c = ctx.emit("Reshape", [_iota(ctx, c_sym)], {"shape": [c_sym] + [1] * rank})
    b_total = ctx.emit("Reshape", [b_stride], {"shape": []})
    index = ctx.emit("Add", [ctx.emit("Mul", [ctx.emit("Add", [ctx.emit("Mul", [c, b_total]), b_index]), l_total]),
                             l_index])
    gathered = ctx.emit("Gather", [flat, index], {"axis": 1})  # [N, C, i_1.., b_1..]
    fill = ctx.const(np.zeros((), x.type.dtype.numpy), "zero_value")
    picked = ctx.emit("Where", [valid, gathered, fill])
    return [reduce_axes(ctx, picked, "sum", list(range(2 + r, 2 + rank)), 0, out=0)]
