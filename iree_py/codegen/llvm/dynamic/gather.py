"""The "gather" kernel for symbolic dims (codegen/llvm/gather.py is the static kernel): bindings
data, indices (i32/i64), output; out[a, i, c] = data[a, idx[i], c] along attrs axis.

The output is walked as rows of `inner` contiguous elements (inner: the data dims after axis);
a row reads one index, wraps a negative one by the run-time axis size and copies the matching
run of data. A row whose index is still outside the axis is filled with zeros: the kernel never
reads outside `data`. Workgroups split the rows."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import const_i64, for_range
from iree_py.codegen.llvm.copy_common import element_type
from iree_py.codegen.llvm.dynamic.common import begin_dynamic_kernel
from iree_py.codegen.llvm.dynamic.copy_common import (copy_run, fill_run, group_rows, product, require_same_dims,
                                                       row_grid)
from iree_py.codegen.llvm.index_common import index_type, load_index
from iree_py.codegen.target import Target


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"gather kernel {spec.name}"
    if len(spec.inputs) != 2 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects inputs data, indices and 1 output")
    data_t, idx_t, out_t = spec.inputs[0], spec.inputs[1], spec.outputs[0]
    ity = index_type(idx_t, what)
    axis = int(spec.attrs["axis"])
    if not 0 <= axis < data_t.rank:
        raise ValueError(f"{what}: axis {axis} out of range for data {data_t}")
    want = (*data_t.shape[:axis], *idx_t.shape, *data_t.shape[axis + 1:])
    if out_t.dtype != data_t.dtype or out_t.rank != len(want):
        raise ValueError(f"{what}: output {out_t} should have data's dtype and rank {len(want)} ({data_t}, {idx_t})")
    elem = element_type(data_t.dtype.itemsize, what)
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    require_same_dims(dk, [(w, o, f"output dim {k}") for k, (w, o) in enumerate(zip(want, out_t.shape))], what)
    count_d = product(idx_t.shape)
    inner_d = product(data_t.shape[axis + 1:])
    grid = row_grid(product((*data_t.shape[:axis], count_d)), inner_d)
    count, inner, axis_dim = dk.dim(count_d), dk.dim(inner_d), dk.dim(data_t.shape[axis])
    data, indices, out = dk.binding(0), dk.binding(1), dk.binding(2)
    zero = const_i64(0)
    start, stop = group_rows(dk, grid)
    with for_range(b, start, stop, name="row") as row:
        outer, position = b.udiv(row, count), b.urem(row, count)
        raw = load_index(b, indices, position, ity)
        index = b.select(b.icmp_signed("<", raw, zero), b.add(raw, axis_dim), raw)
        in_range = b.icmp_unsigned("<", index, axis_dim)
        dst_off = b.mul(row, inner)
        with b.if_else(in_range) as (copy, outside):
            with copy:
                src_off = b.mul(b.add(b.mul(outer, axis_dim), index), inner)
                copy_run(b, out, dst_off, data, src_off, inner, elem)
            with outside:
                fill_run(b, out, dst_off, inner, ir.Constant(elem, 0))
    dk.finish()
    return dk.info(workgroup_count=(grid.groups, 1, 1))
