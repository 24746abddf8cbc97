"""The "concat" kernel: inputs joined along attrs["axis"]. Seen as [outer, axis * inner], each
input copies contiguous chunks into its slice of each output row. Workgroups split the outer rows."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import begin_kernel, const_i64, for_range, lanes_f32, min_index, static_shape
from iree_py.codegen.llvm.copy_common import element_type, emit_contiguous_copy

ROW_GROUP_ELEMENTS = 16384


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    if not spec.inputs or len(spec.outputs) != 1:
        raise ValueError(f"concat kernel {spec.name}: expects >= 1 input and 1 output")
    out_t = spec.outputs[0]
    out_shape = static_shape(out_t, f"concat kernel {spec.name} output")
    axis = int(spec.attrs.get("axis", 0))
    if not 0 <= axis < len(out_shape):
        raise ValueError(f"concat kernel {spec.name}: axis {axis} out of range for rank {len(out_shape)}")
    total = 0
    for i, t in enumerate(spec.inputs):
        shape = static_shape(t, f"concat kernel {spec.name} input {i}")
        if t.dtype != out_t.dtype:
            raise ValueError(f"concat kernel {spec.name} input {i}: dtype {t.dtype.value} != output {out_t.dtype.value}")
        if len(shape) != len(out_shape) or any(s != o for k, (s, o) in enumerate(zip(shape, out_shape)) if k != axis):
            raise ValueError(f"concat kernel {spec.name} input {i}: shape {shape} does not fit output {out_shape} on axis {axis}")
        total += shape[axis]
    if total != out_shape[axis]:
        raise ValueError(f"concat kernel {spec.name}: inputs sum to {total} on axis {axis}, output has {out_shape[axis]}")

    outer = 1
    for n in out_shape[:axis]:
        outer *= n
    inner = 1
    for n in out_shape[axis + 1:]:
        inner *= n
    out_row = out_shape[axis] * inner
    rows_per_group = max(1, ROW_GROUP_ELEMENTS // max(out_row, 1))
    groups = max(1, -(-outer // rows_per_group))
    elem = element_type(out_t.dtype.itemsize, f"concat kernel {spec.name}")

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    srcs = [kb.binding(i) for i in range(len(spec.inputs))]
    dst = kb.binding(len(spec.inputs))
    row_start = b.mul(kb.workgroup_id_index(0), const_i64(rows_per_group))
    row_stop = min_index(b, b.add(row_start, const_i64(rows_per_group)), const_i64(outer))
    with for_range(b, row_start, row_stop, name="row") as row:
        offset = 0
        for src, t in zip(srcs, spec.inputs):
            chunk = int(t.shape[axis]) * inner
            if chunk:
                dst_off = b.add(b.mul(row, const_i64(out_row)), const_i64(offset))
                emit_contiguous_copy(b, dst, dst_off, src, b.mul(row, const_i64(chunk)), chunk, elem,
                                     lanes_f32(target))
            offset += chunk
    kb.finish()
    return KernelInfo(spec.name, (groups, 1, 1), (), tuple(t.num_bytes for t in (*spec.inputs, out_t)))
