"""The "conv2d" kernel: Y[N,M,OH,OW] = X[N,C,H,W] * W[M,C/group,KH,KW] (+ B[M]), NCHW, register-blocked.
N, H and W (so OH and OW) are ints or Exprs (docs/dynamic_shapes.md §3): an int folds to a
constant, an Expr is computed from the push constants; the channels, the kernel, strides, pads,
dilations and group are static ints.

Structure:
  grid      x = blocks of output rows, y = runs of consecutive (group, block of output channels),
            z = batch image; blocks are sized to about WORK_PER_WORKGROUP FMAs (with a symbolic
            OW, from its run-time value), so small convs (depthwise) get few, larger workgroups.
  1×1       a stride-1 unpadded 1×1 conv sees each image as one row of H·W pixels (it is a matmul
            over pixels), so tiles never stop at row ends and there are no border columns.
  tile      up to conv_tiling().channels output channels (from the target's vector registers:
            4 for 16 registers, 8 for 32) × a few vectors of consecutive output columns
            (ox), one accumulator vector each. For every input channel c and kernel row ky, and
            each kernel column kx (unrolled), load the input vectors once (stride > 1: one load of
            the exact span, then a shuffle), broadcast each channel's weight and FMA.
  padding   rows: the valid kernel-row range [ky_lo, ky_hi) is computed once per output row, so
            the hot loop has no bounds checks. Columns: output columns whose whole receptive
            field lies inside the image ("interior", known at build time for a static W, computed
            at the kernel's entry for a symbolic one) use vector tiles; the few border columns use
            a scalar path whose valid kx range is computed per column (_Columns).
  tails     interior widths that are not a multiple of the tile: a static W uses narrower vectors
            down to the exact remainder, a symbolic one as many vectors as the remainder needs,
            the last masked. The last channel tile of a group may have fewer channels.
  bias      input 2, when present and not an epilogue operand, initializes the accumulators.
  epilogue  applied to each accumulator before its store (epilogue.py); "channel" operands are
            indexed by the output channel.
Depthwise convs (C/group == 1, M/group == 1) fall out of the same code with one channel per tile
and wider column tiles. A dim that is 0 at run time empties the grid or every loop: nothing is
read or written.

Convs with a vector of output channels per group and a few input channels per group to sum over
(every conv of a CNN but the first layer and depthwise ones) go to conv_channels.py instead, which
vectorizes over output channels and needs the weight packed (weight_packing.py); the compiler packs
it when that path is chosen and the spec then says attrs["weight_layout"] == "m_blocked". build()
hands such specs over. On the zoo models that path runs 3x3 convs at 80-90% of this core's peak FMA
rate at every row length, where the columns path reached 45% on 28-wide rows and 65% on 56-wide
ones (benchmarks/kernels/fraction_of_peak.py). The choice does not depend on whether the spatial
dims are known: both paths take symbolic ones.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import as_index, lanes_f32
from iree_py.codegen.llvm.conv_channels import build_channel_vectors
from iree_py.codegen.llvm.conv_shape import ConvShape, conv_shape, pointwise_as_one_row, valid_range
from iree_py.codegen.llvm.dims import Agreements, DynamicKernel, begin_dynamic_kernel, product
from iree_py.codegen.llvm.epilogue import (TilePosition, apply_epilogue, carried_loop,
                                           check_epilogue, fma, i64, if_then, imin,
                                           load_strided_tile, load_tile, simple_loop, splat,
                                           store_tile, zero)
from iree_py.codegen.llvm.matmul import vector_widths
from iree_py.ir.symbols import Expr, call, dim
from iree_py.targets import Target

MAX_VECTORS_PER_TILE = 4
CHANNEL_BLOCK_TILES = 4      # a workgroup covers up to 4 channel tiles ...
WORK_PER_WORKGROUP = 1 << 20  # ... and enough whole rows (and channel blocks) for about this many FMAs


@dataclass(frozen=True)
class ConvTiling:
    """Register tile of up to `channels` output channels × vectors of `lanes` columns, with
    `accumulators` (channels × vectors) at most, sized to the target's vector registers: 3/4 of
    them hold accumulators, the rest the input vectors and a weight broadcast."""

    channels: int
    accumulators: int
    lanes: int


def conv_tiling(target: Target) -> ConvTiling:
    accumulators = target.vector_registers * 3 // 4      # 16 registers → 12, 32 → 24
    return ConvTiling(max(1, accumulators // 3), accumulators, lanes_f32(target))


def _tile_vectors(tiling: ConvTiling, channels: int) -> int:
    """Column vectors per tile of `channels` output channels."""
    return max(1, min(MAX_VECTORS_PER_TILE, tiling.accumulators // channels))


@dataclass(frozen=True)
class _Plane:
    """H, W, OH, OW as the loops see them (a pointwise conv: one row of H·W pixels): ints when
    known, else i64 values computed at the kernel's entry."""

    h: int | ir.Value
    w: int | ir.Value
    oh: int | ir.Value
    ow: int | ir.Value


