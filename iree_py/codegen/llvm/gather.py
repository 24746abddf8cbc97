"""The "gather", "gather_elements" and "gather_nd" kernels: bindings data, indices, output.

Each walks its output as rows of `chunk` contiguous elements; a row reads one run-time index (or
one index tuple), wraps negative values and copies the matching contiguous run of data. An index
still outside its axis fails the dispatch with STATUS_INDEX_OUT_OF_RANGE (codegen/kernel_abi.py)
before anything is read from `data`, as onnxruntime fails the call.

  gather           axis: out[a, i, c] = data[a, idx[i], c]          (a: dims before axis, c: after)
  gather_elements  axis: out[p] = data[p with p[axis] = idx[p]]     (one element per row)
  gather_nd        batch_dims: out[b, m, c] = data[b, idx[b, m, :], c]
Workgroups split the rows.

Dims are ints or Exprs (one builder for both, docs/dynamic_shapes.md §3): an int folds to a
constant, an Expr is computed from the push constants (`DynamicKernel.dim`), so a static spec
compiles to the code it always had; a run of a static length is copied with vectors. GatherND's
shape rule takes static shapes only (ir/ops/indexing.py), so its dims are ints.
"""
from __future__ import annotations

from typing import Callable

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.kernel_abi import STATUS_INDEX_OUT_OF_RANGE
from iree_py.codegen.llvm.common import const_i64, for_range, lanes_f32, return_unless
from iree_py.codegen.llvm.copy_common import element_type, emit_contiguous_copy, fail_unless, group_rows, row_grid
from iree_py.codegen.llvm.dims import DynamicKernel, begin_dynamic_kernel, product
from iree_py.codegen.llvm.index_common import (check_indexing, element_strides, elements_offset, load_index,
                                               tuple_offset, wrap_index)
from iree_py.targets import Target
from iree_py.ir.ops import indexing as indexing_ops
from iree_py.ir.types import Dim

DATA_INDICES = ("data", "indices")

# (builder, row, indices pointer) -> (source element offset of the row, whether it is in range)
RowSource = Callable[[ir.IRBuilder, ir.Value, ir.Value], tuple[ir.Value, ir.Value]]


def _build_rows(dk: DynamicKernel, target: Target, rows: Dim, chunk: Dim, source: RowSource) -> KernelInfo:
    """The row loop. `source` runs inside it, so every dim it uses must already be an i64 value
    computed in the entry block (an Expr's value must dominate all its uses)."""
    spec = dk.spec
    elem = element_type(spec.inputs[0].dtype.itemsize, f"{spec.kind} kernel {spec.name}")
    grid = row_grid(rows, chunk)
    b = dk.builder
    data, indices, out = dk.binding(0), dk.binding(1), dk.binding(2)
    chunk_v = dk.dim(chunk)
    row_start, row_stop = group_rows(dk, grid)
    if not (isinstance(chunk, int) and chunk == 0):
        with for_range(b, row_start, row_stop, name="row") as row:
            src_off, in_range = source(b, row, indices)
            return_unless(b, in_range, STATUS_INDEX_OUT_OF_RANGE, "index")
            count = chunk if isinstance(chunk, int) else chunk_v
            emit_contiguous_copy(b, out, b.mul(row, chunk_v), data, src_off, count, elem, lanes_f32(target))
    dk.finish()
    return dk.info(workgroup_count=(grid.groups, 1, 1))


def build_gather(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    dk = begin_dynamic_kernel(module, spec, target)
    data, indices, ity = check_indexing(spec, indexing_ops.gather_rule, DATA_INDICES, dk)
    axis = int(spec.attrs["axis"])
    count_d, inner_d = product(indices), product(data[axis + 1:])
    count, size, inner = dk.dim(count_d), dk.dim(data[axis]), dk.dim(inner_d)

    def source(b: ir.IRBuilder, row: ir.Value, idx_ptr: ir.Value) -> tuple[ir.Value, ir.Value]:
        outer, position = b.udiv(row, count), b.urem(row, count)
        index, in_range = wrap_index(b, load_index(b, idx_ptr, position, ity), size)
        return b.mul(b.add(b.mul(outer, size), index), inner), in_range

    return _build_rows(dk, target, product((*data[:axis], count_d)), inner_d, source)


def build_gather_elements(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    dk = begin_dynamic_kernel(module, spec, target)
    data, indices, ity = check_indexing(spec, indexing_ops.gather_elements_rule, DATA_INDICES, dk)
    axis = int(spec.attrs["axis"])
    b = dk.builder
    # The rule checked indices against data off the axis where it could; a symbolic pair is checked
    # before the dispatch (a DimCheck) and again here, so the walk stays inside data.
    fits = [b.icmp_unsigned("<=", dk.dim(i), dk.dim(d)) for k, (i, d) in enumerate(zip(indices, data))
            if k != axis and not (isinstance(i, int) and isinstance(d, int))]
    if fits:
        ok = fits[0]
        for f in fits[1:]:
            ok = b.and_(ok, f)
        fail_unless(dk, ok, "indices_fit")
    size, index_dims, strides = dk.dim(data[axis]), [dk.dim(d) for d in indices], element_strides(dk, data)

    def source(b: ir.IRBuilder, row: ir.Value, idx_ptr: ir.Value) -> tuple[ir.Value, ir.Value]:
        return elements_offset(b, row, idx_ptr, ity, size, index_dims, strides, axis)

    return _build_rows(dk, target, product(indices), 1, source)


def build_gather_nd(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    dk = begin_dynamic_kernel(module, spec, target)
    data, indices, ity = check_indexing(spec, indexing_ops.gather_nd_rule, DATA_INDICES, dk)
    batch_dims = int(spec.attrs["batch_dims"])
    k = int(indices[-1])
    tuples_per_batch = int(product(indices[batch_dims:-1]))
    batch_size = int(product(data[batch_dims:]))
    dims = tuple(int(d) for d in data[batch_dims:])

    def source(b: ir.IRBuilder, row: ir.Value, idx_ptr: ir.Value) -> tuple[ir.Value, ir.Value]:
        batch_offset = b.mul(b.udiv(row, const_i64(tuples_per_batch)), const_i64(batch_size))
        offset, in_range = tuple_offset(b, row, idx_ptr, ity, dims, k)
        return b.add(batch_offset, offset), in_range

    return _build_rows(dk, target, product(indices[:-1]), product(data[batch_dims + k:]), source)
