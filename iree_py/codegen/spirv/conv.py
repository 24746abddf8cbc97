"""Direct 2-D convolution (f32, groups, strides, pads, dilations, optional bias, an epilogue): one
invocation per output element, summing its window."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder, Value
from iree_py.codegen.spirv.epilogue import apply_epilogue
from iree_py.codegen.spirv.indexing import Dim, dims, product, unravel


def has_bias(spec: KernelSpec) -> bool:
    return len(spec.inputs) >= 3 and 2 not in {op.operand for op in spec.epilogue}


@contextmanager
def window_taps(b: KernelBuilder, spec: KernelSpec, x_shape: list[Dim], w_shape: list[Dim], n: Value, oc: Value,
                oh: Value, ow: Value) -> Iterator[tuple[Value, Value]]:
    """The body runs once for every tap of output (n, oc, oh, ow)'s window that lies inside X, with
    the X and W element indices (groups, strides, pads, dilations of conv2d's attrs); a padded
    position is skipped."""
    _, c, h, w = x_shape
    m, cg, kh, kw = w_shape
    sh, sw = spec.attrs["strides"]
    pt, pl = spec.attrs["pads"][0], spec.attrs["pads"][1]
    dh, dw = spec.attrs["dilations"]
    group = int(spec.attrs.get("group", 1))
    m_per_group = product([m]) if group == 1 else m // group
    first_channel = (oc / b.dim(m_per_group)) * b.dim(cg)
    with b.loop(0, b.dim(cg)) as ci:
        x_plane = (n * b.dim(c) + first_channel + ci) * b.dim(h)
        w_base = (oc * b.dim(cg) + ci) * b.dim(kh)
        with b.loop(0, b.dim(kh)) as ky:
            iy = oh * sh - pt + ky * dh
            with b.if_(b.logical_and(iy >= 0, iy < b.dim(h))):
                x_row = (x_plane + iy) * b.dim(w)
                w_row = (w_base + ky) * b.dim(kw)
                with b.loop(0, b.dim(kw)) as kx:
                    ix = ow * sw - pl + kx * dw
                    with b.if_(b.logical_and(ix >= 0, ix < b.dim(w))):
                        yield x_row + ix, w_row + kx


def build_conv2d(b: KernelBuilder, spec: KernelSpec) -> Dim:
    out_shape = dims(spec.outputs[0])
    total = product(out_shape)
    out_binding = len(spec.inputs)
    with b.for_each(total) as index:
        n, oc, oh, ow = unravel(b, index, out_shape)
        acc = b.variable("f32", b.load(2, oc) if has_bias(spec) else b.float(0.0))
        with window_taps(b, spec, dims(spec.inputs[0]), dims(spec.inputs[1]), n, oc, oh, ow) as (x_at, w_at):
            acc.set(acc.get() + b.load(0, x_at) * b.load(1, w_at))
        b.store(out_binding, index, apply_epilogue(b, spec, acc.get(), index, oc))
    return total
