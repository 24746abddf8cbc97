"""The "matmul" kernel for symbolic dims: A[..., M, K] @ B[..., K, N], batch dims broadcast
numpy-style (a batch dim that is 1 at run time has stride 0), any of M, K, N and the batch dims
symbolic, with the static kernel's fused epilogue (codegen/llvm/epilogue.py).

Same structure as the static kernel (codegen/llvm/matmul.py) with run-time tails:
  grid      x = column blocks (COLUMN_BLOCK_TILES register tiles), y = row blocks (about
            ROW_BLOCK_ROWS rows), z = flat output batch index.
  tile      rows × vectors of lanes columns, one accumulator each; the K loop is innermost and
            loads each B row's vectors once (contiguous), then FMAs a broadcast A[row, k] per row.
  tails     the columns a block has past its last full tile: single vectors, then single columns;
            the rows past the last full row tile: one row at a time. So only six tile shapes are
            compiled and no lane reads or writes outside the tensors.
A dim may be 0 at run time: an empty grid axis runs nothing, and K = 0 stores the epilogue of 0.
A 1-D A is treated as [1, K] and a 1-D B as [K, 1] (numpy matmul).
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import const_i64
from iree_py.codegen.llvm.dynamic.common import DynamicKernel, begin_dynamic_kernel
from iree_py.codegen.llvm.dims import runtime_strides
from iree_py.codegen.llvm.dynamic.linalg_common import Agreements, product
from iree_py.codegen.llvm.epilogue import (TilePosition, apply_epilogue, carried_loop, check_epilogue, fma, imin,
                                           load_tile, simple_loop, splat, store_tile, zero)
from iree_py.codegen.llvm.matmul import MatmulTiling, matmul_tiling
from iree_py.targets import Target
from iree_py.ir.symbols import call, dim
from iree_py.ir.types import Dim, DType


@dataclass(frozen=True)
class DynamicMatmulShape:
    m: Dim
    k: Dim                    # A's K: its row stride and the length of the K loop
    n: Dim
    batch: tuple[Dim, ...]    # the output's batch dims
    a_dims: tuple[Dim, ...]   # A as [..., M, K] (a 1-D A is [1, K])
    b_dims: tuple[Dim, ...]   # B as [..., K, N] (a 1-D B is [K, 1])


def dynamic_matmul_shape(spec: KernelSpec, agree: Agreements) -> DynamicMatmulShape:
    """The matmul's dims; the ones that must agree at run time are added to `agree`."""
    what = agree.what
    if len(spec.inputs) < 2 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expected inputs A, B (+ epilogue operands) and one output, got "
                         f"{len(spec.inputs)} inputs and {len(spec.outputs)} outputs")
    for i, t in enumerate((*spec.inputs, spec.outputs[0])):
        if t.dtype != DType.f32:
            raise CompileError(f"{what}: only f32 is supported, got {t} (binding {i})")
    a, bsh, out = spec.inputs[0].shape, spec.inputs[1].shape, spec.outputs[0].shape
    if not a or not bsh:
        raise ValueError(f"{what}: operands must have rank >= 1, got {spec.inputs[0]} and {spec.inputs[1]}")
    a2 = (1, *a) if len(a) == 1 else tuple(a)
    b2 = (*bsh, 1) if len(bsh) == 1 else tuple(bsh)
    m, k = a2[-2:]
    k2, n = b2[-2:]
    agree.equal(k2, k, "B's inner dim (vs A's)")
    matrix = [d for d, kept in ((m, len(a) > 1), (n, len(bsh) > 1)) if kept]
    batch_rank = len(out) - len(matrix)
    if batch_rank < max(len(a2), len(b2)) - 2:
        raise ValueError(f"{what}: output {spec.outputs[0]} has too few dims for {spec.inputs[0]} @ {spec.inputs[1]}")
    for axis, want in enumerate(matrix):
        agree.equal(out[batch_rank + axis], want, f"output dim {batch_rank + axis}")
    batch = tuple(out[:batch_rank])
    for name, operand in (("A", a2), ("B", b2)):
        operand_batch = operand[:-2]
        for axis, d in enumerate(operand_batch):
            out_axis = batch_rank - len(operand_batch) + axis
            agree.one_or_equal(d, batch[out_axis], f"{name}'s batch dim {axis} (vs the output's)")
    return DynamicMatmulShape(m, k, n, batch, a2, b2)


