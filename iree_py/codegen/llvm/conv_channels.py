"""conv2d vectorized over OUTPUT CHANNELS, for every conv with a vector of output channels per group
and a few input channels per group (conv.choose_conv_strategy). The weight comes pre-packed "m_blocked"
(weight_packing.py): W'[g * MB, KH, KW, C/g, V], so one vector load is one weight tap for V
consecutive output channels.

N, H and W (so OH and OW) are ints or Exprs, as in conv.py: an int folds to a constant, an Expr is
computed from the push constants. The tile is chosen for the known row length, or for rows of
SYMBOLIC_EXTENT pixels when it is symbolic.

Structure:
  grid      x = chunks of output rows (only as many as needed to give the grid about
            MIN_WORKGROUPS workgroups), y = channel blocks (group-major; a block is `vectors`
            channel vectors of V lanes), z = batch image.
  tile      `vectors` channel vectors × a rectangle of rows × cols output pixels, one
            accumulator vector per (vector, pixel). Loops: kernel row ky, kernel column kx, then
            the input channel c innermost: broadcast each pixel's x[c, iy, ix], load each weight
            vector, FMA. The packed weight makes the c loop read consecutive vectors.
  padding   tiles never mix pixels with different valid tap ranges, so the tap loops have one
            range per tile and no per-element checks: output columns are split into left border
            columns, interior columns (tiles of `cols`, then the remainder: one tile of its exact
            width for a known OW, tiles one column wide for a symbolic one) and right border
            columns (tiles one column wide); rows: the interior rows of a workgroup's range
            go in bands (`rows` rows for interior columns; for border columns as many as the
            registers allow), the border rows one by one with their own ky range. Tiles with
            too few accumulators to hide FMA latency (corners) keep several sets, one per c
            modulo the set count, summed at the end.
  channels  each group's output channels are padded to whole vectors in the packed weight (zero
            weights); a group's last block may have fewer vectors and a partial last vector,
            whose extra lanes are computed but never stored.
  store     NCHW: the lanes of a result vector are OH*OW apart, stored one by one (the cost is
            small next to the C/g·KH·KW FMAs behind each). Bias (input 2, when not an epilogue
            operand) is added before the epilogue; epilogue "channel" operands are vector loads,
            "full" operands gathers (epilogue.py, lane_stride).
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.conv_shape import ConvShape, valid_range
from iree_py.codegen.llvm.dims import Agreements, DynamicKernel, begin_dynamic_kernel, product
from iree_py.codegen.llvm.epilogue import (TilePosition, apply_epilogue, carried_loop, check_epilogue,
                                           fma, i64, if_else, imax, imin, load_tile, narrow_tile,
                                           scatter_tile, simple_loop, splat, zero)
from iree_py.ir.symbols import Expr, call, dim
from iree_py.ir.types import Dim
from iree_py.targets import Target

MAX_VECTORS = 4      # channel vectors per tile
MIN_WORKGROUPS = 8   # split rows across workgroups only until the grid has about this many
MIN_FMA_CHAINS = 8   # independent accumulators that hide FMA latency (2 FMAs per cycle × latency 4)
SYMBOLIC_EXTENT = 32  # the interior rows/columns a tile is chosen for when their count is symbolic


@dataclass(frozen=True)
class ChannelTiling:
    """Register tile: `vectors` channel vectors of `lanes` × `rows` × `cols` output pixels."""

    lanes: int
    vectors: int
    rows: int
    cols: int


def _pieces(total: int, size: int) -> list[int]:
    """`total` split into pieces of `size` and one smaller remainder."""
    return [size] * (total // size) + ([total % size] if total % size else [])


def _tile_cycles(vectors: int, pixels: int) -> float:
    """Estimated cycles of one c-loop iteration of a tile: 2 FMAs and 2 loads per cycle, and each
    accumulator's FMA chain waits for the previous FMA (latency 4)."""
    return max(vectors * pixels / 2, (vectors + pixels) / 2, 4.0)


