"""The "matmul" kernel: A[..., M, K] @ B[..., K, N] with numpy batch broadcasting, register-blocked.
Every dim is an int or an Expr (docs/dynamic_shapes.md §3): an int folds to a constant, an Expr is
computed from the push constants, and a batch dim that is 1 at run time has stride 0.

Structure:
  grid      x = column blocks of COLUMN_BLOCK_TILES tiles, y = row blocks of about ROW_BLOCK_ROWS
            rows, z = flat batch index (its A and B offsets come from the broadcast batch strides).
  tile      rows × vectors of columns (matmul_tiling: sized to the target's vector registers and
            width), one accumulator vector each;
            the K loop is innermost: per k, load the B vectors once, then for each row broadcast
            A[row, k] and FMA it into that row's accumulators.
  tails     a static M or N: the last row tile has fewer rows, the last column tile narrower
            vectors (down to a vector of the exact remainder). A symbolic M or N: the remainder
            is covered at run time by tiles of fewer rows (4, 2, 1) and narrower columns (one
            vector, then half, quarter, ... of one, down to a single column), each used while
            it fits. Either way no lane reads or writes outside the tensors, and a symbolic dim
            may be 0 (an empty grid axis runs nothing; K = 0 stores the epilogue of 0).
  epilogue  applied to each accumulator vector before its store (epilogue.py).
A 1-D A is treated as [1, K] and a 1-D B as [K, 1] (numpy matmul), which leaves the output layout
unchanged.

f64 (static or symbolic dims, no epilogue): one workgroup per (row, batch), a scalar dot product per
output element summed in order over K (`_build_f64`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import entry_alloca, for_range, lanes_f32
from iree_py.codegen.llvm.dims import Agreements, DynamicKernel, begin_dynamic_kernel, product, runtime_strides
from iree_py.codegen.llvm.epilogue import (TilePosition, apply_epilogue, carried_loop,
                                           check_epilogue, fma, i64, if_then, imin, load_tile,
                                           simple_loop, splat, store_tile, zero)
from iree_py.targets import Target
from iree_py.ir.symbols import call, dim
from iree_py.ir.types import Dim, DType

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
    m: Dim
    k: Dim                    # A's K: its row stride and the length of the K loop
    n: Dim
    batch: tuple[Dim, ...]    # the output's batch dims
    a_dims: tuple[Dim, ...]   # A as [..., M, K] (a 1-D A is [1, K])
    b_dims: tuple[Dim, ...]   # B as [..., K, N] (a 1-D B is [K, 1])

    @property
    def batch_count(self) -> Dim:
        return product(self.batch)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in (*self.a_dims, *self.b_dims, *self.batch))


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


def matmul_shape(spec: KernelSpec, agree: Agreements) -> MatmulShape:
    """The matmul's dims; the symbolic ones that must agree at run time are added to `agree`."""
    if len(spec.inputs) < 2 or len(spec.outputs) != 1:
        raise ValueError(f"matmul {spec.name}: expected inputs A, B (+ epilogue operands) and one "
                         f"output, got {len(spec.inputs)} inputs and {len(spec.outputs)} outputs")
    a, bsh, out = (tuple(dim(d) for d in t.shape) for t in (spec.inputs[0], spec.inputs[1], spec.outputs[0]))
    if not a or not bsh:
        raise ValueError(f"matmul {spec.name}: operands must have rank >= 1, got {a} and {bsh}")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = bsh + (1,) if len(bsh) == 1 else bsh
    m, k = a2[-2:]
    k2, n = b2[-2:]
    if all(isinstance(d, int) for d in (*a2, *b2, *out)):
        if k != k2:
            raise ValueError(f"matmul {spec.name}: A is {a} and B is {bsh}: inner dims {k} != {k2}")
        batch = tuple(int(d) for d in np.broadcast_shapes(a2[:-2], b2[:-2]))
        expected = int(np.prod(batch, dtype=np.int64)) * m * n
        if expected != int(np.prod(out, dtype=np.int64)):
            raise ValueError(f"matmul {spec.name}: output {out} does not hold {batch} x {m} x {n}")
        _batch_strides(batch, a2[:-2], m * k, f"matmul {spec.name} input A")
        _batch_strides(batch, b2[:-2], k * n, f"matmul {spec.name} input B")
        return MatmulShape(m, k, n, batch, a2, b2)
    agree.equal(k2, k, "B's inner dim (vs A's)")
    matrix = [d for d, kept in ((m, len(a) > 1), (n, len(bsh) > 1)) if kept]
    batch_rank = len(out) - len(matrix)
    if batch_rank < max(len(a2), len(b2)) - 2:
        raise ValueError(f"{agree.what}: output {spec.outputs[0]} has too few dims for "
                         f"{spec.inputs[0]} @ {spec.inputs[1]}")
    for axis, want in enumerate(matrix):
        agree.equal(out[batch_rank + axis], want, f"output dim {batch_rank + axis}")
    batch = out[:batch_rank]
    for name, operand in (("A", a2), ("B", b2)):
        operand_batch = operand[:-2]
        for axis, d in enumerate(operand_batch):
            out_axis = batch_rank - len(operand_batch) + axis
            agree.one_or_equal(d, batch[out_axis], f"{name}'s batch dim {axis} (vs the output's)")
    return MatmulShape(m, k, n, batch, a2, b2)