def _check_operands(spec: KernelSpec, shape: DynamicMatmulShape, agree: Agreements) -> None:
    """Epilogue operands: scalar = one element, channel = N elements, full = the output's."""
    check_epilogue(spec.epilogue, len(spec.inputs), spec.name)
    for op in spec.epilogue:
        if op.operand is None:
            continue
        t = spec.inputs[op.operand]
        if t.dtype != DType.f32:
            raise ValueError(f"{agree.what}: epilogue {op.op} operand {t} is not f32")
        want = {"scalar": 1, "channel": shape.n, "full": spec.outputs[0].element_count}[op.operand_kind]
        agree.equal(t.element_count, want, f"the element count of epilogue {op.op}'s {op.operand_kind} operand")


@dataclass
class _Operands:
    a: ir.Value
    b: ir.Value
    out: ir.Value
    inputs: list[ir.Value]
    k: ir.Value          # K
    n: ir.Value          # N (B's and the output's row stride)
    a_offset: ir.Value   # element offset of this batch's A matrix
    b_offset: ir.Value
    out_offset: ir.Value


def _batch_offsets(dk: DynamicKernel, shape: DynamicMatmulShape, batch_index: ir.Value
                   ) -> tuple[ir.Value, ir.Value]:
    """Element offsets of this batch's A and B matrices for flat output batch index `batch_index`."""
    b = dk.builder
    rank = len(shape.batch) + 2
    a_strides = runtime_strides(b, [dk.dim(d) for d in shape.a_dims], rank, shape.a_dims)
    b_strides = runtime_strides(b, [dk.dim(d) for d in shape.b_dims], rank, shape.b_dims)
    a_off, b_off, rest = const_i64(0), const_i64(0), batch_index
    for axis in range(len(shape.batch) - 1, -1, -1):
        size = dk.dim(shape.batch[axis])
        index = b.urem(rest, size) if axis > 0 else rest
        rest = b.udiv(rest, size) if axis > 0 else rest
        a_off = b.add(a_off, b.mul(index, a_strides[axis]))
        b_off = b.add(b_off, b.mul(index, b_strides[axis]))
    return a_off, b_off