def accumulator_budget(target: Target) -> int:
    """Accumulator vectors per tile: 3/4 of the vector registers (16 → 12, 32 → 24)."""
    return max(1, target.vector_registers * 3 // 4)


def channel_tiling(s: ConvShape, lanes: int, target: Target) -> ChannelTiling:
    """The tile that minimizes the estimated cycles over the interior of the output, with the
    accumulators within 3/4 of the target's vector registers and room left for the weight vectors
    and one broadcast; ties go to fewer loads per FMA, then to fewer rows (pixels of one row
    are adjacent in memory)."""
    budget = accumulator_budget(target)
    vectors_total = -(-s.mg // lanes)
    cols, rows = (_known_extent(*s.interior_columns()), _known_extent(*s.interior_rows()))
    best: tuple[float, float, int, ChannelTiling] | None = None
    for r in range(1, min(MAX_VECTORS, vectors_total, budget) + 1):
        for tw in range(1, min(cols, budget // r) + 1):
            for th in range(1, min(rows, budget // (r * tw)) + 1):
                if r * tw * th + r + 1 > target.vector_registers:
                    continue
                row_pieces = [th] * (rows // th) + [1] * (rows % th)  # leftover rows go one by one
                cycles = sum(_tile_cycles(rv, pw * ph) for rv in _pieces(vectors_total, r)
                             for pw in _pieces(cols, tw) for ph in row_pieces)
                loads = 1 / r + 1 / (tw * th)
                key = (cycles, loads, th, ChannelTiling(lanes, r, th, tw))
                if best is None or key[:3] < best[:3]:
                    best = key
    assert best is not None  # r = tw = th = 1 always fits
    return best[3]


def _known_extent(lo: Dim, hi: Dim) -> int:
    """hi - lo (at least 1) when both are known, else SYMBOLIC_EXTENT."""
    return max(1, hi - lo) if isinstance(lo, int) and isinstance(hi, int) else SYMBOLIC_EXTENT


@dataclass(frozen=True)
class _ColumnPiece:
    start: Dim
    stop: Dim       # start + width * (number of tiles)
    width: int      # columns per tile
    interior: bool  # every column reads inside the image: kx range is [0, KW)
    rows: int       # rows per tile where the rows are interior (others go one by one)


def _column_pieces(s: ConvShape, tiling: ChannelTiling, accumulators: int) -> list[_ColumnPiece]:
    """Interior columns in tiles of tiling.cols, then the remainder (one tile of its width when OW
    is known, tiles one column wide when not); each border column is a tile one column wide and,
    over interior rows, as many rows tall as the registers allow."""
    lo, hi = s.interior_columns()
    rlo, rhi = s.interior_rows()
    interior_rows = rhi - rlo if isinstance(rlo, int) and isinstance(rhi, int) else accumulators

    def rows_for(width: int) -> int:
        return max(1, min(interior_rows, accumulators // (tiling.vectors * width)))

    if not (isinstance(lo, int) and isinstance(hi, int) and isinstance(s.ow, int)):
        full_end = dim(Expr.of(lo) + call("floordiv", Expr.of(hi) - lo, tiling.cols) * tiling.cols)
        return [_ColumnPiece(0, lo, 1, False, rows_for(1)),
                _ColumnPiece(lo, full_end, tiling.cols, True, tiling.rows),
                _ColumnPiece(full_end, hi, 1, True, rows_for(1)),
                _ColumnPiece(hi, s.ow, 1, False, rows_for(1))]
    pieces = [_ColumnPiece(0, lo, 1, False, rows_for(1))] if lo > 0 else []
    if hi > lo:
        width = min(tiling.cols, hi - lo)
        full_end = lo + (hi - lo) // width * width
        pieces.append(_ColumnPiece(lo, full_end, width, True, tiling.rows))
        if hi > full_end:
            pieces.append(_ColumnPiece(full_end, hi, hi - full_end, True, rows_for(hi - full_end)))
    if s.ow > hi:
        pieces.append(_ColumnPiece(hi, s.ow, 1, False, rows_for(1)))
    return pieces


def _scaled(b: ir.IRBuilder, size: int | ir.Value, k: int) -> ir.Value:
    """size * k as an i64: a constant for a known size."""
    return i64(size * k) if isinstance(size, int) else b.mul(size, i64(k))


@dataclass(frozen=True)
class _Sizes:
    """The spatial sizes the loops read: Python ints when known, i64 values when symbolic."""

    h: int | ir.Value
    w: int | ir.Value
    ow: int | ir.Value
    in_plane: int | ir.Value   # H * W
    out_plane: int | ir.Value  # OH * OW
    rlo: ir.Value              # interior rows [rlo, rhi)
    rhi: ir.Value


@dataclass
class _Block:
    """Everything fixed while one channel block is computed."""

    spec: KernelSpec
    s: ConvShape
    sizes: _Sizes
    inputs: list[ir.Value]
    out: ir.Value
    x_image: ir.Value    # element offset of this image's first input channel of the group
    out_image: ir.Value  # element offset of this image's output channel 0
    channel: ir.Value    # first output channel of the block
    w_vector: ir.Value   # index of the block's first weight vector (axis 0 of W')
    lanes: tuple[int, ...]  # valid lanes of each channel vector of the block
    accumulators: int       # how many accumulator vectors a tile may keep in registers


def _emit_tile(b: ir.IRBuilder, blk: _Block, oy: ir.Value, rows: int, ox: ir.Value, cols: int,
               ky_range: tuple[ir.Value, ir.Value], kx_range: tuple[ir.Value, ir.Value]) -> None:
    """Output channels of the block × pixels rows [oy, oy + rows) × columns [ox, ox + cols)."""
    s, z = blk.s, blk.sizes
    v = s.weight_lanes
    vectors = len(blk.lanes)
    pixels = [(r, q) for r in range(rows) for q in range(cols)]
    x_offsets = [b.add(_scaled(b, z.w, r * s.sh), i64(q * s.sw)) if r else i64(q * s.sw) for r, q in pixels]
    x_tile = b.add(blk.x_image, b.add(b.mul(b.sub(b.mul(oy, i64(s.sh)), i64(s.pt)), _scaled(b, z.w, 1)),
                                      b.sub(b.mul(ox, i64(s.sw)), i64(s.pl))))
    vector_size = s.kh * s.kw * s.cg * v
    w_vectors = [b.mul(b.add(blk.w_vector, i64(i)), i64(vector_size)) for i in range(vectors)]

    count = vectors * len(pixels)
    # Small tiles (border columns) keep `splits` sets of accumulators, one per c modulo splits, so
    # enough independent FMA chains are in flight; the sets are summed at the end.
    splits = max(1, min(-(-MIN_FMA_CHAINS // count), s.cg, max(1, blk.accumulators // count)))

    def c_step(x_tap: ir.Value, w_tap: ir.Value, c: ir.Value, accs: list[ir.Value], split: int
               ) -> list[ir.Value]:
        x_c = b.add(x_tap, b.mul(c, _scaled(b, z.in_plane, 1)))
        w_c = b.add(w_tap, b.mul(c, i64(v)))
        weights = [load_tile(b, blk.inputs[1], b.add(w_vectors[i], w_c), v) for i in range(vectors)]
        accs = list(accs)
        for p, offset in enumerate(x_offsets):
            x = splat(b, load_tile(b, blk.inputs[0], b.add(x_c, offset), 1), v)
            for i in range(vectors):
                k = split * count + i * len(pixels) + p
                accs[k] = fma(b, weights[i], x, accs[k])
        return accs

    def c_steps(x_tap: ir.Value, w_tap: ir.Value, c: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        for split in range(splits):
            accs = c_step(x_tap, w_tap, b.add(c, i64(split)), accs, split)
        return accs

    def kx_step(ky: ir.Value, kx: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        x_tap = b.add(x_tile, b.add(b.mul(ky, _scaled(b, z.w, s.dh)), b.mul(kx, i64(s.dw))))
        w_tap = b.mul(b.add(b.mul(ky, i64(s.kw)), kx), i64(s.cg * v))
        c_main = s.cg - s.cg % splits
        accs = carried_loop(b, i64(0), i64(c_main), splits, accs,
                            lambda c, a: c_steps(x_tap, w_tap, c, a), "c")
        if c_main < s.cg:
            accs = carried_loop(b, i64(c_main), i64(s.cg), 1, accs,
                                lambda c, a: c_step(x_tap, w_tap, c, a, 0), "ctail")
        return accs

    def ky_step(ky: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        return carried_loop(b, kx_range[0], kx_range[1], 1, accs, lambda kx, a: kx_step(ky, kx, a), "kx")

    initial = [zero(v) for _ in range(splits * count)]
    accs = carried_loop(b, ky_range[0], ky_range[1], 1, initial, ky_step, "ky")
    for split in range(1, splits):
        accs[:count] = [b.fadd(a, accs[split * count + k]) for k, a in enumerate(accs[:count])]
    plane = z.out_plane
    for i, valid in enumerate(blk.lanes):
        channel = b.add(blk.channel, i64(i * v))
        for p, (r, q) in enumerate(pixels):
            value = narrow_tile(b, accs[i * len(pixels) + p], valid)
            if s.has_bias:
                value = b.fadd(value, load_tile(b, blk.inputs[2], channel, valid))
            pixel = b.add(b.mul(b.add(oy, i64(r)), _scaled(b, z.ow, 1)), b.add(ox, i64(q)))
            flat = b.add(b.add(blk.out_image, b.mul(channel, _scaled(b, plane, 1))), pixel)
            value = apply_epilogue(b, blk.spec.epilogue, value, blk.inputs,
                                   TilePosition(flat, channel, channel_along_lanes=True, lane_stride=plane))
            scatter_tile(b, value, blk.out, flat, plane)


def _emit_piece_rows(b: ir.IRBuilder, blk: _Block, piece: _ColumnPiece, columns: tuple[ir.Value, ir.Value],
                     oy: ir.Value, rows: int) -> None:
    """The piece's tiles, over its columns [start, stop), for output rows [oy, oy + rows); rows > 1
    only for interior rows."""
    piece_start, piece_stop = columns
    s, z = blk.s, blk.sizes
    if rows > 1:
        ky_range = (i64(0), i64(s.kh))
    else:
        ky_range = valid_range(b, b.sub(b.mul(oy, i64(s.sh)), i64(s.pt)), s.kh, z.h, s.dh)

    def tile(ox: ir.Value) -> None:
        if piece.interior:
            kx_range = (i64(0), i64(s.kw))
        else:
            kx_range = valid_range(b, b.sub(b.mul(ox, i64(s.sw)), i64(s.pl)), s.kw, z.w, s.dw)
        _emit_tile(b, blk, oy, rows, ox, piece.width, ky_range, kx_range)

    simple_loop(b, piece_start, piece_stop, piece.width, tile, "ox")


def _emit_piece(b: ir.IRBuilder, blk: _Block, piece: _ColumnPiece, columns: tuple[ir.Value, ir.Value],
                oy_begin: ir.Value, oy_end: ir.Value) -> None:
    """The piece's tiles for rows [oy_begin, oy_end): the interior rows among them in bands of
    piece.rows, every other row on its own."""
    def one_row(oy: ir.Value) -> None:
        _emit_piece_rows(b, blk, piece, columns, oy, 1)

    th = piece.rows
    if th == 1:
        simple_loop(b, oy_begin, oy_end, 1, one_row, "oy")
        return
    mid_lo = imin(b, imax(b, oy_begin, blk.sizes.rlo), oy_end)
    mid_hi = imax(b, imin(b, oy_end, blk.sizes.rhi), mid_lo)
    bands_end = b.add(mid_lo, b.mul(b.sdiv(b.sub(mid_hi, mid_lo), i64(th)), i64(th)))
    simple_loop(b, oy_begin, mid_lo, 1, one_row, "oytop")
    simple_loop(b, mid_lo, bands_end, th, lambda oy: _emit_piece_rows(b, blk, piece, columns, oy, th), "band")
    simple_loop(b, bands_end, oy_end, 1, one_row, "oyrest")


def _grid(s: ConvShape, tiling: ChannelTiling, channel_blocks: int) -> tuple[Dim, Dim]:
    """(rows per workgroup, workgroups along x): only as many row chunks as give the grid about
    MIN_WORKGROUPS workgroups, each a whole number of tile rows (the max(1, ...) keep an empty
    batch or image from dividing by zero). The chunks start at the first interior row (the first
    one also takes the border rows above it, `_row_range`), so each chunk's interior rows are
    whole bands: chunks from row 0 left an interior row alone at each chunk's start when the top
    padding is 1 (on 8 rows of bands of 2: rows 1 and 6 in tiles of half the pixels)."""
    rlo = s.interior_rows()[0]
    body = dim(Expr.of(s.oh) - rlo)  # rows from the first interior one on
    row_chunks = call("max", 1, call("min", call("ceildiv", body, tiling.rows),
                                     call("max", 1, call("ceildiv", MIN_WORKGROUPS,
                                                         call("max", 1, product((channel_blocks, s.n)))))))
    block_rows = dim(call("max", 1, call("ceildiv", call("ceildiv", body, row_chunks), tiling.rows) * tiling.rows))
    return block_rows, _grid_rows(s, block_rows)


def _row_range(b: ir.IRBuilder, dk: DynamicKernel, s: ConvShape, block_rows: Dim) -> tuple[ir.Value, ir.Value]:
    """[oy_begin, oy_end) of this workgroup (x): chunk k is rows [rlo + k * block_rows,
    rlo + (k + 1) * block_rows), the first from row 0, the last to OH."""
    rlo = dk.dim(s.interior_rows()[0])
    chunk, rows = dk.workgroup_id_index(0), dk.dim(block_rows)
    start = b.add(rlo, b.mul(chunk, rows))
    oy_begin = b.select(b.icmp_signed("==", chunk, i64(0)), i64(0), start)
    last = b.icmp_signed("==", b.add(chunk, i64(1)), dk.dim(_grid_rows(s, block_rows)))
    oy_end = b.select(last, dk.dim(s.oh), imin(b, b.add(start, rows), dk.dim(s.oh)))
    return oy_begin, oy_end


def _grid_rows(s: ConvShape, block_rows: Dim) -> Dim:
    """The workgroups along x for chunks of block_rows rows from the first interior row: at least
    one when there are rows at all (every row may be a border row)."""
    body = dim(Expr.of(s.oh) - s.interior_rows()[0])
    return dim(call("max", call("ceildiv", body, block_rows), call("min", s.oh, 1)))


def _sizes(dk: DynamicKernel, s: ConvShape) -> _Sizes:
    rlo, rhi = s.interior_rows()
    return _Sizes(dk.index(s.h), dk.index(s.w), dk.index(s.ow), dk.index(product((s.h, s.w))),
                  dk.index(product((s.oh, s.ow))), dk.dim(rlo), dk.dim(rhi))


def build_channel_vectors(spec: KernelSpec, s: ConvShape, agree: Agreements, module: ir.Module,
                          target: Target) -> KernelInfo:
    """The kernel for a conv2d spec whose weight is packed "m_blocked" (s.weight_lanes = V); the
    dims `agree` holds are checked before anything is read."""
    if s.weight_lanes < 1:
        raise ValueError(f"conv2d {spec.name}: the channel-vector path needs an m_blocked packed weight")
    check_epilogue(spec.epilogue, len(spec.inputs), spec.name)
    v = s.weight_lanes
    tiling = channel_tiling(s, v, target)
    r = tiling.vectors
    full_vectors, partial = divmod(s.mg, v)
    full_blocks = full_vectors // r
    rem_lanes = (v,) * (full_vectors % r) + ((partial,) if partial else ())
    blocks_per_group = full_blocks + (1 if rem_lanes else 0)
    vectors_per_group = -(-s.mg // v)
    channel_blocks = s.group * blocks_per_group
    block_rows, row_workgroups = _grid(s, tiling, channel_blocks)
    pieces = _column_pieces(s, tiling, accumulator_budget(target))

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    agree.emit(dk)
    sizes = _sizes(dk, s)
    columns = [(dk.dim(p.start), dk.dim(p.stop)) for p in pieces]
    inputs = [dk.binding(i) for i in range(len(spec.inputs))]
    out = dk.binding(len(spec.inputs))
    image = dk.workgroup_id_index(2)
    block = dk.workgroup_id_index(1)
    group = b.udiv(block, i64(blocks_per_group))
    in_group = b.urem(block, i64(blocks_per_group))
    oy_begin, oy_end = _row_range(b, dk, s, block_rows)
    x_image = b.mul(b.add(b.mul(image, i64(s.c)), b.mul(group, i64(s.cg))), _scaled(b, sizes.in_plane, 1))
    out_image = b.mul(image, _scaled(b, sizes.out_plane, s.m))
    channel = b.add(b.mul(group, i64(s.mg)), b.mul(in_group, i64(r * v)))
    w_vector = b.add(b.mul(group, i64(vectors_per_group)), b.mul(in_group, i64(r)))

    def emit(lanes: tuple[int, ...]) -> None:
        blk = _Block(spec, s, sizes, inputs, out, x_image, out_image, channel, w_vector, lanes,
                     accumulator_budget(target))
        for piece, span in zip(pieces, columns):
            _emit_piece(b, blk, piece, span, oy_begin, oy_end)

    if not rem_lanes:
        emit((v,) * r)
    elif full_blocks == 0:
        emit(rem_lanes)
    else:
        if_else(b, b.icmp_unsigned("<", in_group, i64(full_blocks)),
                lambda: emit((v,) * r), lambda: emit(rem_lanes))
    dk.finish()
    return dk.info(workgroup_count=(row_workgroups, channel_blocks, s.n))
