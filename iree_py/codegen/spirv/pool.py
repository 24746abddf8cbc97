"""2-D max, average and Lp pooling (f32; kernel, strides, pads, dilations; the output shape already
holds ceil_mode) and global average pooling over every spatial axis: one invocation per output.
Lp pooling sums |x|^p (integer p >= 1, by repeated multiplication; padding adds 0) and takes the
p-th root, as the CPU kernel (codegen/llvm/pool.py)."""
from __future__ import annotations

import math

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder, Value
from iree_py.codegen.spirv.indexing import Dim, dims, product, unravel


def _lp_power(b: KernelBuilder, x: Value, p: int) -> Value:
    magnitude = b.ext("FAbs", x)
    result = magnitude
    for _ in range(p - 1):
        result = result * magnitude
    return result


def _lp_root(b: KernelBuilder, total: Value, p: int) -> Value:
    if p == 1:
        return total
    if p == 2:
        return b.ext("Sqrt", total)
    return b.ext("Pow", total, b.float(1.0 / p))  # total >= 0: defined, and 0 at 0


def _build_window(b: KernelBuilder, spec: KernelSpec, mode: str) -> Dim:
    """mode: "max", "average" or "lp"."""
    average = mode == "average"
    p = int(spec.attrs.get("p", 2))
    _, c, h, w = dims(spec.inputs[0])
    out_shape = dims(spec.outputs[0])
    kh, kw = spec.attrs["kernel"]
    sh, sw = spec.attrs["strides"]
    pt, pl, pb, pr = spec.attrs["pads"]
    dh, dw = spec.attrs.get("dilations") or (1, 1)
    include_pad = average and int(spec.attrs.get("count_include_pad", 0)) == 1
    total = product(out_shape)
    with b.for_each(total) as index:
        n, ch, oh, ow = unravel(b, index, out_shape)
        plane = (n * b.dim(c) + ch) * b.dim(h)
        acc = b.variable("f32", -math.inf if mode == "max" else 0.0)
        count = b.variable("i32", 0)
        with b.loop(0, kh) as ky:
            iy = oh * sh - pt + ky * dh
            row_inside = b.logical_and(iy >= 0, iy < b.dim(h))
            row_padded = b.logical_and(iy >= -pt, iy < b.dim(h) + pb)
            with b.loop(0, kw) as kx:
                ix = ow * sw - pl + kx * dw
                inside = b.logical_and(row_inside, b.logical_and(ix >= 0, ix < b.dim(w)))
                with b.if_(inside):
                    x = b.load(0, (plane + iy) * b.dim(w) + ix)
                    acc.set(b.max(acc.get(), x) if mode == "max" else
                            acc.get() + (_lp_power(b, x, p) if mode == "lp" else x))
                counted = b.logical_and(row_padded, b.logical_and(ix >= -pl, ix < b.dim(w) + pr)) \
                    if include_pad else inside
                with b.if_(counted):
                    count.set(count.get() + 1)
        result = acc.get()
        if average:
            result = result / b.to_f32(b.max(count.get(), 1))
        elif mode == "lp":
            result = _lp_root(b, result, p)
        b.store(1, index, result)
    return total


def build_maxpool(b: KernelBuilder, spec: KernelSpec) -> Dim:
    return _build_window(b, spec, "max")


def build_avgpool(b: KernelBuilder, spec: KernelSpec) -> Dim:
    return _build_window(b, spec, "average")


def build_lppool(b: KernelBuilder, spec: KernelSpec) -> Dim:
    return _build_window(b, spec, "lp")


def build_globalavgpool(b: KernelBuilder, spec: KernelSpec) -> Dim:
    shape = dims(spec.inputs[0])
    planes, size = product(shape[:2]), product(shape[2:])
    with b.for_each(planes) as plane:
        acc = b.variable("f32", 0.0)
        base = plane * b.dim(size)
        with b.loop(0, b.dim(size)) as i:
            acc.set(acc.get() + b.load(0, base + i))
        b.store(1, plane, acc.get() / b.to_f32(b.dim(size)))
    return planes


def build_lrn(b: KernelBuilder, spec: KernelSpec) -> Dim:
    """ONNX LRN: y = x / (bias + alpha / size * sum of x^2 over channels
    [c - floor((size-1)/2), c + ceil((size-1)/2)] within [0, C))^beta, X[N, C, ...]."""
    shape = dims(spec.inputs[0])
    size = int(spec.attrs["size"])
    alpha, beta, bias = (float(spec.attrs[k]) for k in ("alpha", "beta", "bias"))
    n, c_dim, inner = shape[0], shape[1], product(shape[2:])
    total = product(shape)
    with b.for_each(total) as index:
        batch, c, i = unravel(b, index, [n, c_dim, inner])
        channels = b.dim(c_dim)
        lo = b.max(c - (size - 1) // 2, 0)
        hi = b.min(c + (size - 1 - (size - 1) // 2) + 1, channels)
        acc = b.variable("f32", 0.0)
        with b.loop(lo, hi) as k:
            v = b.load(0, (batch * channels + k) * b.dim(inner) + i)
            acc.set(acc.get() + v * v)
        scale = acc.get() * (alpha / size) + bias
        b.store(1, index, b.load(0, index) / b.ext("Pow", scale, b.float(beta)))
    return total
