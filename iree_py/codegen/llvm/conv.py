"""The "conv2d" kernel: Y[N,M,OH,OW] = X[N,C,H,W] * W[M,C/group,KH,KW] (+ B[M]), NCHW, register-blocked.

Structure (all sizes static):
  grid      x = blocks of output rows, y = runs of consecutive (group, block of output channels),
            z = batch image; blocks are sized to about WORK_PER_WORKGROUP FMAs, so small convs
            (depthwise) get few, larger workgroups.
  1×1       a stride-1 unpadded 1×1 conv sees each image as one row of H·W pixels (it is a matmul
            over pixels), so tiles never stop at row ends and there are no border columns.
  tile      up to conv_tiling().channels output channels (from the target's vector registers:
            4 for 16 registers, 8 for 32) × a few vectors of consecutive output columns
            (ox), one accumulator vector each. For every input channel c and kernel row ky, and
            each kernel column kx (unrolled), load the input vectors once (stride > 1: one load of
            the exact span, then a shuffle), broadcast each channel's weight and FMA.
  padding   rows: the valid kernel-row range [ky_lo, ky_hi) is computed once per output row, so
            the hot loop has no bounds checks. Columns: output columns whose whole receptive field
            lies inside the image ("interior", known at build time) use vector tiles; the few border
            columns use a scalar path whose valid kx range is computed per column.
  tails     interior widths that are not a multiple of the tile use narrower vectors down to the
            exact remainder; the last channel tile of a group may have fewer channels.
  bias      input 2, when present and not an epilogue operand, initializes the accumulators.
  epilogue  applied to each accumulator before its store (epilogue.py); "channel" operands are
            indexed by the output channel.
Depthwise convs (C/group == 1, M/group == 1) fall out of the same code with one channel per tile
and wider column tiles.

Short output rows (late layers: 14×14, 7×7) rarely fill a column vector, so choose_conv_strategy
sends those convs to conv_channels.py instead, which vectorizes over output channels and needs the
weight packed (weight_packing.py); the compiler packs it when that path is chosen and the spec then
says attrs["weight_layout"] == "m_blocked". build() hands such specs over.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import begin_kernel, lanes_f32
from iree_py.codegen.llvm.conv_channels import build_channel_vectors
from iree_py.codegen.llvm.conv_shape import ConvShape, conv_shape, pointwise_as_one_row, valid_range
from iree_py.codegen.llvm.epilogue import (TilePosition, apply_epilogue, carried_loop,
                                           check_epilogue, fma, i64, if_then, imin,
                                           load_strided_tile, load_tile, simple_loop, splat,
                                           store_tile, zero)
from iree_py.codegen.llvm.matmul import vector_widths
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


@dataclass
class _Row:
    """Everything fixed while one output row of one channel range is computed."""

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


def _store(b: ir.IRBuilder, spec: KernelSpec, s: ConvShape, row: _Row, channel: ir.Value,
           ox: ir.Value, value: ir.Value) -> None:
    flat = b.add(b.add(row.out_image, b.mul(b.add(b.mul(channel, i64(s.oh)), row.oy), i64(s.ow))), ox)
    value = apply_epilogue(b, spec.epilogue, value, row.inputs,
                           TilePosition(flat, channel, channel_along_lanes=False))
    store_tile(b, value, row.out, flat)


def _emit_tile(b: ir.IRBuilder, spec: KernelSpec, s: ConvShape, row: _Row, m: ir.Value,
               channels: int, ox: ir.Value, widths: tuple[int, ...]) -> None:
    """Interior tile: output channels [m, m + channels) × columns [ox, ox + sum(widths))."""
    offsets = [sum(widths[:j]) for j in range(len(widths))]
    taps = s.kh * s.kw
    w_channel = [b.mul(b.add(m, i64(r)), i64(s.cg * taps)) for r in range(channels)]
    x_col = b.sub(b.mul(ox, i64(s.sw)), i64(s.pl))

    def ky_step(c: ir.Value, ky: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        iy = b.add(row.iy0, b.mul(ky, i64(s.dh)))
        x_row = b.add(b.add(row.x_image, b.mul(b.add(b.mul(c, i64(s.h)), iy), i64(s.w))), x_col)
        w_tap = b.add(b.mul(c, i64(taps)), b.mul(ky, i64(s.kw)))
        accs = list(accs)
        for kx in range(s.kw):
            x_tap = b.add(x_row, i64(kx * s.dw))
            ins = [load_strided_tile(b, row.x, b.add(x_tap, i64(off * s.sw)), w, s.sw)
                   for off, w in zip(offsets, widths)]
            for r in range(channels):
                weight = load_tile(b, row.wt, b.add(b.add(w_channel[r], w_tap), i64(kx)), 1)
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
            _store(b, spec, s, row, b.add(m, i64(r)), b.add(ox, i64(off)), accs[r * len(widths) + j])


def _emit_border_column(b: ir.IRBuilder, spec: KernelSpec, s: ConvShape, row: _Row, m: ir.Value,
                        channels: int, ox: ir.Value) -> None:
    """One output column whose receptive field leaves the image: scalar, kx range per column."""
    ix0 = b.sub(b.mul(ox, i64(s.sw)), i64(s.pl))
    kx_lo, kx_hi = valid_range(b, ix0, s.kw, s.w, s.dw)
    taps = s.kh * s.kw
    w_channel = [b.mul(b.add(m, i64(r)), i64(s.cg * taps)) for r in range(channels)]

    def kx_step(x_row: ir.Value, w_tap: ir.Value, kx: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        value = load_tile(b, row.x, b.add(x_row, b.mul(kx, i64(s.dw))), 1)
        return [fma(b, load_tile(b, row.wt, b.add(b.add(w_channel[r], w_tap), kx), 1), value, accs[r])
                for r in range(channels)]

    def ky_step(c: ir.Value, ky: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        iy = b.add(row.iy0, b.mul(ky, i64(s.dh)))
        x_row = b.add(b.add(row.x_image, b.mul(b.add(b.mul(c, i64(s.h)), iy), i64(s.w))), ix0)
        w_tap = b.add(b.mul(c, i64(taps)), b.mul(ky, i64(s.kw)))
        return carried_loop(b, kx_lo, kx_hi, 1, accs, lambda kx, a: kx_step(x_row, w_tap, kx, a), "kx")

    def c_step(c: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        return carried_loop(b, row.ky_lo, row.ky_hi, 1, accs, lambda ky, a: ky_step(c, ky, a), "ky")

    initial = [_initial(b, s, row, b.add(m, i64(r)), 1) for r in range(channels)]
    accs = carried_loop(b, i64(0), i64(s.cg), 1, initial, c_step, "c")
    for r in range(channels):
        _store(b, spec, s, row, b.add(m, i64(r)), ox, accs[r])


def _emit_channel_row(b: ir.IRBuilder, spec: KernelSpec, s: ConvShape, row: _Row, m: ir.Value,
                      channels: int, tiling: ConvTiling) -> None:
    """Every output column of row `row.oy` for output channels [m, m + channels)."""
    lanes = tiling.lanes
    vectors = max(1, min(MAX_VECTORS_PER_TILE, tiling.accumulators // channels))
    tile_cols = vectors * lanes
    lo, hi = s.interior_columns()
    full_end = lo + (hi - lo) // tile_cols * tile_cols

    def border(ox: ir.Value) -> None:
        _emit_border_column(b, spec, s, row, m, channels, ox)

    simple_loop(b, i64(0), i64(lo), 1, border, "left")
    simple_loop(b, i64(lo), i64(full_end), tile_cols,
                lambda ox: _emit_tile(b, spec, s, row, m, channels, ox, (lanes,) * vectors), "ox")
    if hi > full_end:
        _emit_tile(b, spec, s, row, m, channels, i64(full_end), vector_widths(hi - full_end, lanes))
    simple_loop(b, i64(hi), i64(s.ow), 1, border, "right")


@dataclass(frozen=True)
class ConvStrategy:
    """How a conv2d is computed: "columns" (this file: vectors of output columns, the weight as
    is) or "channels" (conv_channels.py: vectors of `lanes` output channels, the weight packed
    m_blocked with V = lanes)."""

    path: str
    lanes: int


CHANNEL_PATH_MIN_INPUT_CHANNELS = 4  # below this (depthwise, tiny groups) columns win anyway


def choose_conv_strategy(s: ConvShape, target: Target) -> ConvStrategy:
    """The one place that picks the conv2d code path (the compiler packs weights accordingly).

    Channels when output rows are too short for column vectors to fill (OW < 2 vectors, after a
    pointwise conv is seen as one long row) and there are at least a vector of output channels
    per group and a few input channels per group to sum over."""
    lanes = lanes_f32(target)
    row = pointwise_as_one_row(s)
    if row.ow < 2 * lanes and s.mg >= lanes and s.cg >= CHANNEL_PATH_MIN_INPUT_CHANNELS:
        return ConvStrategy("channels", lanes)
    return ConvStrategy("columns", lanes)


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    if spec.kind != "conv2d":
        raise ValueError(f"conv.build got kernel {spec.name} of kind {spec.kind!r}")
    s = pointwise_as_one_row(conv_shape(spec))
    if s.weight_lanes:
        return build_channel_vectors(spec, s, module, target)
    check_epilogue(spec.epilogue, len(spec.inputs), spec.name)
    tiling = conv_tiling(target)
    tile_channels = min(tiling.channels, s.mg)
    block_channels = tile_channels * CHANNEL_BLOCK_TILES
    blocks_per_group = -(-s.mg // block_channels)
    row_work = s.ow * min(block_channels, s.mg) * s.cg * s.kh * s.kw
    block_rows = max(1, min(s.oh, -(-WORK_PER_WORKGROUP // row_work)))
    # Small convs (depthwise): one workgroup also takes several consecutive channel blocks.
    channel_blocks = s.group * blocks_per_group
    blocks_per_workgroup = max(1, min(channel_blocks, WORK_PER_WORKGROUP // (row_work * block_rows)))
    grid = (-(-s.oh // block_rows), -(-channel_blocks // blocks_per_workgroup), s.n)

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    inputs = [kb.binding(i) for i in range(len(spec.inputs))]
    out = kb.binding(len(spec.inputs))
    image = kb.workgroup_id_index(2)
    first_block = b.mul(kb.workgroup_id_index(1), i64(blocks_per_workgroup))
    end_block = imin(b, b.add(first_block, i64(blocks_per_workgroup)), i64(channel_blocks))
    out_image = b.mul(image, i64(s.m * s.oh * s.ow))
    oy_begin = b.mul(kb.workgroup_id_index(0), i64(block_rows))
    oy_end = imin(b, b.add(oy_begin, i64(block_rows)), i64(s.oh))
    mg_full = s.mg - s.mg % tile_channels
    m_tail = s.mg - mg_full

    def channel_block(block: ir.Value) -> None:
        group = b.udiv(block, i64(blocks_per_group))
        group_first = b.mul(group, i64(s.mg))
        m_begin = b.add(group_first, b.mul(b.urem(block, i64(blocks_per_group)), i64(block_channels)))
        m_block_end = b.add(m_begin, i64(block_channels))
        m_full_end = imin(b, m_block_end, b.add(group_first, i64(mg_full)))
        has_m_tail = b.icmp_signed(">", m_block_end, b.add(group_first, i64(mg_full)))
        x_image = b.mul(b.add(b.mul(image, i64(s.c)), b.mul(group, i64(s.cg))), i64(s.h * s.w))

        def output_row(oy: ir.Value) -> None:
            iy0 = b.sub(b.mul(oy, i64(s.sh)), i64(s.pt))
            ky_lo, ky_hi = valid_range(b, iy0, s.kh, s.h, s.dh)
            row = _Row(inputs[0], inputs[1], out, inputs, x_image, out_image, oy, iy0, ky_lo, ky_hi)
            simple_loop(b, m_begin, m_full_end, tile_channels,
                        lambda m: _emit_channel_row(b, spec, s, row, m, tile_channels, tiling), "m")
            if m_tail:
                if_then(b, has_m_tail,
                        lambda: _emit_channel_row(b, spec, s, row, b.add(group_first, i64(mg_full)),
                                                  m_tail, tiling))

        simple_loop(b, oy_begin, oy_end, 1, output_row, "oy")

    simple_loop(b, first_block, end_block, 1, channel_block, "block")
    kb.finish()

    lengths = tuple(t.num_bytes for t in spec.inputs) + (spec.outputs[0].num_bytes,)
    return KernelInfo(spec.name, grid, (), lengths)
