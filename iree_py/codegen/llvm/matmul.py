"""The "matmul" kernel: A[..., M, K] @ B[..., K, N] with numpy batch broadcasting, register-blocked.

Structure (all sizes static):
  grid      x = column blocks of COLUMN_BLOCK_TILES tiles, y = row blocks of about ROW_BLOCK_ROWS
            rows, z = flat batch index (its A and B offsets come from the broadcast batch strides).
  tile      rows × vectors of columns (matmul_tiling: sized to the target's vector registers and
            width), one accumulator vector each;
            the K loop is innermost: per k, load the B vectors once, then for each row broadcast
            A[row, k] and FMA it into that row's accumulators.
  tails     the last row tile has fewer rows, the last column tile narrower vectors (down to a
            vector of the exact remainder), so no lane reads or writes outside the tensors.
  epilogue  applied to each accumulator vector before its store (epilogue.py).
A 1-D A is treated as [1, K] and a 1-D B as [K, 1] (numpy matmul), which leaves the output layout
unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import begin_kernel, lanes_f32, static_shape
from iree_py.codegen.llvm.epilogue import (TilePosition, apply_epilogue, carried_loop,
                                           check_epilogue, fma, i64, if_then, imin, load_tile,
                                           simple_loop, splat, store_tile, zero)
from iree_py.targets import Target
from iree_py.ir.types import DType

ROW_BLOCK_ROWS = 48      # a workgroup covers about this many rows ...
COLUMN_BLOCK_TILES = 4   # ... and up to 4 column tiles


@dataclass(frozen=True)
class MatmulTiling:
    """Register tile (rows × vectors of `lanes` columns) and workgroup block, from the target."""

    rows: int
    vectors: int
    lanes: int
    row_block_tiles: int
    column_block_tiles: int

    @property
    def tile_cols(self) -> int:
        return self.vectors * self.lanes


def matmul_tiling(target: Target) -> MatmulTiling:
    """rows × vectors accumulators plus `vectors` B vectors and one broadcast fill the target's
    vector registers: 16 registers → 6 × 2, 32 registers (AVX-512, NEON) → 9 × 3."""
    lanes = lanes_f32(target)
    vectors = 3 if target.vector_registers >= 32 else 2
    rows = max(1, (target.vector_registers - vectors - 1) // vectors)
    return MatmulTiling(rows, vectors, lanes, max(1, -(-ROW_BLOCK_ROWS // rows)), COLUMN_BLOCK_TILES)


@dataclass(frozen=True)
class MatmulShape:
    m: int
    k: int
    n: int
    batch: tuple[int, ...]          # the output's batch dims
    a_batch_strides: tuple[int, ...]  # element strides of A per output batch dim (0: broadcast)
    b_batch_strides: tuple[int, ...]

    @property
    def batch_count(self) -> int:
        return int(np.prod(self.batch, dtype=np.int64)) if self.batch else 1


def _batch_strides(batch: tuple[int, ...], operand_batch: tuple[int, ...], matrix_size: int,
                   what: str) -> tuple[int, ...]:
    """Element strides of an operand's batch dims, aligned right to the output's; 0 where the
    operand broadcasts (size 1 or missing)."""
    padded = (1,) * (len(batch) - len(operand_batch)) + operand_batch
    strides, stride = [0] * len(batch), matrix_size
    for axis in range(len(batch) - 1, -1, -1):
        size = padded[axis]
        if size not in (1, batch[axis]):
            raise ValueError(f"{what}: batch dim {size} does not broadcast to {batch[axis]}")
        strides[axis] = 0 if size == 1 else stride
        stride *= size
    return tuple(strides)


def matmul_shape(spec: KernelSpec) -> MatmulShape:
    if len(spec.inputs) < 2 or len(spec.outputs) != 1:
        raise ValueError(f"matmul {spec.name}: expected inputs A, B (+ epilogue operands) and one "
                         f"output, got {len(spec.inputs)} inputs and {len(spec.outputs)} outputs")
    a = static_shape(spec.inputs[0], f"matmul {spec.name} input A")
    bsh = static_shape(spec.inputs[1], f"matmul {spec.name} input B")
    out = static_shape(spec.outputs[0], f"matmul {spec.name} output")
    if not a or not bsh:
        raise ValueError(f"matmul {spec.name}: operands must have rank >= 1, got {a} and {bsh}")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = bsh + (1,) if len(bsh) == 1 else bsh
    m, k = a2[-2:]
    k2, n = b2[-2:]
    if k != k2:
        raise ValueError(f"matmul {spec.name}: A is {a} and B is {bsh}: inner dims {k} != {k2}")
    batch = tuple(int(d) for d in np.broadcast_shapes(a2[:-2], b2[:-2]))
    expected = int(np.prod(batch, dtype=np.int64)) * m * n
    if expected != int(np.prod(out, dtype=np.int64)):
        raise ValueError(f"matmul {spec.name}: output {out} does not hold {batch} x {m} x {n}")
    return MatmulShape(m, k, n, batch,
                       _batch_strides(batch, a2[:-2], m * k, f"matmul {spec.name} input A"),
                       _batch_strides(batch, b2[:-2], k * n, f"matmul {spec.name} input B"))


def vector_widths(columns: int, lanes: int) -> tuple[int, ...]:
    """Vectors covering `columns` consecutive columns: full vectors, then the remainder."""
    full, rest = divmod(columns, lanes)
    return (lanes,) * full + ((rest,) if rest else ())


@dataclass
class _Operands:
    a: ir.Value
    b: ir.Value
    out: ir.Value
    inputs: list[ir.Value]
    a_offset: ir.Value   # element offset of this batch's A matrix
    b_offset: ir.Value
    out_offset: ir.Value


def _batch_offsets(b: ir.IRBuilder, shape: MatmulShape, batch_index: ir.Value
                   ) -> tuple[ir.Value, ir.Value, ir.Value]:
    """Element offsets of A, B and the output for flat output batch index `batch_index`."""
    a_off, b_off, rest = i64(0), i64(0), batch_index
    for axis in range(len(shape.batch) - 1, -1, -1):
        size = shape.batch[axis]
        index = b.urem(rest, i64(size))
        rest = b.udiv(rest, i64(size))
        a_off = b.add(a_off, b.mul(index, i64(shape.a_batch_strides[axis])))
        b_off = b.add(b_off, b.mul(index, i64(shape.b_batch_strides[axis])))
    return a_off, b_off, b.mul(batch_index, i64(shape.m * shape.n))


def _emit_tile(b: ir.IRBuilder, spec: KernelSpec, shape: MatmulShape, ops: _Operands, rows: int,
               widths: tuple[int, ...], row: ir.Value, col: ir.Value) -> None:
    """Output rows [row, row + rows) × columns [col, col + sum(widths)): K loop, epilogue, stores."""
    offsets = [sum(widths[:j]) for j in range(len(widths))]
    a_rows = [b.add(ops.a_offset, b.mul(b.add(row, i64(r)), i64(shape.k))) for r in range(rows)]
    b_col = b.add(ops.b_offset, col)

    def k_step(k: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        b_row = b.add(b_col, b.mul(k, i64(shape.n)))
        b_vecs = [load_tile(b, ops.b, b.add(b_row, i64(off)), w) for off, w in zip(offsets, widths)]
        new = []
        for r in range(rows):
            a_elem = load_tile(b, ops.a, b.add(a_rows[r], k), 1)
            a_splats = {w: splat(b, a_elem, w) for w in set(widths)}
            for j, w in enumerate(widths):
                new.append(fma(b, a_splats[w], b_vecs[j], accs[r * len(widths) + j]))
        return new

    initial = [zero(w) for _ in range(rows) for w in widths]
    accs = carried_loop(b, i64(0), i64(shape.k), 1, initial, k_step, "k")
    for r in range(rows):
        out_row = b.add(ops.out_offset, b.mul(b.add(row, i64(r)), i64(shape.n)))
        for j, (off, w) in enumerate(zip(offsets, widths)):
            column = b.add(col, i64(off))
            flat = b.add(out_row, column)
            value = apply_epilogue(b, spec.epilogue, accs[r * len(widths) + j], ops.inputs,
                                   TilePosition(flat, column, channel_along_lanes=True))
            store_tile(b, value, ops.out, flat)


def _emit_row_tiles(b: ir.IRBuilder, spec: KernelSpec, shape: MatmulShape, ops: _Operands,
                    tiling: MatmulTiling, row_begin: ir.Value, row_full_end: ir.Value, has_row_tail: ir.Value,
                    widths: tuple[int, ...], col: ir.Value) -> None:
    """One column tile (`widths`) at `col` for every row tile of the workgroup, then the row tail."""
    simple_loop(b, row_begin, row_full_end, tiling.rows,
                lambda row: _emit_tile(b, spec, shape, ops, tiling.rows, widths, row, col), "m")
    row_tail = shape.m % tiling.rows
    if row_tail:
        if_then(b, has_row_tail,
                lambda: _emit_tile(b, spec, shape, ops, row_tail, widths, i64(shape.m - row_tail), col))


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    if spec.kind != "matmul":
        raise ValueError(f"matmul.build got kernel {spec.name} of kind {spec.kind!r}")
    if spec.inputs and spec.inputs[0].dtype == DType.f64:  # f64math: matmul_f64.py
        from iree_py.codegen.llvm import matmul_f64
        return matmul_f64.build(spec, module, target)
    shape = matmul_shape(spec)
    check_epilogue(spec.epilogue, len(spec.inputs), spec.name)
    tiling = matmul_tiling(target)
    lanes, tile_cols = tiling.lanes, tiling.tile_cols
    block_rows = tiling.rows * tiling.row_block_tiles
    block_cols = tile_cols * tiling.column_block_tiles
    grid = (-(-shape.n // block_cols), -(-shape.m // block_rows), shape.batch_count)

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    inputs = [kb.binding(i) for i in range(len(spec.inputs))]
    a_off, b_off, out_off = _batch_offsets(b, shape, kb.workgroup_id_index(2))
    ops = _Operands(inputs[0], inputs[1], kb.binding(len(spec.inputs)), inputs, a_off, b_off, out_off)

    m_full, n_full = shape.m - shape.m % tiling.rows, shape.n - shape.n % tile_cols
    row_begin = b.mul(kb.workgroup_id_index(1), i64(block_rows))
    row_block_end = b.add(row_begin, i64(block_rows))
    row_full_end = imin(b, row_block_end, i64(m_full))
    has_row_tail = b.icmp_signed(">", row_block_end, i64(m_full))  # only the last row block
    col_begin = b.mul(kb.workgroup_id_index(0), i64(block_cols))
    col_block_end = b.add(col_begin, i64(block_cols))
    col_full_end = imin(b, col_block_end, i64(n_full))

    full_widths = (lanes,) * tiling.vectors
    simple_loop(b, col_begin, col_full_end, tile_cols,
                lambda col: _emit_row_tiles(b, spec, shape, ops, tiling, row_begin, row_full_end,
                                            has_row_tail, full_widths, col), "n")
    col_tail = shape.n - n_full
    if col_tail:
        tail_widths = vector_widths(col_tail, lanes)
        if_then(b, b.icmp_signed(">", col_block_end, i64(n_full)),
                lambda: _emit_row_tiles(b, spec, shape, ops, tiling, row_begin, row_full_end, has_row_tail,
                                        tail_widths, i64(n_full)))
    kb.finish()

    lengths = tuple(t.num_bytes for t in spec.inputs) + (spec.outputs[0].num_bytes,)
    return KernelInfo(spec.name, grid, (), lengths)
