"""ConvTranspose (f32) over NC + 1..3 spatial axes: X[N, C, *in], W[C, M/group, *kernel], optional
B[M] -> Y[N, M, *out]; attrs strides, dilations, pads [begins..., ends...], group (the CPU
kernel's, codegen/llvm/conv_transpose.py). One invocation per output element, gathering what the
scatter form adds there: output position o on an axis takes input position i and tap k where
i * stride - pad_begin + k * dilation = o, so for each tap i = (o + pad_begin - k * dilation) /
stride when that divides exactly and lands in [0, in)."""
from __future__ import annotations

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder, Value, Variable
from iree_py.codegen.spirv.conv import has_bias
from iree_py.codegen.spirv.epilogue import apply_epilogue
from iree_py.codegen.spirv.indexing import Dim, dims, product, unravel


def _taps(b: KernelBuilder, spec: KernelSpec, acc: Variable, out: list[Value], x_at: Value, w_at: Value,
          axis: int) -> None:
    """Adds the taps of spatial axes axis.. to acc: x_at / w_at are the row-major offsets so far."""
    in_shape, kernel = dims(spec.inputs[0])[2:], dims(spec.inputs[1])[2:]
    if axis == len(kernel):
        acc.set(acc.get() + b.load(0, x_at) * b.load(1, w_at))
        return
    stride, dilation = int(spec.attrs["strides"][axis]), int(spec.attrs["dilations"][axis])
    begin = int(spec.attrs["pads"][axis])
    with b.loop(0, b.dim(kernel[axis])) as k:
        t = out[axis] + begin - k * dilation
        i = t / stride
        lands = b.logical_and(t >= 0, b.logical_and((t % stride).eq(0), i < b.dim(in_shape[axis])))
        with b.if_(lands):
            _taps(b, spec, acc, out, x_at * b.dim(in_shape[axis]) + i, w_at * b.dim(kernel[axis]) + k, axis + 1)


def build_conv_transpose(b: KernelBuilder, spec: KernelSpec) -> Dim:
    c = dims(spec.inputs[0])[1]
    m_per_group = dims(spec.inputs[1])[1]
    group = int(spec.attrs.get("group", 1))
    c_per_group = product([c]) if group == 1 else c // group
    out_shape = dims(spec.outputs[0])
    total = product(out_shape)
    with b.for_each(total) as index:
        n, oc, *out = unravel(b, index, out_shape)
        g, oc_local = oc / b.dim(m_per_group), oc % b.dim(m_per_group)
        acc = b.variable("f32", b.load(2, oc) if has_bias(spec) else b.float(0.0))
        with b.loop(0, b.dim(c_per_group)) as ci:
            channel = g * b.dim(c_per_group) + ci
            _taps(b, spec, acc, out, n * b.dim(c) + channel, channel * b.dim(m_per_group) + oc_local, 0)
        b.store(len(spec.inputs), index, apply_epilogue(b, spec, acc.get(), index, oc))
    return total
