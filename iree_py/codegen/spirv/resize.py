"""ONNX Resize with the coordinates and weights computed per output index (kind resize_rt; op
ResizeRuntime, iree_py/ir/ops/resize.py) on SPIR-V, the arithmetic of the CPU backend's kernel
(codegen/llvm/resize.py, after iree_py/ir/resize_math.py): float32 where onnxruntime computes in
float32, double (the Float64 capability) where the Python reference does. Bindings: X (rank R),
scales (f32[K]), roi (f32[2K]), Y; attrs as the op. One invocation per output element: each resized
axis gives its taps (source index, weight) for the element's index on it, and the element is the
blend of all tap combinations (f32), a moved element (nearest, any 4-byte dtype) or
extrapolation_value where some axis maps outside the input (tf_crop_and_resize). Every float
coordinate is clamped (NaN -> 0) before it becomes an integer and every source index is clamped
into its axis; nothing is written when a resized input axis is empty. antialias is not built yet
(plan.py refuses it).
"""
from __future__ import annotations

import itertools

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder, Value
from iree_py.codegen.spirv.indexing import Dim, dims, product, strides, unravel
from iree_py.codegen.spirv.pad import fill_words
from iree_py.ir.types import DType

TAPS = {"nearest": 1, "linear": 2, "cubic": 4}
SAFE = float(1 << 22)  # coordinates are clamped to +-SAFE before conversion (f32 is integral beyond 2**23)


class _Axis:
    """One resized axis: its position k in attrs axes, its dims as values."""

    def __init__(self, k: int, in_dim: Value, out_dim: Value) -> None:
        self.k, self.in_dim, self.out_dim = k, in_dim, out_dim


class _Taps:
    """The per-axis coordinate math of one output element (codegen/llvm/resize.py's _Builder)."""

    def __init__(self, b: KernelBuilder, spec: KernelSpec) -> None:
        a = spec.attrs
        self.b = b
        self.mode, self.coordinate_mode, self.nearest_mode = a["mode"], a["coordinate_mode"], a["nearest_mode"]
        self.cubic_a = float(a["cubic_coeff_a"])
        self.exclude_outside = bool(a["exclude_outside"])
        self.from_sizes = bool(a["scales_from_sizes"])
        self.k_count = len(a["axes"])

    # -- conversions ------------------------------------------------------------------------------
    def f32(self, i: Value) -> Value:
        return self.b.to_f32(i)

    def f64(self, x: Value) -> Value:
        return self.b.op("OpFConvert", "f64", x)

    def narrow(self, x: Value) -> Value:
        return self.b.op("OpFConvert", "f32", x)

    def d(self, v: float) -> Value:
        return self.b.const(v, "f64")

    def to_int(self, x: Value) -> Value:
        """A float already clamped to +-SAFE, truncated to i32."""
        return self.b.op("OpConvertFToS", "i32", x)

    def to_float(self, i: Value, ty: str) -> Value:
        return self.b.op("OpConvertSToF", ty, i)

    def safe_int(self, x: Value) -> Value:
        """trunc of an f32 clamped to [-SAFE, SAFE] (NaN -> 0)."""
        b = self.b
        x = b.select(x.eq(x), x, b.float(0.0))
        x = b.select(x < -SAFE, b.float(-SAFE), x)
        return self.to_int(b.select(x > SAFE, b.float(SAFE), x))

    def clamp_index(self, i: Value, last: Value) -> Value:
        b = self.b
        i = b.select(i < 0, b.int(0), i)
        return b.select(i > last, last, i)

    def floor_int(self, x: Value) -> tuple[Value, Value]:
        """(trunc(x), floor(x)) of an f32 as i32."""
        b = self.b
        t = self.safe_int(x)
        return t, b.select(self.f32(t) > x, t - 1, t)

    def round_half_away(self, x: Value) -> Value:
        """C round() of an f32, in double as the reference: floor(|x| + 0.5) with x's sign."""
        b = self.b
        xd = self.f64(x)
        negative = xd < 0.0
        ax = b.select(negative, -xd, xd)
        ax = b.select(ax < SAFE, ax, self.d(SAFE))  # NaN -> SAFE too, clamped later
        r = self.to_int(ax + 0.5)  # >= 0: truncation is floor
        return b.select(negative, -r, r)

    # -- coordinates ------------------------------------------------------------------------------
    def scale(self, ax: _Axis) -> Value:
        b = self.b
        if self.from_sizes:
            return b.select(ax.in_dim.eq(0), b.float(1.0), self.f32(ax.out_dim) / self.f32(ax.in_dim))
        return b.load(1, ax.k)

    def coordinate(self, o: Value, ax: _Axis, scale: Value) -> Value:
        """resize_math.original_coordinate."""
        b, mode = self.b, self.coordinate_mode
        xr, lo, lr = self.f32(o), self.f32(ax.in_dim), self.f32(ax.out_dim)
        if mode == "asymmetric":
            return xr / scale
        if mode == "half_pixel":
            return (xr + 0.5) / scale - 0.5
        if mode == "tf_half_pixel_for_nn":
            return (xr + 0.5) / scale
        many = ax.out_dim > 1
        if mode in ("align_corners", "tf_crop_and_resize") and not self.from_sizes:
            lr = scale * lo  # the spec's length_resized (resize_math docstring)
            many = lr > 1.0
        if mode == "pytorch_half_pixel":
            return b.select(many, (xr + 0.5) / scale - 0.5, b.float(0.0))
        if mode == "align_corners":
            return b.select(many, (xr * (lo - 1.0)) / (lr - 1.0), b.float(0.0))
        if mode == "tf_crop_and_resize":
            start, end = b.load(2, ax.k), b.load(2, self.k_count + ax.k)
            span = lo - 1.0
            general = start * span + ((xr * (end - start)) * span) / (lr - 1.0)
            single = self.narrow((self.d(0.5) * self.f64(start + end)) * self.f64(span))
            return b.select(many, general, single)
        # half_pixel_symmetric (plan.py refuses any other mode)
        adjustment = lr / (scale * lo)
        offset = (lo / 2.0) * (1.0 - adjustment)
        centre = (self.f64(xr) + 0.5) / self.f64(scale) - 0.5
        return self.narrow(self.f64(offset) + centre)

    # -- taps -------------------------------------------------------------------------------------
    def nearest(self, x: Value, scale: Value) -> Value:
        b, mode = self.b, self.nearest_mode
        trunc, floor = self.floor_int(x)
        ceil = b.select(self.f32(trunc) < x, trunc + 1, trunc)
        if mode == "floor":
            return floor
        if mode == "ceil":
            return ceil
        if mode == "simple":
            return b.select(scale < 1.0, ceil, trunc)
        rounded = self.round_half_away(x)
        if mode == "round_prefer_ceil":
            return rounded
        midpoint = self.narrow(self.to_float(trunc, "f64") + 0.5)  # round_prefer_floor
        return b.select(x.eq(midpoint), floor, rounded)

    def cubic_kernel(self, s: Value) -> Value:
        """Keys cubic weight of a double distance (resize_math.cubic_weights)."""
        b, a = self.b, self.d(self.cubic_a)
        s = b.select(s < 0.0, -s, s)
        near = ((((a + 2.0) * s) - (a + 3.0)) * s) * s + 1.0
        far = (((a * s) - (a * 5.0)) * s + (a * 8.0)) * s - (a * 4.0)
        return b.select(s <= 1.0, near, b.select(s < 2.0, far, self.d(0.0)))

    def taps(self, ax: _Axis, o: Value) -> tuple[list[tuple[Value, Value]], Value]:
        """The axis's taps (source index, f32 weight) for output index o, and whether o maps outside
        the input (resize_math.axis_taps)."""
        b = self.b
        last = ax.in_dim - 1
        lastf = self.f32(last)
        scale = self.scale(ax)
        x = self.coordinate(o, ax, scale)
        outside = b.bool(False)
        if self.coordinate_mode == "tf_crop_and_resize":
            outside = b.logical_or(x < 0.0, x > lastf)
        if self.mode == "nearest":
            return [(self.clamp_index(self.nearest(x, scale), last), b.float(1.0))], outside
        if self.mode == "linear":
            xc = b.select(x > 0.0, x, b.float(0.0))
            xc = b.select(xc < lastf, xc, lastf)
            i1 = self.clamp_index(self.safe_int(xc), last)
            i2 = b.select(i1 < last, i1 + 1, last)
            d1, d2 = xc - self.f32(i1), self.f32(i2) - xc
            d1, d2 = b.select(d1 < 0.0, -d1, d1), b.select(d2 < 0.0, -d2, d2)
            same = i1.eq(i2)
            return [(i1, b.select(same, b.float(1.0), d2)), (i2, b.select(same, b.float(0.0), d1))], outside
        _, base = self.floor_int(x)
        ratio = self.f64(x - self.f32(base))
        distances = [ratio + 1.0, ratio, 1.0 - ratio, 2.0 - ratio]
        weights = [self.cubic_kernel(s) for s in distances]
        indices = [base + d for d in (-1, 0, 1, 2)]
        if self.exclude_outside:
            weights = [b.select(b.logical_and(i >= 0, i <= last), w, self.d(0.0)) for i, w in zip(indices, weights)]
            total = self.d(0.0)
            for w in weights:
                total = total + w
            weights = [w / total for w in weights]
        return [(self.clamp_index(i, last), self.narrow(w)) for i, w in zip(indices, weights)], outside


