"""Kernels that move elements without arithmetic (any 1-, 2- or 4-byte dtype, bits copied; 8-byte
ones as two words, kernels.words_spec): transpose, slice, concat and bitcast. One invocation per
output element."""
from __future__ import annotations

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder
from iree_py.codegen.spirv.indexing import Dim, dims, linear, product, strides, unravel
from iree_py.ir.symbols import dim


def build_transpose(b: KernelBuilder, spec: KernelSpec) -> Dim:
    in_strides = strides(dims(spec.inputs[0]))
    out_shape = dims(spec.outputs[0])
    total = product(out_shape)
    with b.for_each(total) as index:
        coords = unravel(b, index, out_shape)
        at = b.int(0)
        for axis, p in enumerate(spec.attrs["perm"]):
            at = at + coords[axis] * b.dim(in_strides[p])
        b.store(1, index, b.load(0, at))
    return total


def build_slice(b: KernelBuilder, spec: KernelSpec) -> Dim:
    in_shape, out_shape = dims(spec.inputs[0]), dims(spec.outputs[0])
    total = product(out_shape)
    with b.for_each(total) as index:
        coords = unravel(b, index, out_shape)
        source = [b.dim(dim(start)) + c * b.dim(dim(step))
                  for c, start, step in zip(coords, spec.attrs["starts"], spec.attrs["steps"])]
        b.store(1, index, b.load(0, linear(b, source, in_shape)))
    return total


def build_concat(b: KernelBuilder, spec: KernelSpec) -> Dim:
    axis = int(spec.attrs["axis"])
    out_shape = dims(spec.outputs[0])
    total = product(out_shape)
    out_binding = len(spec.inputs)
    with b.for_each(total) as index:
        coords = unravel(b, index, out_shape)
        start: Dim = 0
        for i, t in enumerate(spec.inputs):
            shape = dims(t)
            end = dim(start + shape[axis])
            c = coords[axis]
            with b.if_(b.logical_and(c >= b.dim(start), c < b.dim(end))):
                local = [*coords[:axis], c - b.dim(start), *coords[axis + 1:]]
                b.store(out_binding, index, b.load(i, linear(b, local, shape)))
            start = end
    return total


def build_bitcast(b: KernelBuilder, spec: KernelSpec) -> Dim:
    """ONNX BitCast: the input's elements, bits unchanged, as the output's dtype of the same size."""
    total = product(dims(spec.outputs[0]))
    with b.for_each(total) as index:
        b.store(1, index, b.load(0, index))
    return total