def _emit_tile(b: ir.IRBuilder, spec: KernelSpec, ops: _Operands, rows: int, widths: tuple[int, ...],
               row: ir.Value, col: ir.Value) -> None:
    """Output rows [row, row + rows) × columns [col, col + sum(widths)): K loop, epilogue, stores."""
    offsets = [sum(widths[:j]) for j in range(len(widths))]
    a_rows = [b.add(ops.a_offset, b.mul(b.add(row, const_i64(r)), ops.k)) for r in range(rows)]
    b_col = b.add(ops.b_offset, col)

    def k_step(k: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        b_row = b.add(b_col, b.mul(k, ops.n))
        b_vecs = [load_tile(b, ops.b, b.add(b_row, const_i64(off)), w) for off, w in zip(offsets, widths)]
        new = []
        for r in range(rows):
            a_elem = load_tile(b, ops.a, b.add(a_rows[r], k), 1)
            a_splats = {w: splat(b, a_elem, w) for w in set(widths)}
            for j, w in enumerate(widths):
                new.append(fma(b, a_splats[w], b_vecs[j], accs[r * len(widths) + j]))
        return new

    initial = [zero(w) for _ in range(rows) for w in widths]
    accs = carried_loop(b, const_i64(0), ops.k, 1, initial, k_step, "k")
    for r in range(rows):
        out_row = b.add(ops.out_offset, b.mul(b.add(row, const_i64(r)), ops.n))
        for j, (off, w) in enumerate(zip(offsets, widths)):
            column = b.add(col, const_i64(off))
            flat = b.add(out_row, column)
            value = apply_epilogue(b, spec.epilogue, accs[r * len(widths) + j], ops.inputs,
                                   TilePosition(flat, column, channel_along_lanes=True))
            store_tile(b, value, ops.out, flat)


def _whole_steps_end(b: ir.IRBuilder, begin: ir.Value, end: ir.Value, step: int) -> ir.Value:
    """begin + the largest multiple of `step` that fits in [begin, end) (end >= begin)."""
    if step == 1:
        return end
    span = b.sub(end, begin)
    return b.add(begin, b.mul(b.udiv(span, const_i64(step)), const_i64(step)))


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"matmul kernel {spec.name}"
    if spec.kind != "matmul":
        raise ValueError(f"dynamic matmul.build got kernel {spec.name} of kind {spec.kind!r}")
    agree = Agreements(what)
    shape = dynamic_matmul_shape(spec, agree)
    _check_operands(spec, shape, agree)
    tiling: MatmulTiling = matmul_tiling(target)
    lanes, tile_cols = tiling.lanes, tiling.tile_cols
    block_rows = tiling.rows * tiling.row_block_tiles
    block_cols = tile_cols * tiling.column_block_tiles

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    agree.emit(dk)
    inputs = [dk.binding(i) for i in range(len(spec.inputs))]
    m, n = dk.dim(shape.m), dk.dim(shape.n)
    batch_index = dk.workgroup_id_index(2)
    a_off, b_off = _batch_offsets(dk, shape, batch_index)
    out_off = b.mul(batch_index, b.mul(m, n))
    ops = _Operands(inputs[0], inputs[1], dk.binding(len(spec.inputs)), inputs, dk.dim(shape.k), n,
                    a_off, b_off, out_off)

    row_begin = b.mul(dk.workgroup_id_index(1), const_i64(block_rows))
    row_end = imin(b, b.add(row_begin, const_i64(block_rows)), m)
    row_tiles_end = _whole_steps_end(b, row_begin, row_end, tiling.rows)
    col_begin = b.mul(dk.workgroup_id_index(0), const_i64(block_cols))
    col_end = imin(b, b.add(col_begin, const_i64(block_cols)), n)
    col_tiles_end = _whole_steps_end(b, col_begin, col_end, tile_cols)
    col_vectors_end = _whole_steps_end(b, col_tiles_end, col_end, lanes) if tile_cols > lanes > 1 else col_tiles_end

    def columns(widths: tuple[int, ...], begin: ir.Value, end: ir.Value) -> None:
        step = sum(widths)

        def one_column_tile(col: ir.Value) -> None:
            simple_loop(b, row_begin, row_tiles_end, tiling.rows,
                        lambda row: _emit_tile(b, spec, ops, tiling.rows, widths, row, col), "m")
            if tiling.rows > 1:
                simple_loop(b, row_tiles_end, row_end, 1,
                            lambda row: _emit_tile(b, spec, ops, 1, widths, row, col), "mt")

        simple_loop(b, begin, end, step, one_column_tile, f"n{step}")

    columns((lanes,) * tiling.vectors, col_begin, col_tiles_end)
    if tile_cols > lanes > 1:
        columns((lanes,), col_tiles_end, col_vectors_end)
    if tile_cols > 1:
        columns((1,), col_vectors_end, col_end)
    dk.finish()

    grid = (call("ceildiv", shape.n, block_cols), call("ceildiv", shape.m, block_rows), product(shape.batch))
    return dk.info(workgroup_count=tuple(dim(g) for g in grid))

