"""The "gather", "gather_elements" and "gather_nd" kernels: bindings data, indices, output.

Each walks its output as rows of `chunk` contiguous elements; a row reads one run-time index (or
one index tuple), wraps negative values and copies the matching contiguous run of data. A row whose
index lies outside its axis is filled with zeros: the kernel never reads outside `data`.

  gather           axis: out[a, i, c] = data[a, idx[i], c]          (a: dims before axis, c: after)
  gather_elements  axis: out[p] = data[p with p[axis] = idx[p]]     (one element per row)
  gather_nd        batch_dims: out[b, m, c] = data[b, idx[b, m, :], c]
Workgroups split the rows.
"""
from __future__ import annotations

import math
from typing import Callable

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import ALIGN, begin_kernel, const_i64, element_ptr, for_range, lanes_f32, min_index
from iree_py.codegen.llvm.copy_common import element_type, emit_contiguous_copy
from iree_py.codegen.llvm.index_common import check_indexing, elements_offset, load_index, tuple_offset, wrap_index
from iree_py.ir import indexing_ops

ROW_GROUP_ELEMENTS = 16384
DATA_INDICES = ("data", "indices")

# (builder, row, indices pointer) -> (source element offset of the row, whether it is in range)
RowSource = Callable[[ir.IRBuilder, ir.Value, ir.Value], tuple[ir.Value, ir.Value]]


def _build_rows(spec: KernelSpec, module: ir.Module, target, rows: int, chunk: int, source: RowSource) -> KernelInfo:
    data_t, out_t = spec.inputs[0], spec.outputs[0]
    elem = element_type(data_t.dtype.itemsize, f"{spec.kind} kernel {spec.name}")
    rows_per_group = max(1, ROW_GROUP_ELEMENTS // max(chunk, 1))
    groups = max(1, -(-rows // rows_per_group))
    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    data, indices, out = kb.binding(0), kb.binding(1), kb.binding(2)
    row_start = b.mul(kb.workgroup_id_index(0), const_i64(rows_per_group))
    row_stop = min_index(b, b.add(row_start, const_i64(rows_per_group)), const_i64(rows))
    if chunk:
        with for_range(b, row_start, row_stop, name="row") as row:
            src_off, in_range = source(b, row, indices)
            dst_off = b.mul(row, const_i64(chunk))
            with b.if_else(in_range) as (copy, zero):
                with copy:
                    emit_contiguous_copy(b, out, dst_off, data, src_off, chunk, elem, lanes_f32(target))
                with zero:
                    with for_range(b, 0, chunk, name="z") as j:
                        b.store(ir.Constant(elem, 0), element_ptr(b, out, b.add(dst_off, j), elem),
                                align=min(ALIGN, elem.width // 8))
    kb.finish()
    return KernelInfo(spec.name, (groups, 1, 1), (), tuple(t.num_bytes for t in (*spec.inputs, out_t)))


def build_gather(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    data, indices, ity = check_indexing(spec, indexing_ops.gather_rule, DATA_INDICES)
    axis = int(spec.attrs["axis"])
    dim, count = data[axis], math.prod(indices)
    inner = math.prod(data[axis + 1:])

    def source(b: ir.IRBuilder, row: ir.Value, idx_ptr: ir.Value) -> tuple[ir.Value, ir.Value]:
        outer, position = b.udiv(row, const_i64(count)), b.urem(row, const_i64(count))
        index, in_range = wrap_index(b, load_index(b, idx_ptr, position, ity), dim)
        return b.mul(b.add(b.mul(outer, const_i64(dim)), index), const_i64(inner)), in_range

    rows = math.prod(data[:axis]) * count
    return _build_rows(spec, module, target, rows, inner, source)


def build_gather_elements(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    data, indices, ity = check_indexing(spec, indexing_ops.gather_elements_rule, DATA_INDICES)
    axis = int(spec.attrs["axis"])

    def source(b: ir.IRBuilder, row: ir.Value, idx_ptr: ir.Value) -> tuple[ir.Value, ir.Value]:
        return elements_offset(b, row, idx_ptr, ity, data, indices, axis)

    return _build_rows(spec, module, target, math.prod(indices), 1, source)


def build_gather_nd(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    data, indices, ity = check_indexing(spec, indexing_ops.gather_nd_rule, DATA_INDICES)
    batch_dims = int(spec.attrs["batch_dims"])
    k = indices[-1]
    tuples_per_batch = math.prod(indices[batch_dims:-1])
    batch_size = math.prod(data[batch_dims:])
    chunk = math.prod(data[batch_dims + k:])

    def source(b: ir.IRBuilder, row: ir.Value, idx_ptr: ir.Value) -> tuple[ir.Value, ir.Value]:
        batch_offset = b.mul(b.udiv(row, const_i64(tuples_per_batch)), const_i64(batch_size))
        offset, in_range = tuple_offset(b, row, idx_ptr, ity, data[batch_dims:], k)
        return b.add(batch_offset, offset), in_range

    rows = math.prod(indices[:-1])
    return _build_rows(spec, module, target, rows, chunk, source)
