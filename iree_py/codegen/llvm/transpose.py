"""The "transpose" kernel: out = in.transpose(perm). Dims that stay adjacent are merged; the
kernel walks the output row-major as (rows..., cols) and gathers from the input (a vector copy when
the innermost output axis is also the input's innermost). Workgroups split the rows."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (ALIGN, begin_kernel, const_i64, element_ptr, for_range, lanes_f32,
                                         min_index, static_shape, strides_of)
from iree_py.codegen.llvm.copy_common import element_type, emit_contiguous_copy
from iree_py.codegen.llvm.shapes import collapse_dims

ROW_GROUP_ELEMENTS = 16384


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"transpose kernel {spec.name}: expects 1 input and 1 output")
    in_t, out_t = spec.inputs[0], spec.outputs[0]
    in_shape = static_shape(in_t, f"transpose kernel {spec.name} input")
    out_shape = static_shape(out_t, f"transpose kernel {spec.name} output")
    perm = tuple(int(p) for p in spec.attrs.get("perm", range(len(in_shape) - 1, -1, -1)))
    if sorted(perm) != list(range(len(in_shape))):
        raise ValueError(f"transpose kernel {spec.name}: perm {perm} is not a permutation of rank {len(in_shape)}")
    if tuple(in_shape[p] for p in perm) != out_shape:
        raise ValueError(f"transpose kernel {spec.name}: output shape {out_shape} != input {in_shape} permuted by {perm}")
    in_strides = strides_of(in_shape)
    shape, (_, src_strides) = collapse_dims(out_shape, [strides_of(out_shape),
                                                                  tuple(in_strides[p] for p in perm)])
    cols = shape[-1]
    row_shape = shape[:-1]
    rows = 1
    for n in row_shape:
        rows *= n
    rows_per_group = max(1, ROW_GROUP_ELEMENTS // cols)
    groups = -(-rows // rows_per_group)
    elem = element_type(in_t.dtype.itemsize, f"transpose kernel {spec.name}")
    align = min(ALIGN, elem.width // 8)

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    row_start = b.mul(kb.workgroup_id_index(0), const_i64(rows_per_group))
    row_stop = min_index(b, b.add(row_start, const_i64(rows_per_group)), const_i64(rows))
    with for_range(b, row_start, row_stop, name="row") as row:
        src_off = const_i64(0)
        rest = row
        for axis in range(len(row_shape) - 1, -1, -1):
            idx = b.urem(rest, const_i64(row_shape[axis])) if axis > 0 else rest
            rest = b.udiv(rest, const_i64(row_shape[axis])) if axis > 0 else rest
            src_off = b.add(src_off, b.mul(idx, const_i64(src_strides[axis])))
        dst_off = b.mul(row, const_i64(cols))  # the output is walked row-major
        if src_strides[-1] == 1:
            emit_contiguous_copy(b, dst, dst_off, src, src_off, cols, elem, lanes_f32(target))
        else:
            with for_range(b, 0, cols, name="col") as col:
                v = b.load(element_ptr(b, src, b.add(src_off, b.mul(col, const_i64(src_strides[-1]))), elem),
                           typ=elem, align=align)
                b.store(v, element_ptr(b, dst, b.add(dst_off, col), elem), align=align)
    kb.finish()
    return KernelInfo(spec.name, (groups, 1, 1), (), (in_t.num_bytes, out_t.num_bytes))
