"""Direct 2-D convolution (f32, groups, strides, pads, dilations, optional bias, an epilogue): one
invocation per output element, summing its window."""
from __future__ import annotations

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder
from iree_py.codegen.spirv.epilogue import apply_epilogue
from iree_py.codegen.spirv.indexing import Dim, dims, product, unravel


def has_bias(spec: KernelSpec) -> bool:
    return len(spec.inputs) >= 3 and 2 not in {op.operand for op in spec.epilogue}


def build_conv2d(b: KernelBuilder, spec: KernelSpec) -> Dim:
    _, c, h, w = dims(spec.inputs[0])
    m, cg, kh, kw = dims(spec.inputs[1])
    out_shape = dims(spec.outputs[0])
    sh, sw = spec.attrs["strides"]
    pt, pl = spec.attrs["pads"][0], spec.attrs["pads"][1]
    dh, dw = spec.attrs["dilations"]
    group = int(spec.attrs.get("group", 1))
    m_per_group = product([m]) if group == 1 else m // group
    total = product(out_shape)
    out_binding = len(spec.inputs)
    with b.for_each(total) as index:
        n, oc, oh, ow = unravel(b, index, out_shape)
        first_channel = (oc / b.dim(m_per_group)) * b.dim(cg)
        acc = b.variable("f32", b.load(2, oc) if has_bias(spec) else b.float(0.0))
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
                            acc.set(acc.get() + b.load(0, x_row + ix) * b.load(1, w_row + kx))
        b.store(out_binding, index, apply_epilogue(b, spec, acc.get(), index, oc))
    return total