@dataclass(frozen=True)
class _Columns:
    """How a row's output columns are covered, for tiles of `tile_cols` columns: the interior
    [lo, hi) by whole tiles up to full_end, then the remainder in one tile; the border columns
    [0, lo) and [hi, OW) one by one (scalar). A known W (ints): the remainder tile has the exact
    remainder's vector widths (tail None). A run-time W (i64 values computed at the kernel's
    entry): `tail` = hi - full_end columns, as many vectors as they need, the last masked.
    (Masked "edge" tiles over the borders, tried before, kept their per-column masks live across
    the tap loops and spilled: on a stride-2 first layer they made the symbolic conv 1.56x the
    static one, against 1.19x this way.)"""

    lo: int | ir.Value
    hi: int | ir.Value
    full_end: int | ir.Value
    tail: ir.Value | None


def _columns(dk: DynamicKernel, s: ConvShape, tile_cols: int) -> _Columns:
    lo, hi = s.interior_columns()
    if isinstance(lo, int) and isinstance(hi, int):
        full_end = lo + (hi - lo) // tile_cols * tile_cols
        return _Columns(lo, hi, full_end, None)
    full_end = dim(lo + call("floordiv", Expr.of(hi) - lo, tile_cols) * tile_cols)
    return _Columns(dk.dim(lo), dk.dim(hi), dk.dim(full_end), dk.dim(dim(Expr.of(hi) - full_end)))


@dataclass
class _Row:
    """Everything fixed while one output row of one channel range is computed."""

    plane: _Plane
    x: ir.Value
    wt: ir.Value
    out: ir.Value
    inputs: list[ir.Value]
    x_image: ir.Value     # element offset of this image's first input channel of the group
    out_image: ir.Value   # element offset of this image's output channel 0
    oy: ir.Value
    iy0: ir.Value         # oy * sh - pt
    ky_lo: ir.Value
    ky_hi: ir.Value


def _initial(b: ir.IRBuilder, s: ConvShape, row: _Row, channel: ir.Value, width: int) -> ir.Value:
    if not s.has_bias:
        return zero(width)
    return splat(b, load_tile(b, row.inputs[2], channel, 1), width)


def _store(b: ir.IRBuilder, spec: KernelSpec, row: _Row, channel: ir.Value, ox: ir.Value, value: ir.Value,
           valid: ir.Value | None = None) -> None:
    p = row.plane
    flat = b.add(b.add(row.out_image, b.mul(b.add(b.mul(channel, as_index(p.oh)), row.oy), as_index(p.ow))), ox)
    value = apply_epilogue(b, spec.epilogue, value, row.inputs,
                           TilePosition(flat, channel, channel_along_lanes=False, valid=valid))
    store_tile(b, value, row.out, flat, valid)


def _x_row(b: ir.IRBuilder, s: ConvShape, row: _Row, c: ir.Value, ky: ir.Value, ix0: ir.Value) -> ir.Value:
    """Element offset of input channel c, row iy0 + ky * dh, column ix0."""
    iy = b.add(row.iy0, b.mul(ky, i64(s.dh)))
    return b.add(b.add(row.x_image, b.mul(b.add(b.mul(c, as_index(row.plane.h)), iy), as_index(row.plane.w))), ix0)


