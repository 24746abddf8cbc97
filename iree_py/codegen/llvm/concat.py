"""The "concat" kernel: inputs joined along attrs["axis"], dims ints or Exprs. Seen as
[outer, axis * inner], input i copies a contiguous run of its own axis * inner elements into each
output row at the sum of the runs before it (vectors for 4-byte elements). Workgroups split the
outer rows."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import for_range, lanes_f32
from iree_py.codegen.llvm.copy_common import (element_type, emit_contiguous_copy, group_rows, require_same_dims,
                                              row_grid, total)
from iree_py.codegen.llvm.dims import begin_dynamic_kernel, product
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
        if t.dtype != out_t.dtype:
            raise ValueError(f"{what} input {i}: dtype {t.dtype.value} != output {out_t.dtype.value}")
        if t.rank != out_t.rank:
            raise ValueError(f"{what} input {i}: {t} does not fit output {out_t} on axis {axis}")
    joined = total([t.shape[axis] for t in spec.inputs])
    if isinstance(joined, int) and isinstance(out_t.shape[axis], int) and joined != out_t.shape[axis]:
        raise ValueError(f"{what}: inputs sum to {joined} on axis {axis}, output has {out_t.shape[axis]}")
    elem = element_type(out_t.dtype.itemsize, what)
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    require_same_dims(dk, [(t.shape[k], out_t.shape[k], f"input {i} dim {k} vs output")
                           for i, t in enumerate(spec.inputs) for k in range(out_t.rank) if k != axis]
                      + [(joined, out_t.shape[axis], f"sum of the inputs' dims {axis} vs output")], what)

    inner = product(out_t.shape[axis + 1:])
    grid = row_grid(product(out_t.shape[:axis]), product(out_t.shape[axis:]))
    chunks = [product((t.shape[axis], inner)) for t in spec.inputs]
    offsets = [total(chunks[:i]) for i in range(len(chunks))]
    # Every dim is lowered before the row loop: a value computed from push constants must dominate its uses.
    out_row, chunk_v, offset_v = dk.dim(grid.cols), [dk.dim(c) for c in chunks], [dk.dim(o) for o in offsets]
    srcs = [dk.binding(i) for i in range(len(spec.inputs))]
    dst = dk.binding(len(spec.inputs))
    start, stop = group_rows(dk, grid)
    with for_range(b, start, stop, name="row") as row:
        for src, chunk, count, offset in zip(srcs, chunks, chunk_v, offset_v):
            if chunk == 0:
                continue
            emit_contiguous_copy(b, dst, b.add(b.mul(row, out_row), offset), src, b.mul(row, count),
                                 chunk if isinstance(chunk, int) else count, elem, lanes_f32(target))
    dk.finish()
    return dk.info(workgroup_count=(grid.groups, 1, 1))