def build_resize_rt(b: KernelBuilder, spec: KernelSpec) -> Dim:
    x_t = spec.inputs[0]
    in_shape, out_shape = dims(x_t), dims(spec.outputs[0])
    axes = [int(a) for a in spec.attrs["axes"]]
    in_strides = strides(in_shape)
    total = product(out_shape)
    taps = _Taps(b, spec)
    resized = {a: _Axis(k, b.dim(in_shape[a]), b.dim(out_shape[a])) for k, a in enumerate(axes)}
    ok = b.bool(True)
    for ax in resized.values():
        ok = b.logical_and(ok, ax.in_dim > 0)
    extrapolation = float(spec.attrs["extrapolation_value"])
    fill = b.float(extrapolation) if x_t.dtype == DType.f32 else b.int(fill_words(extrapolation, x_t.dtype)[0])
    with b.for_each(total) as index:
        with b.if_(ok):
            coords = unravel(b, index, out_shape)
            copied = b.int(0)
            for a in range(len(in_shape)):
                if a not in resized:
                    copied = copied + coords[a] * b.dim(in_strides[a])
            outside = b.bool(False)
            axis_taps: list[list[tuple[Value, Value]]] = []
            for a, ax in resized.items():
                these, out = taps.taps(ax, coords[a])
                outside = b.logical_or(outside, out)
                axis_taps.append([(i * b.dim(in_strides[a]), w) for i, w in these])
            if TAPS[taps.mode] == 1:  # nearest: the element moved, any 4-byte dtype
                offset = copied
                for ((step, _),) in axis_taps:
                    offset = offset + step
                value = b.load(0, offset)
            else:
                value = b.float(0.0)
                for combination in itertools.product(*axis_taps):
                    offset, weight = copied, None
                    for step, w in combination:
                        offset = offset + step
                        weight = w if weight is None else weight * w
                    value = value + weight * b.load(0, offset)
            b.store(3, index, b.select(outside, fill, value))
    return total
