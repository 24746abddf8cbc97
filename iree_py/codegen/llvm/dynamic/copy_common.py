"""What the dynamic data-movement kernels share (transpose, slice, expand, concat, gather, pad,
cumsum, argmax/argmin): the row grid, run-time strides, checks that make the kernel fail instead
of touching memory it was not given, and the strided gather walk.

Dims are `int | Expr`; their run-time values come from `dk.dim`. The kernels walk their output as
(rows, cols), cols being the innermost dim; workgroup x takes `rows_per_group` rows, a number
chosen so a group moves about ROW_GROUP_ELEMENTS elements (an Expr when cols is symbolic).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llvmlite import ir

from iree_py.codegen.kernel_abi import STATUS_DISPATCH_REFUSED
from iree_py.codegen.llvm.common import ALIGN, I1, const_i64, element_ptr, for_range, min_index, return_unless
from iree_py.codegen.llvm.dims import DynamicKernel, product  # noqa: F401 (product: re-exported)
from iree_py.ir.symbols import Expr, call, dim
from iree_py.ir.types import Dim

ROW_GROUP_ELEMENTS = 16384


def total(dims: tuple[Dim, ...] | list[Dim]) -> Dim:
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
    if isinstance(cols, int):
        per_group: Dim = max(1, ROW_GROUP_ELEMENTS // max(cols, 1))
    else:
        per_group = dim(call("max", 1, call("floordiv", ROW_GROUP_ELEMENTS, call("max", cols, 1))))
    groups = dim(call("ceildiv", rows, per_group))
    return RowGrid(rows, cols, per_group, groups)


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


def row_major_strides(b: ir.IRBuilder, dims: list[ir.Value]) -> list[ir.Value]:
    """Run-time row-major element strides of a tensor with `dims`."""
    strides: list[ir.Value] = [const_i64(1)] * len(dims)
    for axis in range(len(dims) - 2, -1, -1):
        strides[axis] = b.mul(strides[axis + 1], dims[axis + 1])
    return strides


def unravel_row(b: ir.IRBuilder, row: ir.Value, row_dims: list[ir.Value]) -> list[ir.Value]:
    """Coordinates of `row` in a row-major space of `row_dims` (the first coordinate is not reduced)."""
    coords: list[ir.Value] = [const_i64(0)] * len(row_dims)
    rest = row
    for axis in range(len(row_dims) - 1, 0, -1):
        coords[axis] = b.urem(rest, row_dims[axis])
        rest = b.udiv(rest, row_dims[axis])
    if row_dims:
        coords[0] = rest
    return coords


def copy_run(b: ir.IRBuilder, dst: ir.Value, dst_off: ir.Value, src: ir.Value, src_off: ir.Value,
             count: ir.Value, elem: ir.IntType, src_step: ir.Value | None = None) -> None:
    """dst[dst_off + j] = src[src_off + j * src_step] for j < count (src_step None: 1)."""
    align = min(ALIGN, elem.width // 8)
    with for_range(b, 0, count, name="col") as j:
        at = b.add(src_off, j if src_step is None else b.mul(j, src_step))
        v = b.load(element_ptr(b, src, at, elem), typ=elem, align=align)
        b.store(v, element_ptr(b, dst, b.add(dst_off, j), elem), align=align)


def fill_run(b: ir.IRBuilder, dst: ir.Value, dst_off: ir.Value, count: ir.Value, value: ir.Constant) -> None:
    """dst[dst_off + j] = value for j < count."""
    align = min(ALIGN, value.type.width // 8)
    with for_range(b, 0, count, name="fill") as j:
        b.store(value, element_ptr(b, dst, b.add(dst_off, j), value.type), align=align)


def strided_gather(dk: DynamicKernel, out_shape: tuple[Dim, ...], src_strides: list[ir.Value],
                   src_base: ir.Value, elem: ir.IntType) -> RowGrid:
    """The body of a kernel with bindings (src, dst): dst walked row-major over `out_shape`,
    out[i...] = src[src_base + sum(i_k * src_strides[k])]. Returns the grid (the caller's info)."""
    b = dk.builder
    shape = out_shape if out_shape else (1,)
    strides = src_strides if out_shape else [const_i64(1)]
    grid = row_grid(product(shape[:-1]), shape[-1])
    src, dst = dk.binding(0), dk.binding(1)
    row_dims = [dk.dim(d) for d in shape[:-1]]
    cols = dk.dim(shape[-1])
    start, stop = group_rows(dk, grid)
    with for_range(b, start, stop, name="row") as row:
        src_off = src_base
        for coord, stride in zip(unravel_row(b, row, row_dims), strides):
            src_off = b.add(src_off, b.mul(coord, stride))
        copy_run(b, dst, b.mul(row, cols), src, src_off, cols, elem, strides[-1])
    return grid
