"""ONNX image ops built from normalized ops:

  CenterCropPad (18)  target shape given at run time (static data): per listed axis the target dim is
                      a symbol t; output index o reads input o + off with off = trunc((in - t) / 2)
                      (floor when cropping, ceil when padding, as the ONNX reference slices), and
                      reads 0 where that lies outside the input.
  AffineGrid (20)     size given at run time: the base grid coordinates per spatial axis
                      (align_corners: -1 + 2 i / (n - 1); else -1 + (2 i + 1) / n) are computed from
                      iota(n), and output channel k is sum_j theta[:, k, j] * base_j + theta[:, k, -1]
                      by broadcasting, concatenated on a new last axis. N and C of `size` are not
                      used: N is theta's, as in the ONNX reference.
  DeformConv (19, 22) 2-D, static shapes: see onnx_imageops_deform.py.
  Col2Im (18)         image_shape / block_shape given at run time: see onnx_imageops_col2im.py.

Every symbol is read from an i64 tensor clamped to be >= 0 first.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.frontends.onnx_dims import dims_of
from iree_py.frontends.onnx_imageops_col2im import col2im
from iree_py.frontends.onnx_imageops_deform import deform_conv
from iree_py.ir.graph import Value
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

INDEX_DTYPES = (DType.i32, DType.i64)
FLOAT_DTYPES = (DType.f32, DType.f64, DType.f16)


# --- small helpers ---------------------------------------------------------------------------------

def _i64(ctx: "OnnxContext", array: object, hint: str) -> Value:
    return ctx.const(np.array(array, np.int64), hint)


def _iota(ctx: "OnnxContext", n: object) -> Value:
    """0, 1, ..., n - 1 (i64) for a dim n (int or symbol)."""
    ones = ctx.emit("Expand", [_i64(ctx, 1, "one")], {"shape": [n]})
    return ctx.emit("CumSum", [ones], {"axis": 0, "exclusive": 1, "reverse": 0})


def _pick(ctx: "OnnxContext", v: Value, k: int) -> Value:
    """Element k of a 1-D tensor, as a [1] tensor."""
    return ctx.emit("Slice", [v], {"starts": [k], "ends": [k + 1], "steps": [1]})


def _shape_tensor(ctx: "OnnxContext", i: int, what: str, length: int | None) -> tuple[Value, list]:
    """Input i (a 1-D int tensor of static length) as i64 clamped to >= 0, and one symbol per element."""
    from iree_py.frontends.onnx_symbolic import runtime_symbols
    v = ctx.input(i)
    if v.type.dtype not in INDEX_DTYPES:
        raise ctx.error(f"{what} (input {i}, '{v.name}') is {v.type}; it must be int64 or int32")
    if not v.type.is_static or v.type.rank != 1:
        raise ctx.error(f"{what} (input {i}, '{v.name}') is {v.type}; a 1-D tensor of static length is required")
    if length is not None and v.type.num_elements != length:
        raise ctx.error(f"{what} (input {i}, '{v.name}') has {v.type.num_elements} elements; expected {length}")
    if v.type.dtype != DType.i64:
        v = ctx.emit("Cast", [v], {"to": DType.i64.value})
    clamped = ctx.emit("Max", [v, _i64(ctx, 0, "zero")], hint=f"{ctx.node_name}_{what.replace(' ', '_')}")
    return clamped, runtime_symbols(ctx, clamped, what)


# --- CenterCropPad ---------------------------------------------------------------------------------

def center_crop_pad(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    if not x.type.is_static:
        raise ctx.error(f"CenterCropPad of {x.type} (symbolic dims) is not supported; only a statically shaped input")
    rank = x.type.rank
    dims = [int(d) for d in dims_of(x)]
    axes = [int(a) for a in ctx.attr("axes", list(range(rank)))]
    for a in axes:
        if not -rank <= a < rank:
            raise ctx.bad_attr("axes", axes, f"axis {a} is out of range for rank {rank}")
    axes = [a + rank if a < 0 else a for a in axes]
    if len(set(axes)) != len(axes):
        raise ctx.bad_attr("axes", axes, "axes must be distinct")
    target, symbols = _shape_tensor(ctx, 1, "shape", len(axes))
    zero, two = _i64(ctx, 0, "zero"), _i64(ctx, 2, "two")
    y, mask = x, None
    out_dims: list = list(dims)
    for k, axis in enumerate(axes):
        size = _i64(ctx, [dims[axis]], "dim")
        d = ctx.emit("Sub", [size, _pick(ctx, target, k)])
        half = ctx.emit("Div", [ctx.emit("Abs", [d]), two])  # both >= 0: any integer division agrees
        off = ctx.emit("Where", [ctx.emit("Less", [d, zero]), ctx.emit("Neg", [half]), half])
        index = ctx.emit("Add", [_iota(ctx, symbols[k]), off])
        inside = ctx.emit("And", [ctx.emit("GreaterOrEqual", [index, zero]), ctx.emit("Less", [index, size])])
        clamped = ctx.emit("Min", [ctx.emit("Max", [index, zero]), _i64(ctx, [dims[axis] - 1], "last")])
        y = ctx.emit("Gather", [y, clamped], {"axis": axis})
        out_dims[axis] = symbols[k]
        shape = [1] * rank
        shape[axis] = symbols[k]
        inside = ctx.emit("Reshape", [inside], {"shape": shape})
        mask = inside if mask is None else ctx.emit("And", [mask, inside])
    if mask is None:
        return [ctx.emit("Reshape", [x], {"shape": dims}, out=0)]
    fill = ctx.const(np.zeros((), x.type.dtype.numpy), "zero_value")
    return [ctx.emit("Where", [mask, y, fill], out=0)]


# --- AffineGrid ------------------------------------------------------------------------------------

def affine_grid(ctx: "OnnxContext") -> list[Value]:
    theta = ctx.input(0)
    if theta.type.dtype not in FLOAT_DTYPES or not theta.type.is_static or theta.type.rank != 3:
        raise ctx.error(f"theta '{theta.name}' is {theta.type}; a static [N, 2, 3] or [N, 3, 4] float tensor is required")
    n, spatial, homo = (int(d) for d in dims_of(theta))
    if (spatial, homo) not in ((2, 3), (3, 4)):
        raise ctx.error(f"theta '{theta.name}' is {theta.type}; expected [N, 2, 3] (2-D) or [N, 3, 4] (3-D)")
    align = int(ctx.attr("align_corners", 0))
    size, symbols = _shape_tensor(ctx, 1, "size", spatial + 2)
    dtype = theta.type.dtype
    out_spatial = symbols[2:]
    # base coordinates, ordered x (last axis), y, z as the grid's last axis lists them
    coords: list[Value] = []
    for j in range(spatial):
        axis = spatial - 1 - j  # x runs over the last spatial axis
        count = ctx.emit("Cast", [_pick(ctx, size, 2 + axis)], {"to": dtype.value})
        i = ctx.emit("Cast", [_iota(ctx, out_spatial[axis])], {"to": dtype.value})
        one = ctx.const(np.array(1.0, dtype.numpy), "one")
        two = ctx.const(np.array(2.0, dtype.numpy), "two")
        if align:
            denom = ctx.emit("Max", [ctx.emit("Sub", [count, one]), one])
            c = ctx.emit("Sub", [ctx.emit("Div", [ctx.emit("Mul", [i, two]), denom]), one])
        else:
            c = ctx.emit("Sub", [ctx.emit("Div", [ctx.emit("Add", [ctx.emit("Mul", [i, two]), one]), count]), one])
        shape: list = [1] * (spatial + 1)
        shape[1 + axis] = out_spatial[axis]
        coords.append(ctx.emit("Reshape", [c], {"shape": shape}))
    channels: list[Value] = []
    out_shape = [n, *out_spatial, 1]
    for k in range(spatial):
        def t(jj: int) -> Value:
            part = ctx.emit("Slice", [theta], {"starts": [0, k, jj], "ends": [n, k + 1, jj + 1], "steps": [1, 1, 1]})
            return ctx.emit("Reshape", [part], {"shape": [n] + [1] * spatial})
        acc = t(homo - 1)
        for j in range(spatial):
            acc = ctx.emit("Add", [acc, ctx.emit("Mul", [t(j), coords[j]])])
        channels.append(ctx.emit("Reshape", [acc], {"shape": out_shape}))
    return [ctx.emit("Concat", channels, {"axis": spatial + 1}, out=0)]


IMAGEOPS_CONVERTERS: dict[str, Callable[["OnnxContext"], list[Value]]] = {
    "CenterCropPad": center_crop_pad,
    "AffineGrid": affine_grid,
    "DeformConv": deform_conv,
    "Col2Im": col2im,
}
