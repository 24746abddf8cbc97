"""ONNX GridSample (16: bilinear/bicubic/nearest on 4-D input; 20+: linear/cubic/nearest on 2-D and
3-D spatial input) as a composition: coordinate math as elementwise ops on the grid, one GatherND
per tap combination, weighted sum. It follows the ONNX reference (op_grid_sample.py) step by step:

1. x = unnormalized grid coordinate per spatial axis (grid's last axis lists them x, y[, z]):
   align_corners: (g + 1) / 2 * (dim - 1); else ((g + 1) * dim - 1) / 2. nearest: round half even.
2. A coordinate outside [lo, hi] (align_corners: [0, dim - 1]; else [-0.5, dim - 0.5]) is clamped
   to [0, dim - 1] (border) or reflected into [lo, hi] (reflection); not for cubic, where only the
   taps are (step 4), as onnxruntime and PyTorch do (the ONNX reference also moves the coordinate;
   the conformance cases do not tell the two apart).
3. Taps: nearest the coordinate itself (truncated), linear floor(x) + 0..1 (weights 1 - t, t),
   cubic floor(x) - 1 .. + 2 (Keys' coefficients, A = -0.75), t = x - floor(x).
4. A tap index outside the axis reads 0 (zeros: it becomes dim, and the input has a zero appended
   after the end of each spatial axis, as a GatherND fails the call on an index outside its axis),
   is clamped (border) or reflected, then truncated (reflection).
Computed in float32, so results can differ from the float64 reference in the last bits.

  CenterCropPad (18)  target shape given at run time (static data): per listed axis the target dim is
                      a symbol t; output index o reads input o + off with off = trunc((in - t) / 2)
                      (floor when cropping, ceil when padding, as the ONNX reference slices), and
                      reads 0 where that lies outside the input.
  AffineGrid (20)     size given at run time: the base grid coordinates per spatial axis
                      (align_corners: -1 + 2 i / (n - 1); else -1 + (2 i + 1) / n) are computed from
                      iota(n), and output channel k is sum_j theta[:, k, j] * base_j + theta[:, k, -1]
                      by broadcasting, concatenated on a new last axis. N and C of `size` are not
                      used: N is theta's, as in the ONNX reference.
  Col2Im (18)         image_shape / block_shape given at run time: below.

Every symbol is read from an i64 tensor clamped to be >= 0 first.

Col2Im: (18) with image_shape and block_shape given at run time (static input [N, C*B, L]),
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

import itertools
from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx.compose import Converter, reduce_axes, reshape, scalar, shape_of, transpose
from iree_py.frontends.onnx.dims import dims_of
from iree_py.frontends.onnx.symbolic import runtime_symbols
from iree_py.ir.graph import Value
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


MODES = {"bilinear": "linear", "bicubic": "cubic", "linear": "linear", "cubic": "cubic", "nearest": "nearest"}


PADDING_MODES = ("zeros", "border", "reflection")


CUBIC_A = -0.75


TAP_OFFSETS = {"nearest": (0,), "linear": (0, 1), "cubic": (-1, 0, 1, 2)}


class _Emitter:
    """Short forms for the elementwise math on f32 tensors of the grid's shape [N, *out]."""

    def __init__(self, ctx: "OnnxContext", like: Value) -> None:
        self.ctx, self.like = ctx, like

    def c(self, value: float) -> Value:
        return scalar(self.ctx, value, "k", like=self.like)

    def op(self, name: str, *inputs: Value) -> Value:
        return self.ctx.emit(name, list(inputs))

    def add(self, a: Value, b: Value | float) -> Value:
        return self.op("Add", a, b if isinstance(b, Value) else self.c(b))

    def sub(self, a: Value | float, b: Value | float) -> Value:
        return self.op("Sub", a if isinstance(a, Value) else self.c(a), b if isinstance(b, Value) else self.c(b))

    def mul(self, a: Value, b: Value | float) -> Value:
        return self.op("Mul", a, b if isinstance(b, Value) else self.c(b))

    def div(self, a: Value, b: float) -> Value:
        return self.op("Div", a, self.c(b))

    def where(self, cond: Value, a: Value | float, b: Value | float) -> Value:
        return self.op("Where", cond, a if isinstance(a, Value) else self.c(a), b if isinstance(b, Value) else self.c(b))

    def outside(self, x: Value, lo: float, hi: float) -> Value:
        return self.op("Or", self.op("Less", x, self.c(lo)), self.op("Greater", x, self.c(hi)))

    def clip(self, x: Value, lo: float, hi: float) -> Value:
        return self.ctx.emit("Clip", [x], {"min": float(lo), "max": float(hi)})

    def reflect(self, x: Value, lo: float, hi: float) -> Value:
        """x reflected by the nearer border until it lies in [lo, hi] (unchanged inside)."""
        low, high = self.op("Less", x, self.c(lo)), self.op("Greater", x, self.c(hi))
        span = hi - lo
        dx = self.where(low, self.sub(lo, x), self.sub(x, hi))
        n = self.op("Floor", self.div(dx, span))
        r = self.sub(dx, self.mul(n, span))
        odd = self.op("Equal", self.op("FloorMod", n, self.c(2.0)), self.c(1.0))
        near_lo = self.op("Xor", low, odd)
        reflected = self.where(near_lo, self.add(r, lo), self.sub(hi, r))
        return self.where(self.op("Or", low, high), reflected, x)