def _check_operands(spec: KernelSpec, shape: MatmulShape, agree: Agreements) -> None:
    """f32 throughout; epilogue operands: scalar = one element, channel = N elements, full = the output's."""
    for i, t in enumerate((*spec.inputs, spec.outputs[0])):
        if t.dtype != DType.f32:
            raise CompileError(f"{agree.what}: only f32 and f64 are supported, got {t} (binding {i})")
    check_epilogue(spec.epilogue, len(spec.inputs), spec.name)
    for op in spec.epilogue:
        if op.operand is None:
            continue
        t = spec.inputs[op.operand]
        want = {"scalar": 1, "channel": shape.n, "full": spec.outputs[0].element_count}[op.operand_kind]
        agree.equal(t.element_count, want, f"the element count of epilogue {op.op}'s {op.operand_kind} operand")


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
    k: ir.Value          # K
    n: ir.Value          # N (B's and the output's row stride)
    a_offset: ir.Value   # element offset of this batch's A matrix
    b_offset: ir.Value
    out_offset: ir.Value


def _batch_offsets(dk: DynamicKernel, shape: MatmulShape, batch_index: ir.Value
                   ) -> tuple[ir.Value, ir.Value, ir.Value]:
    """Element offsets of A, B and the output for flat output batch index `batch_index`."""
    b = dk.builder
    a_off, b_off, rest = i64(0), i64(0), batch_index
    if shape.is_static:
        m, k, n = shape.m, shape.k, shape.n
        a_strides = _batch_strides(shape.batch, shape.a_dims[:-2], m * k, "A")
        b_strides = _batch_strides(shape.batch, shape.b_dims[:-2], k * n, "B")
        for axis in range(len(shape.batch) - 1, -1, -1):
            size = shape.batch[axis]
            index = b.urem(rest, i64(size))
            rest = b.udiv(rest, i64(size))
            a_off = b.add(a_off, b.mul(index, i64(a_strides[axis])))
            b_off = b.add(b_off, b.mul(index, i64(b_strides[axis])))
        return a_off, b_off, b.mul(batch_index, i64(m * n))
    rank = len(shape.batch) + 2
    a_strides = runtime_strides(b, [dk.dim(d) for d in shape.a_dims], rank, shape.a_dims)
    b_strides = runtime_strides(b, [dk.dim(d) for d in shape.b_dims], rank, shape.b_dims)
    for axis in range(len(shape.batch) - 1, -1, -1):
        size = dk.dim(shape.batch[axis])
        index = b.urem(rest, size) if axis > 0 else rest
        rest = b.udiv(rest, size) if axis > 0 else rest
        a_off = b.add(a_off, b.mul(index, a_strides[axis]))
        b_off = b.add(b_off, b.mul(index, b_strides[axis]))
    return a_off, b_off, b.mul(batch_index, dk.dim(product((shape.m, shape.n))))


