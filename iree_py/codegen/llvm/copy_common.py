"""Data-movement helpers shared by transpose, slice and concat: element types by size, a
contiguous copy loop (vectorized for 4-byte elements) and a strided gather kernel body."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.llvm.common import (ALIGN, begin_kernel, const_i64, element_ptr, for_range, lanes_f32,
                                         min_index, strides_of, vector_split)
from iree_py.codegen.llvm.shapes import collapse_dims

ROW_GROUP_ELEMENTS = 16384


def element_type(itemsize: int, what: str) -> ir.IntType:
    """Kernels that only move data copy elements as integers of the same size."""
    if itemsize not in (1, 2, 4, 8):
        raise ValueError(f"{what}: unsupported element size {itemsize} bytes")
    return ir.IntType(itemsize * 8)


def emit_contiguous_copy(b: ir.IRBuilder, dst: ir.Value, dst_off: ir.Value, src: ir.Value, src_off: ir.Value,
                         count: int, elem: ir.IntType, lanes: int) -> None:
    """dst[dst_off : dst_off + count] = src[src_off : src_off + count] (element offsets)."""
    lanes = lanes if elem.width == 32 else 1
    vec_count, _ = vector_split(count, lanes)
    align = min(ALIGN, elem.width // 8)
    if vec_count:
        vty = ir.VectorType(elem, lanes)
        with for_range(b, 0, vec_count, step=lanes, name="cv") as j:
            v = b.load(element_ptr(b, src, b.add(src_off, j), elem), typ=vty, align=align)
            b.store(v, element_ptr(b, dst, b.add(dst_off, j), elem), align=align)
    with for_range(b, vec_count, count, name="ct") as j:
        v = b.load(element_ptr(b, src, b.add(src_off, j), elem), typ=elem, align=align)
        b.store(v, element_ptr(b, dst, b.add(dst_off, j), elem), align=align)


def build_strided_gather(module: ir.Module, target, name: str, out_shape: tuple[int, ...],
                         src_strides: tuple[int, ...], src_base: int, elem: ir.IntType) -> tuple[int, int, int]:
    """Kernel `name`: out[i...] = in[src_base + sum(i_k * src_strides[k])], the output walked
    row-major (strides may be negative). Dims that stay adjacent are merged; the innermost run is
    a vector copy when its source stride is 1. Workgroups split the rows; returns the grid."""
    shape, (_, strides) = collapse_dims(out_shape, [strides_of(out_shape), src_strides])
    cols = shape[-1]
    row_shape = shape[:-1]
    rows = 1
    for n in row_shape:
        rows *= n
    rows_per_group = max(1, ROW_GROUP_ELEMENTS // max(cols, 1))
    groups = max(1, -(-rows // rows_per_group))
    align = min(ALIGN, elem.width // 8)

    kb = begin_kernel(module, name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    row_start = b.mul(kb.workgroup_id_index(0), const_i64(rows_per_group))
    row_stop = min_index(b, b.add(row_start, const_i64(rows_per_group)), const_i64(rows))
    with for_range(b, row_start, row_stop, name="row") as row:
        src_off = const_i64(src_base)
        rest = row
        for axis in range(len(row_shape) - 1, -1, -1):
            idx = b.urem(rest, const_i64(row_shape[axis])) if axis > 0 else rest
            rest = b.udiv(rest, const_i64(row_shape[axis])) if axis > 0 else rest
            src_off = b.add(src_off, b.mul(idx, const_i64(strides[axis])))
        dst_off = b.mul(row, const_i64(cols))  # the output is walked row-major
        if strides[-1] == 1:
            emit_contiguous_copy(b, dst, dst_off, src, src_off, cols, elem, lanes_f32(target))
        else:
            with for_range(b, 0, cols, name="col") as col:
                v = b.load(element_ptr(b, src, b.add(src_off, b.mul(col, const_i64(strides[-1]))), elem),
                           typ=elem, align=align)
                b.store(v, element_ptr(b, dst, b.add(dst_off, col), elem), align=align)
    kb.finish()
    return (groups, 1, 1)
