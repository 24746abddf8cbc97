"""The "concat" kernel for symbolic dims: inputs joined along attrs axis, whose sizes may be
symbolic (codegen/llvm/concat.py is the static kernel). Seen as [outer, axis * inner], input i
copies a run of its own axis * inner elements into each output row at the running offset.
Workgroups split the outer rows."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import for_range
from iree_py.codegen.llvm.copy_common import element_type
from iree_py.codegen.llvm.dynamic.common import begin_dynamic_kernel
from iree_py.codegen.llvm.dynamic.copy_common import (copy_run, group_rows, product, require_same_dims, row_grid,
                                                       total)
from iree_py.targets import Target


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"concat kernel {spec.name}"
    if not spec.inputs or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects >= 1 input and 1 output")
    out_t = spec.outputs[0]
    axis = int(spec.attrs.get("axis", 0))
    if not 0 <= axis < out_t.rank:
        raise ValueError(f"{what}: axis {axis} out of range for rank {out_t.rank}")
    for i, t in enumerate(spec.inputs):
        if t.dtype != out_t.dtype or t.rank != out_t.rank:
            raise ValueError(f"{what} input {i}: {t} does not fit output {out_t}")
    elem = element_type(out_t.dtype.itemsize, what)
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    pairs = [(t.shape[k], out_t.shape[k], f"input {i} dim {k} vs output")
             for i, t in enumerate(spec.inputs) for k in range(out_t.rank) if k != axis]
    pairs.append((total([t.shape[axis] for t in spec.inputs]), out_t.shape[axis],
                  f"sum of the inputs' dims {axis} vs output"))
    require_same_dims(dk, pairs, what)

    inner = product(out_t.shape[axis + 1:])
    grid = row_grid(product(out_t.shape[:axis]), product(out_t.shape[axis:]))
    inner_v = dk.dim(inner)
    out_row = dk.dim(grid.cols)
    chunks = [b.mul(dk.dim(t.shape[axis]), inner_v) for t in spec.inputs]
    srcs = [dk.binding(i) for i in range(len(spec.inputs))]
    dst = dk.binding(len(spec.inputs))
    start, stop = group_rows(dk, grid)
    with for_range(b, start, stop, name="row") as row:
        offset: ir.Value = b.mul(row, out_row)
        for src, chunk in zip(srcs, chunks):
            copy_run(b, dst, offset, src, b.mul(row, chunk), chunk, elem)
            offset = b.add(offset, chunk)
    dk.finish()
    return dk.info(workgroup_count=(grid.groups, 1, 1))