def _weight_starts(b: ir.IRBuilder, s: ConvShape, row: _Row, m: ir.Value, channels: int
                   ) -> list[tuple[ir.Value, int]]:
    """Where the weights of output channels m + r start, as (base, constant offset). A known W
    keeps a base per channel, as the kernel always had; with a run-time W, LLVM keeps that many
    channel pointers live and the loops spill their accumulators, so one base and offsets."""
    size = s.cg * s.kh * s.kw
    if isinstance(row.plane.w, int):
        return [(b.mul(b.add(m, i64(r)), i64(size)), 0) for r in range(channels)]
    first = b.mul(m, i64(size))
    return [(first, r * size) for r in range(channels)]


def _emit_tile(b: ir.IRBuilder, spec: KernelSpec, s: ConvShape, row: _Row, m: ir.Value,
               channels: int, ox: ir.Value, widths: tuple[int, ...], last_valid: ir.Value | None = None) -> None:
    """Tile: output channels [m, m + channels) × interior columns [ox, ox + sum(widths)). With
    `last_valid`, the last vector covers only its first `last_valid` columns (masked)."""
    offsets = [sum(widths[:j]) for j in range(len(widths))]
    valid = [None] * (len(widths) - 1) + [last_valid]
    taps = s.kh * s.kw
    w_channel = _weight_starts(b, s, row, m, channels)
    x_col = b.sub(b.mul(ox, i64(s.sw)), i64(s.pl))

    def ky_step(c: ir.Value, ky: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        x_row = _x_row(b, s, row, c, ky, x_col)
        w_tap = b.add(b.mul(c, i64(taps)), b.mul(ky, i64(s.kw)))
        accs = list(accs)
        for kx in range(s.kw):
            x_tap = b.add(x_row, i64(kx * s.dw))
            ins = [load_strided_tile(b, row.x, b.add(x_tap, i64(off * s.sw)), w, s.sw, v)
                   for off, w, v in zip(offsets, widths, valid)]
            for r in range(channels):
                base, offset = w_channel[r]
                weight = load_tile(b, row.wt, b.add(b.add(base, w_tap), i64(offset + kx)), 1)
                splats = {w: splat(b, weight, w) for w in set(widths)}
                for j, w in enumerate(widths):
                    k = r * len(widths) + j
                    accs[k] = fma(b, splats[w], ins[j], accs[k])
        return accs

    def c_step(c: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        return carried_loop(b, row.ky_lo, row.ky_hi, 1, accs,
                            lambda ky, a: ky_step(c, ky, a), "ky")

    initial = [_initial(b, s, row, b.add(m, i64(r)), w) for r in range(channels) for w in widths]
    accs = carried_loop(b, i64(0), i64(s.cg), 1, initial, c_step, "c")
    for r in range(channels):
        for j, off in enumerate(offsets):
            _store(b, spec, row, b.add(m, i64(r)), b.add(ox, i64(off)), accs[r * len(widths) + j], valid[j])


def _emit_border_column(b: ir.IRBuilder, spec: KernelSpec, s: ConvShape, row: _Row, m: ir.Value,
                        channels: int, ox: ir.Value) -> None:
    """One output column whose receptive field leaves the image: scalar, kx range per column."""
    ix0 = b.sub(b.mul(ox, i64(s.sw)), i64(s.pl))
    kx_lo, kx_hi = valid_range(b, ix0, s.kw, row.plane.w, s.dw)
    taps = s.kh * s.kw
    w_channel = _weight_starts(b, s, row, m, channels)

    def weight(r: int, w_tap: ir.Value, kx: ir.Value) -> ir.Value:
        base, offset = w_channel[r]
        index = b.add(b.add(base, w_tap), kx)
        return load_tile(b, row.wt, index if not offset else b.add(index, i64(offset)), 1)

    def kx_step(x_row: ir.Value, w_tap: ir.Value, kx: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        value = load_tile(b, row.x, b.add(x_row, b.mul(kx, i64(s.dw))), 1)
        return [fma(b, weight(r, w_tap, kx), value, accs[r]) for r in range(channels)]

    def ky_step(c: ir.Value, ky: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        x_row = _x_row(b, s, row, c, ky, ix0)
        w_tap = b.add(b.mul(c, i64(taps)), b.mul(ky, i64(s.kw)))
        return carried_loop(b, kx_lo, kx_hi, 1, accs, lambda kx, a: kx_step(x_row, w_tap, kx, a), "kx")

    def c_step(c: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        return carried_loop(b, row.ky_lo, row.ky_hi, 1, accs, lambda ky, a: ky_step(c, ky, a), "ky")

    initial = [_initial(b, s, row, b.add(m, i64(r)), 1) for r in range(channels)]
    accs = carried_loop(b, i64(0), i64(s.cg), 1, initial, c_step, "c")
    for r in range(channels):
        _store(b, spec, row, b.add(m, i64(r)), ox, accs[r])


def _emit_channel_row(b: ir.IRBuilder, spec: KernelSpec, s: ConvShape, row: _Row, m: ir.Value,
                      channels: int, tiling: ConvTiling, cols: _Columns) -> None:
    """Every output column of row `row.oy` for output channels [m, m + channels)."""
    lanes = tiling.lanes
    vectors = _tile_vectors(tiling, channels)
    tile_cols = vectors * lanes

    def tiles(ox: ir.Value) -> None:
        _emit_tile(b, spec, s, row, m, channels, ox, (lanes,) * vectors)

    def fewer_vectors(ox: ir.Value, columns: ir.Value) -> None:
        """A tile of `columns` (<= tile_cols) at ox, a run-time count: as many vectors as it
        needs, the last masked to the columns left."""
        needed = b.udiv(b.add(columns, i64(lanes - 1)), i64(lanes))
        for k in range(1, vectors + 1):
            last_valid = b.sub(columns, i64((k - 1) * lanes))
            if_then(b, b.icmp_unsigned("==", needed, i64(k)),
                    lambda k=k, last_valid=last_valid: _emit_tile(b, spec, s, row, m, channels, ox, (lanes,) * k,
                                                                  last_valid))

    def border(ox: ir.Value) -> None:
        _emit_border_column(b, spec, s, row, m, channels, ox)

    simple_loop(b, i64(0), as_index(cols.lo), 1, border, "left")
    simple_loop(b, as_index(cols.lo), as_index(cols.full_end), tile_cols, tiles, "ox")
    if cols.tail is None:
        if cols.hi > cols.full_end:
            _emit_tile(b, spec, s, row, m, channels, i64(cols.full_end),
                       vector_widths(cols.hi - cols.full_end, lanes))
    else:
        fewer_vectors(cols.full_end, cols.tail)
    simple_loop(b, as_index(cols.hi), as_index(row.plane.ow), 1, border, "right")


@dataclass(frozen=True)
class ConvStrategy:
    """How a conv2d is computed: "columns" (this file: vectors of output columns, the weight as
    is) or "channels" (conv_channels.py: vectors of `lanes` output channels, the weight packed
    m_blocked with V = lanes)."""

    path: str
    lanes: int


CHANNEL_PATH_MIN_INPUT_CHANNELS = 4  # below this (depthwise, tiny groups) columns win, unless:
CHANNEL_PATH_MIN_TAPS = 49  # a reduction per output (C/g * KH * KW) this long pays for the path's
                            # per-pixel channel stores even with 1-3 input channels


def choose_conv_strategy(s: ConvShape, target: Target) -> ConvStrategy:
    """The one place that picks the conv2d code path (the compiler packs weights accordingly).

    Channels when there are at least a vector of output channels per group and either a few input
    channels per group to sum over or a long reduction per output (a 7x7 first layer), whatever the
    row length; columns for the rest (3x3 first layers with 1-3 input channels, depthwise and small
    groups), known or symbolic spatial dims alike. Measured on one znver3 core (fresh processes,
    best of 15 medians): a 7x7 stride-2 3->64 conv at 224x224 took 7.7 ms by columns and 3.4 by
    channels, a 1->64 one at 128x128 1.13 vs 0.82; a 3x3 stride-1 1->32 one at 96x96 0.15 vs 0.74
    and a 3->32 one 0.42 vs 0.79 (the channel path stores each pixel's channels one by one, which
    a reduction of 9-27 taps does not pay for)."""
    lanes = lanes_f32(target)
    if s.mg >= lanes and (s.cg >= CHANNEL_PATH_MIN_INPUT_CHANNELS or s.cg * s.kh * s.kw >= CHANNEL_PATH_MIN_TAPS):
        return ConvStrategy("channels", lanes)
    return ConvStrategy("columns", lanes)


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    if spec.kind != "conv2d":
        raise ValueError(f"conv.build got kernel {spec.name} of kind {spec.kind!r}")
    agree = Agreements(f"conv2d kernel {spec.name}")
    s = pointwise_as_one_row(conv_shape(spec, agree))
    if s.weight_lanes:
        return build_channel_vectors(spec, s, agree, module, target)
    check_epilogue(spec.epilogue, len(spec.inputs), spec.name)
    tiling = conv_tiling(target)
    tile_channels = min(tiling.channels, s.mg)
    block_channels = tile_channels * CHANNEL_BLOCK_TILES
    blocks_per_group = -(-s.mg // block_channels)
    row_work = product((s.ow, min(block_channels, s.mg) * s.cg * s.kh * s.kw))
    block_rows = dim(call("max", 1, call("min", s.oh, call("ceildiv", WORK_PER_WORKGROUP, call("max", 1, row_work)))))
    # Small convs (depthwise): one workgroup also takes several consecutive channel blocks.
    channel_blocks = s.group * blocks_per_group
    block_work = call("max", 1, product((row_work, block_rows)))
    blocks_per_workgroup = dim(call("max", 1, call("min", channel_blocks,
                                                   call("floordiv", WORK_PER_WORKGROUP, block_work))))
    grid = (dim(call("ceildiv", s.oh, block_rows)), dim(call("ceildiv", channel_blocks, blocks_per_workgroup)), s.n)
    mg_full = s.mg - s.mg % tile_channels
    m_tail = s.mg - mg_full

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    agree.emit(dk)
    # Every size the loops read, computed here (constants for int dims).
    plane = _Plane(dk.index(s.h), dk.index(s.w), dk.index(s.oh), dk.index(s.ow))
    columns = {ch: _columns(dk, s, _tile_vectors(tiling, ch) * tiling.lanes)
               for ch in (tile_channels, m_tail) if ch}
    rows_per_block, blocks_per_wg = dk.dim(block_rows), dk.dim(blocks_per_workgroup)
    image_size, out_image_size = dk.dim(product((s.h, s.w))), dk.dim(product((s.m, s.oh, s.ow)))
    inputs = [dk.binding(i) for i in range(len(spec.inputs))]
    out = dk.binding(len(spec.inputs))
    image = dk.workgroup_id_index(2)
    first_block = b.mul(dk.workgroup_id_index(1), blocks_per_wg)
    end_block = imin(b, b.add(first_block, blocks_per_wg), i64(channel_blocks))
    out_image = b.mul(image, out_image_size)
    oy_begin = b.mul(dk.workgroup_id_index(0), rows_per_block)
    oy_end = imin(b, b.add(oy_begin, rows_per_block), as_index(plane.oh))

    def channel_block(block: ir.Value) -> None:
        group = b.udiv(block, i64(blocks_per_group))
        group_first = b.mul(group, i64(s.mg))
        m_begin = b.add(group_first, b.mul(b.urem(block, i64(blocks_per_group)), i64(block_channels)))
        m_block_end = b.add(m_begin, i64(block_channels))
        m_full_end = imin(b, m_block_end, b.add(group_first, i64(mg_full)))
        has_m_tail = b.icmp_signed(">", m_block_end, b.add(group_first, i64(mg_full)))
        x_image = b.mul(b.add(b.mul(image, i64(s.c)), b.mul(group, i64(s.cg))), image_size)

        def output_row(oy: ir.Value) -> None:
            iy0 = b.sub(b.mul(oy, i64(s.sh)), i64(s.pt))
            ky_lo, ky_hi = valid_range(b, iy0, s.kh, plane.h, s.dh)
            row = _Row(plane, inputs[0], inputs[1], out, inputs, x_image, out_image, oy, iy0, ky_lo, ky_hi)
            simple_loop(b, m_begin, m_full_end, tile_channels,
                        lambda m: _emit_channel_row(b, spec, s, row, m, tile_channels, tiling,
                                                    columns[tile_channels]), "m")
            if m_tail:
                if_then(b, has_m_tail,
                        lambda: _emit_channel_row(b, spec, s, row, b.add(group_first, i64(mg_full)),
                                                  m_tail, tiling, columns[m_tail]))

        simple_loop(b, oy_begin, oy_end, 1, output_row, "oy")

    simple_loop(b, first_block, end_block, 1, channel_block, "block")
    dk.finish()
    return dk.info(workgroup_count=grid)