def _cubic_weights(e: _Emitter, t: Value) -> list[Value]:
    """Keys' cubic convolution weights of taps -1, 0, 1, 2 at fraction t in [0, 1)."""
    a = CUBIC_A

    def far(d: Value) -> Value:   # (a*d - 5a)*d + 8a)*d - 4a, for 1 <= d < 2
        return e.sub(e.mul(e.add(e.mul(e.sub(e.mul(d, a), 5 * a), d), 8 * a), d), 4 * a)

    def near(d: Value) -> Value:  # ((a+2)*d - (a+3))*d*d + 1, for 0 <= d < 1
        return e.add(e.mul(e.mul(e.sub(e.mul(d, a + 2), a + 3), d), d), 1.0)

    one_minus = e.sub(1.0, t)
    return [far(e.add(t, 1.0)), near(t), near(one_minus), far(e.sub(2.0, t))]


def _axis_taps(e: _Emitter, g: Value, dim: int, mode: str, padding: str, align: bool
               ) -> list[tuple[Value, Value | None]]:
    """(index as i64, weight or None) per tap along one spatial axis, from grid coordinate g."""
    lo, hi = (0.0, dim - 1.0) if align else (-0.5, dim - 0.5)
    x = e.mul(e.div(e.add(g, 1.0), 2.0), float(dim - 1)) if align else e.div(e.sub(e.mul(e.add(g, 1.0), float(dim)), 1.0), 2.0)
    if mode == "nearest":
        x = e.op("Round", x)
    if padding == "border" and mode != "cubic":
        x = e.where(e.outside(x, lo, hi), e.clip(x, 0.0, dim - 1.0), x)
    elif padding == "reflection" and mode != "cubic":
        x = e.reflect(x, lo, hi)
    if mode == "nearest":
        base, weights = x, [None]
    else:
        base = e.op("Floor", x)
        t = e.sub(x, base)
        weights = [e.sub(1.0, t), t] if mode == "linear" else _cubic_weights(e, t)
    taps = []
    for offset, weight in zip(TAP_OFFSETS[mode], weights):
        tap = base if offset == 0 else e.add(base, float(offset))
        if padding == "zeros":
            tap = e.where(e.outside(tap, 0.0, dim - 1.0), float(dim), tap)  # past the end: the appended 0
        elif padding == "border":
            tap = e.clip(tap, 0.0, dim - 1.0)
        else:
            tap = e.reflect(tap, lo, hi)
        taps.append((e.ctx.emit("Cast", [tap], {"to": "i64"}), weight))
    return taps


