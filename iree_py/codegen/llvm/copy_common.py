"""What the data-movement kernels share (transpose, slice, expand, bitcast, concat, pad; gather,
cumsum, argmax/argmin and others use parts): element types by size, the row grid, checks that make
a kernel fail instead of touching memory it was not given, a contiguous copy (vectors for 4-byte
elements) and the strided gather walk.

Dims are `int | Expr` (docs/dynamic_shapes.md §3): `dk.dim` makes an int an LLVM constant and an
Expr arithmetic on the push constants, so one builder serves static and symbolic specs and a static
spec compiles to code with every size a constant. The kernels walk their output as (rows, cols),
cols being the innermost dim; workgroup x takes `rows_per_group` rows, a number chosen so a group
moves about ROW_GROUP_ELEMENTS elements (an Expr when cols is symbolic).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from llvmlite import ir

from iree_py.codegen.kernel_abi import STATUS_DISPATCH_REFUSED
from iree_py.codegen.llvm.common import (ALIGN, I1, I32, I64, PTR, const_i32, const_i64, element_ptr, entry_alloca,
                                         for_range, has_vectors, lanes_f32, min_index, return_unless, splat_value,
                                         vector_end, vector_split)
from iree_py.codegen.llvm.dims import DynamicKernel, product
from iree_py.codegen.llvm.shapes import Stride, collapse_dims, row_major, stride_value
from iree_py.ir.symbols import Expr, call, dim
from iree_py.ir.types import Dim
from iree_py.targets import Target

ROW_GROUP_ELEMENTS = 16384


def element_type(itemsize: int, what: str) -> ir.IntType:
    """Kernels that only move data copy elements as integers of the same size."""
    if itemsize not in (1, 2, 4, 8):
        raise ValueError(f"{what}: unsupported element size {itemsize} bytes")
    return ir.IntType(itemsize * 8)


def total(dims: Sequence[Dim]) -> Dim:
    """The sum of dims, canonical."""
    result = Expr.of(0)
    for d in dims:
        result = result + d
    return dim(result)


def attr_dim(value: Any) -> Dim:
    """An attribute entry that is a dim (an int, numpy integer or Expr), canonical."""
    return dim(value) if isinstance(value, Expr) else int(value)


@dataclass(frozen=True)
class RowGrid:
    """`rows` rows of `cols` elements, `rows_per_group` rows per workgroup (x), `groups` groups."""

    rows: Dim
    cols: Dim
    rows_per_group: Dim
    groups: Dim


def row_grid(rows: Dim, cols: Dim) -> RowGrid:
    """About ROW_GROUP_ELEMENTS elements per workgroup; known sizes give at least one group."""
    if isinstance(cols, int):
        per_group: Dim = max(1, ROW_GROUP_ELEMENTS // max(cols, 1))
    else:
        per_group = dim(call("max", 1, call("floordiv", ROW_GROUP_ELEMENTS, call("max", cols, 1))))
    groups = dim(call("ceildiv", rows, per_group))
    return RowGrid(rows, cols, per_group, max(1, groups) if isinstance(groups, int) else groups)


def group_rows(dk: DynamicKernel, grid: RowGrid) -> tuple[ir.Value, ir.Value]:
    """[start, stop) of the rows workgroup x owns."""
    b = dk.builder
    per_group = dk.dim(grid.rows_per_group)
    start = b.mul(dk.workgroup_id_index(0), per_group)
    return start, min_index(b, b.add(start, per_group), dk.dim(grid.rows))


def fail_unless(dk: DynamicKernel, ok: ir.Value, name: str = "check", status: int = STATUS_DISPATCH_REFUSED) -> None:
    """Continue when `ok` (i1) holds, else return `status` from the kernel before touching memory."""
    return_unless(dk.builder, ok, status, name)


def require_same_dims(dk: DynamicKernel, pairs: list[tuple[Dim, Dim, str]], what: str) -> None:
    """Each (a, b, description): equal dims. Decided at compile time when both canonical forms
    agree (nothing to do) or both are ints (ValueError); otherwise the kernel checks at run time."""
    b = dk.builder
    ok: ir.Value = ir.Constant(I1, 1)
    runtime = False
    for x, y, description in pairs:
        x, y = dim(x), dim(y)
        if x == y:
            continue
        if isinstance(x, int) and isinstance(y, int):
            raise ValueError(f"{what}: {description}: {x} != {y}")
        ok = b.and_(ok, b.icmp_signed("==", dk.dim(x), dk.dim(y)))
        runtime = True
    if runtime:
        fail_unless(dk, ok, "dims")


def emit_contiguous_copy(b: ir.IRBuilder, dst: ir.Value, dst_off: ir.Value, src: ir.Value, src_off: ir.Value,
                         count: int | ir.Value, elem: ir.IntType, lanes: int) -> None:
    """dst[dst_off : dst_off + count] = src[src_off : src_off + count] (element offsets). A known
    count: vectors of `lanes` 4-byte elements, then a scalar tail. A run-time count (an i64 value):
    one scalar loop, which LLVM vectorizes (faster than vectors of our own before a run-time tail)."""
    if not isinstance(count, int):
        copy_run(b, dst, dst_off, src, src_off, count, elem)
        return
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


def copy_run(b: ir.IRBuilder, dst: ir.Value, dst_off: ir.Value, src: ir.Value, src_off: ir.Value,
             count: ir.Value, elem: ir.IntType, src_step: ir.Value | None = None) -> None:
    """dst[dst_off + j] = src[src_off + j * src_step] for j < count (src_step None: 1), one by one."""
    align = min(ALIGN, elem.width // 8)
    with for_range(b, 0, count, name="col") as j:
        at = b.add(src_off, j if src_step is None else b.mul(j, src_step))
        v = b.load(element_ptr(b, src, at, elem), typ=elem, align=align)
        b.store(v, element_ptr(b, dst, b.add(dst_off, j), elem), align=align)


def gather_run(b: ir.IRBuilder, dst: ir.Value, dst_off: ir.Value, src: ir.Value, src_off: ir.Value,
               count: int | ir.Value, step: ir.Value, elem: ir.IntType, lanes: int) -> None:
    """dst[dst_off + j] = src[src_off + j * step] for j < count, with a run-time `step`: vector
    gathers of `lanes` 4-byte elements (LLVM forms gathers itself only for a known step), then a
    scalar tail."""
    lanes = lanes if elem.width == 32 else 1
    vec_count = vector_end(b, count, lanes)
    align = min(ALIGN, elem.width // 8)
    if has_vectors(vec_count, lanes):
        vty, ity = ir.VectorType(elem, lanes), ir.VectorType(I64, lanes)
        pty = ir.VectorType(PTR, lanes)
        name = f"llvm.masked.gather.v{lanes}i{elem.width}.v{lanes}p0"
        module = b.block.function.module
        fn = module.globals.get(name) or ir.Function(
            module, ir.FunctionType(vty, [pty, I32, ir.VectorType(I1, lanes), vty]), name=name)
        lane_steps = b.mul(ir.Constant(ity, list(range(lanes))), splat_value(b, step, ity))
        with for_range(b, 0, vec_count, step=lanes, name="gv") as j:
            first = b.add(src_off, b.mul(j, step))
            at = b.add(splat_value(b, first, ity), lane_steps)
            ptrs = b.gep(src, [at], source_etype=elem)
            ptrs.type = pty  # llvmlite types a gep by its pointer operand: here a vector of pointers
            v = b.call(fn, [ptrs, const_i32(align), ir.Constant(ir.VectorType(I1, lanes), [1] * lanes),
                            ir.Constant(vty, ir.Undefined)])
            b.store(v, element_ptr(b, dst, b.add(dst_off, j), elem), align=align)
    with for_range(b, vec_count, count, name="gt") as j:
        v = b.load(element_ptr(b, src, b.add(src_off, b.mul(j, step)), elem), typ=elem, align=align)
        b.store(v, element_ptr(b, dst, b.add(dst_off, j), elem), align=align)


def fill_run(b: ir.IRBuilder, dst: ir.Value, dst_off: ir.Value, count: int | ir.Value, value: ir.Constant) -> None:
    """dst[dst_off + j] = value for j < count."""
    align = min(ALIGN, value.type.width // 8)
    with for_range(b, 0, count, name="fill") as j:
        b.store(value, element_ptr(b, dst, b.add(dst_off, j), value.type), align=align)


def strided_gather(dk: DynamicKernel, target: Target, out_shape: Sequence[Dim], src_strides: Sequence[Stride],
                   src_base: Dim | ir.Value, elem: ir.IntType) -> RowGrid:
    """The body of a kernel with bindings (src, dst): out[i...] = src[src_base + sum(i_k * src_strides[k])],
    the output walked row-major (strides may be negative, Exprs, or a RuntimeBroadcast the kernel
    resolves: 0 where the dim is 1 at run time). Dims that stay adjacent are merged
    (collapse_dims); the innermost run is a vector copy when its source stride is 1. Workgroups
    split the rows; returns the grid (the caller's KernelInfo).

    A row's source offset comes from its coordinates, divided out of the row index: by constants
    when the row dims are known. When one that is divided is symbolic, a division per row would cost
    more than a short copy, so the kernel steps the innermost row coordinate and the offset from row
    to row and divides only where that coordinate wraps."""
    shape, (_, strides) = collapse_dims(tuple(out_shape), [row_major(tuple(out_shape)), tuple(src_strides)])
    row_shape, cols = shape[:-1], shape[-1]
    grid = row_grid(product(row_shape), cols)
    b = dk.builder
    src, dst = dk.binding(0), dk.binding(1)
    # Every dim is lowered here, before the loop: a value computed from push constants must
    # dominate all its uses.
    row_dims = [dk.dim(n) for n in row_shape]
    stride_v = [stride_value(dk, s) for s in strides]
    base = src_base if isinstance(src_base, ir.Value) else dk.dim(src_base)
    cols_v = dk.dim(cols)

    def source_offset(row: ir.Value) -> ir.Value:
        src_off = base
        rest = row
        for axis in range(len(row_shape) - 1, -1, -1):
            idx = b.urem(rest, row_dims[axis]) if axis > 0 else rest
            rest = b.udiv(rest, row_dims[axis]) if axis > 0 else rest
            src_off = b.add(src_off, b.mul(idx, stride_v[axis]))
        return src_off

    stepped = any(not isinstance(n, int) for n in row_shape[1:])
    if stepped:  # (innermost row coordinate, source offset) of the previous row; the first row wraps
        last_slot, offset_slot = entry_alloca(b, I64, "row_last"), entry_alloca(b, I64, "row_offset")
        b.store(b.sub(row_dims[-1], const_i64(1)), last_slot)
        b.store(base, offset_slot)
    start, stop = group_rows(dk, grid)
    with for_range(b, start, stop, name="row") as row:
        if stepped:
            last = b.add(b.load(last_slot), const_i64(1))
            with b.if_else(b.icmp_signed("<", last, row_dims[-1])) as (step, wrap):
                with step:
                    b.store(last, last_slot)
                    b.store(b.add(b.load(offset_slot), stride_v[len(row_shape) - 1]), offset_slot)
                with wrap:
                    b.store(b.urem(row, row_dims[-1]), last_slot)
                    b.store(source_offset(row), offset_slot)
            src_off = b.load(offset_slot)
        else:
            src_off = source_offset(row)
        dst_off = b.mul(row, cols_v)  # the output is walked row-major
        if isinstance(strides[-1], int) and strides[-1] == 1:
            emit_contiguous_copy(b, dst, dst_off, src, src_off, cols if isinstance(cols, int) else cols_v, elem,
                                 lanes_f32(target))
        elif isinstance(strides[-1], int):
            copy_run(b, dst, dst_off, src, src_off, cols_v, elem, stride_v[-1])
        else:
            gather_run(b, dst, dst_off, src, src_off, cols if isinstance(cols, int) else cols_v, stride_v[-1], elem,
                       lanes_f32(target))
    return grid
