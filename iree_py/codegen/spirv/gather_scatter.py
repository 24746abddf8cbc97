"""Gather, GatherElements, GatherND, ScatterElements and ScatterND on SPIR-V: element moves of any 4- or
8-byte dtype (bits copied through int arrays; an 8-byte element is two words, the trailing axis of
2 that kernels.words_spec gives every tensor but the indices), and scatter's reductions computed in
f32 or i32.

The indices binding is read as 32-bit words: an i64 index as its low word (indexing.read_index),
so no Int64 capability is needed. A negative index wraps once; one still out of range is clamped
into its axis, as this backend has no dispatch status to fail with yet (the CPU backend fails the
dispatch, status 3; docs/vulkan.md).

  gather            out[a, i, c] = data[a, idx[i], c]                    one invocation per output
  gather_elements   out[p] = data[p with p[axis] = idx[p]]               one invocation per output
  gather_nd         out[b, m, c] = data[b, idx[b, m, :], c]              one invocation per output
  scatter_elements  out = data, then out[p with p[axis] = idx[p]] op= updates[p] in index order:
                    one invocation does it all, so later updates see earlier ones
  scatter_nd        out = data, then out[idx[m, :], c] op= updates[m, c] in index order, as above
"""
from __future__ import annotations

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder, Value
from iree_py.codegen.spirv.indexing import Dim, dims, linear, product, read_index, strides, unravel
from iree_py.ir.types import DType, TensorType


def index_words(indices: TensorType) -> int:
    """32-bit words per index: 2 for i64 indices (read as their low word), else 1."""
    return 2 if indices.dtype in (DType.i64, DType.u64) else 1


def build_gather(b: KernelBuilder, spec: KernelSpec) -> Dim:
    data, indices = dims(spec.inputs[0]), dims(spec.inputs[1])
    axis = int(spec.attrs["axis"])
    words = index_words(spec.inputs[1])
    outer, count, inner = product(data[:axis]), product(indices), product(data[axis + 1:])
    out_shape = [outer, count, inner]
    total = product(out_shape)
    size = b.dim(data[axis])
    with b.for_each(total) as index:
        o, position, i = unravel(b, index, out_shape)
        k = read_index(b, 1, position, words, size)
        b.store(2, index, b.load(0, linear(b, [o, k, i], [outer, data[axis], inner])))
    return total


def _element_source(b: KernelBuilder, spec: KernelSpec, index: Value, shape: list[Dim]) -> Value:
    """GatherElements' and ScatterElements' walk: element `index` of a tensor of `shape` (the
    indices' shape, and the words axis of an 8-byte element) names data[p with p[axis] = idx[p]]:
    that element's index in data."""
    data, rank = dims(spec.inputs[0]), spec.inputs[1].rank
    axis = int(spec.attrs["axis"])
    coords = unravel(b, index, shape)
    position = index / 2 if len(shape) > rank else index  # the words axis (kernels.words_spec)
    coords[axis] = read_index(b, 1, position, index_words(spec.inputs[1]), b.dim(data[axis]))
    return linear(b, coords, data)


def build_gather_elements(b: KernelBuilder, spec: KernelSpec) -> Dim:
    out_shape = dims(spec.outputs[0])
    total = product(out_shape)
    with b.for_each(total) as index:
        b.store(2, index, b.load(0, _element_source(b, spec, index, out_shape)))
    return total


def _tuple_offset(b: KernelBuilder, spec: KernelSpec, row: Value, shape: list[Dim]) -> Value:
    """Index tuple `row` (k indices at row * k) names the first k coordinates of a tensor of
    `shape`: that element's offset in it."""
    k = int(spec.inputs[1].shape[-1])
    offset = b.int(0)
    for j, stride in enumerate(strides(shape)[:k]):
        at = read_index(b, 1, row * k + j, index_words(spec.inputs[1]), b.dim(shape[j]))
        offset = offset + at * b.dim(stride)
    return offset


def build_gather_nd(b: KernelBuilder, spec: KernelSpec) -> Dim:
    data, indices = dims(spec.inputs[0]), dims(spec.inputs[1])
    batch_dims, k = int(spec.attrs["batch_dims"]), int(indices[-1])
    tuples, per_batch = product(indices[:-1]), product(indices[batch_dims:-1])
    batch_size, chunk = product(data[batch_dims:]), product(data[batch_dims + k:])
    total = product([tuples, chunk])
    with b.for_each(total) as index:
        row, c = index / b.dim(chunk), index % b.dim(chunk)
        offset = (row / b.dim(per_batch)) * b.dim(batch_size) + c
        b.store(2, index, b.load(0, offset + _tuple_offset(b, spec, row, data[batch_dims:])))
    return total


def _combine(b: KernelBuilder, reduction: str, old: Value, new: Value) -> Value:
    """The CPU backend's scatter reductions (codegen/llvm/scatter.py): max and min keep the old
    value only where it compares greater / less (ordered), so a NaN update is taken."""
    if reduction == "add":
        return old + new
    if reduction == "mul":
        return old * new
    if reduction == "max":
        return b.select(old > new, old, new)
    if reduction == "min":
        return b.select(old < new, old, new)
    return new


def _copy_data(b: KernelBuilder, spec: KernelSpec) -> None:
    """A scatter's start: out = data, by the one invocation that then applies the updates."""
    with b.loop(0, b.dim(product(dims(spec.inputs[0])))) as i:
        b.store(3, i, b.load(0, i))


def build_scatter_elements(b: KernelBuilder, spec: KernelSpec) -> Dim:
    reduction = str(spec.attrs["reduction"])
    updates = dims(spec.inputs[2])
    with b.for_each(1):
        _copy_data(b, spec)
        with b.loop(0, b.dim(product(updates))) as u:
            at = _element_source(b, spec, u, updates)
            b.store(3, at, _combine(b, reduction, b.load(3, at), b.load(2, u)))
    return 1


def build_scatter_nd(b: KernelBuilder, spec: KernelSpec) -> Dim:
    reduction = str(spec.attrs["reduction"])
    data, indices = dims(spec.inputs[0]), dims(spec.inputs[1])
    chunk = b.dim(product(data[int(indices[-1]):]))
    with b.for_each(1):
        _copy_data(b, spec)
        with b.loop(0, b.dim(product(indices[:-1]))) as row:
            offset = _tuple_offset(b, spec, row, data)
            with b.loop(0, chunk) as c:
                at = offset + c
                b.store(3, at, _combine(b, reduction, b.load(3, at), b.load(2, row * chunk + c)))
    return 1