def _attrs(ctx: "OnnxContext") -> tuple[str, str, bool]:
    mode_name = ctx.attr("mode", "bilinear" if ctx.opset < 20 else "linear")
    allowed = ("bilinear", "bicubic", "nearest") if ctx.opset < 20 else ("linear", "cubic", "nearest")
    if mode_name not in allowed:
        raise ctx.bad_attr("mode", mode_name, f"expected one of {', '.join(allowed)} at opset {ctx.opset}")
    padding = ctx.attr("padding_mode", "zeros")
    if padding not in PADDING_MODES:
        raise ctx.bad_attr("padding_mode", padding, f"expected one of {', '.join(PADDING_MODES)}")
    return MODES[mode_name], padding, bool(ctx.attr("align_corners", 0))


def grid_sample(ctx: "OnnxContext") -> list[Value]:
    x, grid = ctx.input(0), ctx.input(1)
    mode, padding, align = _attrs(ctx)
    xs, gs = shape_of(x), shape_of(grid)
    spatial = len(xs) - 2
    if x.type.dtype != DType.f32 or grid.type.dtype != DType.f32:
        raise ctx.error(f"X {x.type} and grid {grid.type} must be float32")
    if spatial not in (2, 3) or (ctx.opset < 20 and spatial != 2):
        raise ctx.error(f"X {x.type}: {spatial}-D sampling is not supported at opset {ctx.opset}")
    if len(gs) != len(xs) or gs[0] != xs[0] or gs[-1] != spatial:
        raise ctx.error(f"grid {grid.type} must be [{xs[0]}, *out, {spatial}] for X {x.type}")
    n, dims, out = xs[0], xs[2:], gs[1:-1]
    e = _Emitter(ctx, grid)
    per_axis = []
    for axis, dim in enumerate(dims):  # grid lists the coordinates innermost axis first
        component = spatial - 1 - axis
        starts, ends = [0] * len(gs), list(gs)
        starts[-1], ends[-1] = component, component + 1
        g = ctx.emit("Slice", [grid], {"starts": starts, "ends": ends, "steps": [1] * len(gs)})
        per_axis.append(_axis_taps(e, reshape(ctx, g, (n, *out)), dim, mode, padding, align))
    channels_last = transpose(ctx, x, [0, *range(2, 2 + spatial), 1])
    if padding == "zeros":  # a zero after the end of each spatial axis, for the taps outside (step 4)
        after = [0, *[1] * spatial, 0]
        channels_last = ctx.emit("Pad", [channels_last], {"mode": "constant", "pads": [0] * len(xs) + after,
                                                          "value": 0.0})
    total = None
    for combo in itertools.product(*per_axis):
        indices = ctx.emit("Concat", [reshape(ctx, idx, (n, *out, 1)) for idx, _ in combo], {"axis": spatial + 1})
        values = ctx.emit("GatherND", [channels_last, indices], {"batch_dims": 1})
        weight = None
        for _, w in combo:
            if w is not None:
                weight = w if weight is None else ctx.emit("Mul", [weight, w])
        if weight is not None:
            values = ctx.emit("Mul", [values, reshape(ctx, weight, (n, *out, 1))])
        total = values if total is None else ctx.emit("Add", [total, values])
    assert total is not None
    return [ctx.emit("Transpose", [total], {"perm": [0, spatial + 1, *range(1, spatial + 1)]}, out=0)]


# --- CenterCropPad, AffineGrid ---------------------------------------------------------------------

INDEX_DTYPES = (DType.i32, DType.i64)


FLOAT_DTYPES = (DType.f32, DType.f64, DType.f16)


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


# --- Col2Im ----------------------------------------------------------------------------------------

def _ints(ctx: "OnnxContext", name: str, default: list[int], length: int, least: int) -> list[int]:
    values = [int(v) for v in ctx.attr(name, default)]
    if len(values) != length or any(v < least for v in values):
        raise ctx.bad_attr(name, values, f"expected {length} integers >= {least}")
    return values


def col2im(ctx: "OnnxContext") -> list[Value]:
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


CONVERTERS: dict[str, Converter] = {
    "GridSample": grid_sample,
    "AffineGrid": affine_grid,
    "CenterCropPad": center_crop_pad,
    "Col2Im": col2im,
}
