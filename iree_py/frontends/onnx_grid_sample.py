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
"""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Callable

from iree_py.frontends.onnx_compose import reshape, scalar, shape_of, transpose
from iree_py.ir.graph import Value
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

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


GRID_SAMPLE_CONVERTERS: dict[str, Callable[["OnnxContext"], list[Value]]] = {
    "GridSample": grid_sample,
}
