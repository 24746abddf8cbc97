"""Data-movement helpers shared by transpose and concat: element types by size, and a
contiguous copy loop (vectorized for 4-byte elements)."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.llvm.common import ALIGN, element_ptr, for_range, vector_split


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