def _emit_tile(b: ir.IRBuilder, spec: KernelSpec, ops: _Operands, rows: int, widths: tuple[int, ...],
               row: ir.Value, col: ir.Value) -> None:
    """Output rows [row, row + rows) × columns [col, col + sum(widths)): K loop, epilogue, stores."""
    offsets = [sum(widths[:j]) for j in range(len(widths))]
    a_rows = [b.add(ops.a_offset, b.mul(b.add(row, i64(r)), ops.k)) for r in range(rows)]
    b_col = b.add(ops.b_offset, col)

    def k_step(k: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        b_row = b.add(b_col, b.mul(k, ops.n))
        b_vecs = [load_tile(b, ops.b, b.add(b_row, i64(off)), w) for off, w in zip(offsets, widths)]
        new = []
        for r in range(rows):
            a_elem = load_tile(b, ops.a, b.add(a_rows[r], k), 1)
            a_splats = {w: splat(b, a_elem, w) for w in set(widths)}
            for j, w in enumerate(widths):
                new.append(fma(b, a_splats[w], b_vecs[j], accs[r * len(widths) + j]))
        return new

    initial = [zero(w) for _ in range(rows) for w in widths]
    accs = carried_loop(b, i64(0), ops.k, 1, initial, k_step, "k")
    for r in range(rows):
        out_row = b.add(ops.out_offset, b.mul(b.add(row, i64(r)), ops.n))
        for j, (off, w) in enumerate(zip(offsets, widths)):
            column = b.add(col, i64(off))
            flat = b.add(out_row, column)
            value = apply_epilogue(b, spec.epilogue, accs[r * len(widths) + j], ops.inputs,
                                   TilePosition(flat, column, channel_along_lanes=True))
            store_tile(b, value, ops.out, flat)


def _whole_steps_end(b: ir.IRBuilder, begin: ir.Value, end: ir.Value, step: int) -> ir.Value:
    """begin + the largest multiple of `step` that fits in [begin, end) (end >= begin)."""
    if step == 1:
        return end
    span = b.sub(end, begin)
    return b.add(begin, b.mul(b.udiv(span, i64(step)), i64(step)))


def _in_stages(b: ir.IRBuilder, begin: ir.Value, end: ir.Value, steps: tuple[int, ...],
               body: Callable[[int, ir.Value], None], name: str) -> None:
    """Cover [begin, end) with whole steps of steps[0], then of steps[1], ... (the last is 1):
    body(step, index) for each. A run-time remainder, tiled as far as it goes."""
    for step in steps:
        stage_end = _whole_steps_end(b, begin, end, step)
        simple_loop(b, begin, stage_end, step, lambda index, step=step: body(step, index), f"{name}{step}")
        begin = stage_end


def _halvings(width: int) -> tuple[int, ...]:
    """The powers of two below `width`, largest first: the narrower tiles of a run-time remainder."""
    return tuple(1 << p for p in range(width.bit_length() - 1, -1, -1) if 1 << p < width)


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    if spec.kind != "matmul":
        raise ValueError(f"matmul.build got kernel {spec.name} of kind {spec.kind!r}")
    agree = Agreements(f"matmul kernel {spec.name}")
    shape = matmul_shape(spec, agree)
    if spec.inputs[0].dtype == DType.f64:
        return _build_f64(spec, module, target, shape, agree)
    _check_operands(spec, shape, agree)
    tiling = matmul_tiling(target)
    lanes, tile_cols = tiling.lanes, tiling.tile_cols
    block_rows = tiling.rows * tiling.row_block_tiles
    block_cols = tile_cols * tiling.column_block_tiles

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    agree.emit(dk)
    inputs = [dk.binding(i) for i in range(len(spec.inputs))]
    a_off, b_off, out_off = _batch_offsets(dk, shape, dk.workgroup_id_index(2))
    ops = _Operands(inputs[0], inputs[1], dk.binding(len(spec.inputs)), inputs, dk.dim(shape.k), dk.dim(shape.n),
                    a_off, b_off, out_off)

    row_begin = b.mul(dk.workgroup_id_index(1), i64(block_rows))
    row_block_end = b.add(row_begin, i64(block_rows))
    if isinstance(shape.m, int):
        m_full = shape.m - shape.m % tiling.rows
        row_full_end = imin(b, row_block_end, i64(m_full))
        has_row_tail = b.icmp_signed(">", row_block_end, i64(m_full))  # only the last row block
    else:
        row_end = imin(b, row_block_end, dk.dim(shape.m))

    def row_tiles(widths: tuple[int, ...], col: ir.Value) -> None:
        """One column tile (`widths`) at `col` for every row of the workgroup."""
        if not isinstance(shape.m, int):
            _in_stages(b, row_begin, row_end, (tiling.rows, *(r for r in (4, 2, 1) if r < tiling.rows)),
                       lambda rows, row: _emit_tile(b, spec, ops, rows, widths, row, col), "m")
            return
        simple_loop(b, row_begin, row_full_end, tiling.rows,
                    lambda row: _emit_tile(b, spec, ops, tiling.rows, widths, row, col), "m")
        row_tail = shape.m % tiling.rows
        if row_tail:
            if_then(b, has_row_tail,
                    lambda: _emit_tile(b, spec, ops, row_tail, widths, i64(shape.m - row_tail), col))

    col_begin = b.mul(dk.workgroup_id_index(0), i64(block_cols))
    col_block_end = b.add(col_begin, i64(block_cols))
    full_widths = (lanes,) * tiling.vectors
    if isinstance(shape.n, int):
        n_full = shape.n - shape.n % tile_cols
        col_full_end = imin(b, col_block_end, i64(n_full))
        simple_loop(b, col_begin, col_full_end, tile_cols, lambda col: row_tiles(full_widths, col), "n")
        col_tail = shape.n - n_full
        if col_tail:
            if_then(b, b.icmp_signed(">", col_block_end, i64(n_full)),
                    lambda: row_tiles(vector_widths(col_tail, lanes), i64(n_full)))
    else:
        col_end = imin(b, col_block_end, dk.dim(shape.n))
        steps = (tile_cols, *((lanes,) if tile_cols > lanes else ()), *_halvings(lanes))
        _in_stages(b, col_begin, col_end, steps,
                   lambda cols, col: row_tiles(full_widths if cols == tile_cols else (cols,), col), "n")
    dk.finish()

    grid = (call("ceildiv", shape.n, block_cols), call("ceildiv", shape.m, block_rows), shape.batch_count)
    return dk.info(workgroup_count=tuple(dim(g) for g in grid))


def _build_f64(spec: KernelSpec, module: ir.Module, target: Target, shape: MatmulShape,
               agree: Agreements) -> KernelInfo:
    """f64: one workgroup per (row, batch), a scalar dot product per output element, no epilogue
    (the f32 epilogue code would not apply)."""
    from iree_py.codegen.llvm.typed_values import F64, const, load_typed, store_typed

    what = f"matmul {spec.name} (f64)"
    if spec.epilogue:
        raise ValueError(f"{what}: fused epilogues ({', '.join(op.op for op in spec.epilogue)}) are not "
                         "supported on f64")
    if len(spec.inputs) != 2 or any(t.dtype != DType.f64 for t in (*spec.inputs, *spec.outputs)):
        raise ValueError(f"{what}: wants f64 A, B -> f64, got {list(spec.inputs)} -> {list(spec.outputs)}")
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    agree.emit(dk)
    a_ptr, b_ptr, out = dk.binding(0), dk.binding(1), dk.binding(2)
    a_off, b_off, out_off = _batch_offsets(dk, shape, dk.workgroup_id_index(2))
    k, n = dk.dim(shape.k), dk.dim(shape.n)
    row = dk.workgroup_id_index(1)
    a_row = b.add(a_off, b.mul(row, k))
    out_row = b.add(out_off, b.mul(row, n))
    acc = entry_alloca(b, F64)
    with for_range(b, 0, n, name="n") as col:
        b.store(const(0.0, F64), acc)
        with for_range(b, 0, k, name="k") as j:
            x = load_typed(b, DType.f64, a_ptr, b.add(a_row, j))
            y = load_typed(b, DType.f64, b_ptr, b.add(b.add(b_off, b.mul(j, n)), col))
            b.store(b.fadd(b.load(acc), b.fmul(x, y)), acc)
        store_typed(b, DType.f64, b.load(acc), out, b.add(out_row, col))
    dk.finish()
    return dk.info(workgroup_count=(1, shape.m, shape.batch_count))
