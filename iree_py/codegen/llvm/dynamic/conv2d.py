"""The "conv2d" kernel for symbolic dims: Y[N,M,OH,OW] = X[N,C,H,W] * W[M,C/group,KH,KW] (+ B[M]).

N, H, W (and so OH, OW) may be symbolic; C, M, the kernel, strides, pads, dilations and group are
static ints. The weight is always the plain [M, C/group, KH, KW] layout: the compiler packs conv
weights (attrs weight_layout) only for static shapes, and a packed spec is refused here.

Structure (the static kernel, codegen/llvm/conv.py, with the sizes read at run time):
  grid      x = output rows (1×1 stride-1 unpadded convs: chunks of POINTWISE_CHUNK pixels of the
            image seen as one row of OH·OW pixels), y = runs of channel blocks, z = batch image.
  tile      up to conv_tiling().channels output channels × VECTORS vectors of output columns; for
            each input channel c, kernel row ky in the row's valid range, and kernel column kx
            (unrolled), load the input vectors once and FMA a broadcast weight per channel.
  columns   the interior columns (every kernel column inside the image) are computed at run time;
            they go through full tiles, then single-vector tiles, then scalar tiles; the border
            columns take a scalar path with the valid kx range computed per column.
  epilogue  bias (input 2, when not an epilogue operand) initializes the accumulators; the
            epilogue ops are applied before each store exactly as the static kernel does.
A dim that is 0 at run time empties the grid or every loop: nothing is read or written.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import lanes_f32
from iree_py.codegen.llvm.conv import conv_tiling
from iree_py.codegen.llvm.dims import DynamicKernel, begin_dynamic_kernel
from iree_py.codegen.llvm.epilogue import (TilePosition, apply_epilogue, carried_loop, check_epilogue, fma, i64,
                                           if_then, imax, imin, load_strided_tile, load_tile, simple_loop, splat,
                                           store_tile, zero)
from iree_py.targets import Target
from iree_py.ir.symbols import Expr, call
from iree_py.ir.types import DType

VECTORS = 2                  # column vectors per full tile
CHANNEL_BLOCK_TILES = 4      # a channel block is up to 4 channel tiles of one group
NOMINAL_ROW = 64             # the output row width assumed when sizing workgroups (OW is unknown)
WORK_PER_WORKGROUP = 1 << 18
POINTWISE_CHUNK = 256        # pixels per workgroup of a 1×1 conv


@dataclass(frozen=True)
class StaticConv:
    """The static part of a dynamic conv2d spec."""

    c: int
    m: int
    cg: int
    kh: int
    kw: int
    sh: int
    sw: int
    pads: tuple[int, int, int, int]   # top, left, bottom, right
    dh: int
    dw: int
    group: int
    has_bias: bool

    @property
    def mg(self) -> int:
        return self.m // self.group

    @property
    def pointwise(self) -> bool:
        return (self.kh, self.kw, self.sh, self.sw, *self.pads) == (1, 1, 1, 1, 0, 0, 0, 0)


def _ints(spec: KernelSpec, name: str, default: tuple[int, ...]) -> tuple[int, ...]:
    raw = spec.attrs.get(name, default)
    if any(isinstance(v, Expr) for v in raw):
        raise CompileError(f"conv2d {spec.name}: attribute {name} must be static ints, got {raw}")
    value = tuple(int(v) for v in raw)
    if len(value) != len(default):
        raise ValueError(f"conv2d {spec.name}: attribute {name} must have {len(default)} values, got {value}")
    return value


def static_conv(spec: KernelSpec) -> StaticConv:
    """Check a dynamic conv2d spec and read its static sizes."""
    what = f"conv2d {spec.name}"
    if "weight_layout" in spec.attrs:
        raise ValueError(f"{what}: the dynamic conv2d reads the plain W[M, C/group, KH, KW] weight, "
                         f"not weight_layout {spec.attrs['weight_layout']!r}")
    if len(spec.inputs) < 2 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expected inputs X, W (+ B, epilogue operands) and one output, got "
                         f"{len(spec.inputs)} inputs and {len(spec.outputs)} outputs")
    x, wt, y = spec.inputs[0], spec.inputs[1], spec.outputs[0]
    if any(t.dtype != DType.f32 for t in (x, wt, y)):
        raise CompileError(f"{what}: only f32 is supported, got {x}, {wt} -> {y}")
    if x.rank != 4 or y.rank != 4 or wt.rank != 4:
        raise ValueError(f"{what}: X, W and Y must be 4-D, got {x}, {wt}, {y}")
    if not wt.is_static or not isinstance(x.shape[1], int) or not isinstance(y.shape[1], int):
        raise CompileError(f"{what}: channels and the weight must be static, got X {x}, W {wt}, Y {y}")
    m, cg, kh, kw = (int(d) for d in wt.shape)
    c = int(x.shape[1])
    sh, sw = _ints(spec, "strides", (1, 1))
    pads = _ints(spec, "pads", (0, 0, 0, 0))
    dh, dw = _ints(spec, "dilations", (1, 1))
    group = int(spec.attrs.get("group", 1))
    if group < 1 or c % group or m % group or c // group != cg or y.shape[1] != m:
        raise ValueError(f"{what}: X has {c} channels, W is {wt.shape}, Y has {y.shape[1]} channels, group "
                         f"{group}: expected C/group == W.shape[1], M == Y.shape[1] divisible by group")
    if min(sh, sw, dh, dw) < 1 or min(pads) < 0:
        raise ValueError(f"{what}: strides and dilations must be >= 1 and pads >= 0, got {sh, sw}, "
                         f"{dh, dw}, {pads}")
    check_epilogue(spec.epilogue, len(spec.inputs), spec.name)
    operands = {op.operand for op in spec.epilogue if op.operand is not None}
    has_bias = len(spec.inputs) >= 3 and 2 not in operands
    if has_bias and spec.inputs[2].element_count != m:
        raise ValueError(f"{what}: bias (input 2) {spec.inputs[2]} must have {m} elements")
    return StaticConv(c, m, cg, kh, kw, sh, sw, pads, dh, dw, group, has_bias)


@dataclass
class _Plane:
    """Run-time sizes of one image as the loops see it (a pointwise conv: one row of pixels)."""

    h: ir.Value
    w: ir.Value
    oh: ir.Value
    ow: ir.Value


@dataclass
class _Row:
    """Everything fixed while one output row of one channel range is computed."""

    inputs: list[ir.Value]
    out: ir.Value
    x_image: ir.Value     # element offset of this image's first input channel of the group
    out_image: ir.Value   # element offset of this image's output channel 0
    oy: ir.Value
    iy0: ir.Value         # oy * sh - pt
    ky_lo: ir.Value
    ky_hi: ir.Value


def valid_range(b: ir.IRBuilder, start: ir.Value, size: int, extent: ir.Value, dilation: int
                ) -> tuple[ir.Value, ir.Value]:
    """[lo, hi) of taps k < size with 0 <= start + k * dilation < extent (may be empty)."""
    lo = imax(b, i64(0), b.sdiv(b.add(b.neg(start), i64(dilation - 1)), i64(dilation)))
    reach = b.sub(b.add(extent, i64(dilation - 1)), start)
    hi = imin(b, i64(size), imax(b, i64(0), b.sdiv(reach, i64(dilation))))
    return lo, imax(b, lo, hi)


class _ConvEmitter:
    def __init__(self, spec: KernelSpec, s: StaticConv, dk: DynamicKernel, plane: _Plane, target: Target) -> None:
        self.spec, self.s, self.b, self.plane = spec, s, dk.builder, plane
        self.lanes = lanes_f32(target)
        self.accumulators = conv_tiling(target).accumulators
        self.taps = s.kh * s.kw
        self.pl = 0 if s.pointwise else s.pads[1]

    def initial(self, row: _Row, channel: ir.Value, width: int) -> ir.Value:
        if not self.s.has_bias:
            return zero(width)
        return splat(self.b, load_tile(self.b, row.inputs[2], channel, 1), width)

    def store(self, row: _Row, channel: ir.Value, ox: ir.Value, value: ir.Value) -> None:
        b, p = self.b, self.plane
        flat = b.add(b.add(row.out_image, b.mul(b.add(b.mul(channel, p.oh), row.oy), p.ow)), ox)
        value = apply_epilogue(b, self.spec.epilogue, value, row.inputs,
                               TilePosition(flat, channel, channel_along_lanes=False))
        store_tile(b, value, row.out, flat)

    def x_row(self, row: _Row, c: ir.Value, ky: ir.Value, ix0: ir.Value) -> ir.Value:
        b, p = self.b, self.plane
        iy = b.add(row.iy0, b.mul(ky, i64(self.s.dh)))
        return b.add(b.add(row.x_image, b.mul(b.add(b.mul(c, p.h), iy), p.w)), ix0)

    def tile(self, row: _Row, m: ir.Value, channels: int, ox: ir.Value, widths: tuple[int, ...]) -> None:
        """Interior tile: output channels [m, m + channels) × columns [ox, ox + sum(widths))."""
        b, s = self.b, self.s
        offsets = [sum(widths[:j]) for j in range(len(widths))]
        w_channel = [b.mul(b.add(m, i64(r)), i64(s.cg * self.taps)) for r in range(channels)]
        ix0 = b.sub(b.mul(ox, i64(s.sw)), i64(self.pl))

        def ky_step(c: ir.Value, ky: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
            x_row = self.x_row(row, c, ky, ix0)
            w_tap = b.add(b.mul(c, i64(self.taps)), b.mul(ky, i64(s.kw)))
            accs = list(accs)
            for kx in range(s.kw):
                x_tap = b.add(x_row, i64(kx * s.dw))
                ins = [load_strided_tile(b, row.inputs[0], b.add(x_tap, i64(off * s.sw)), w, s.sw)
                       for off, w in zip(offsets, widths)]
                for r in range(channels):
                    weight = load_tile(b, row.inputs[1], b.add(b.add(w_channel[r], w_tap), i64(kx)), 1)
                    splats = {w: splat(b, weight, w) for w in set(widths)}
                    for j, w in enumerate(widths):
                        k = r * len(widths) + j
                        accs[k] = fma(b, splats[w], ins[j], accs[k])
            return accs

        def c_step(c: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
            return carried_loop(b, row.ky_lo, row.ky_hi, 1, accs, lambda ky, a: ky_step(c, ky, a), "ky")

        initial = [self.initial(row, b.add(m, i64(r)), w) for r in range(channels) for w in widths]
        accs = carried_loop(b, i64(0), i64(s.cg), 1, initial, c_step, "c")
        for r in range(channels):
            for j, off in enumerate(offsets):
                self.store(row, b.add(m, i64(r)), b.add(ox, i64(off)), accs[r * len(widths) + j])

    def border_column(self, row: _Row, m: ir.Value, channels: int, ox: ir.Value) -> None:
        """One output column whose receptive field leaves the image: scalar, kx range per column."""
        b, s = self.b, self.s
        ix0 = b.sub(b.mul(ox, i64(s.sw)), i64(self.pl))
        kx_lo, kx_hi = valid_range(b, ix0, s.kw, self.plane.w, s.dw)
        w_channel = [b.mul(b.add(m, i64(r)), i64(s.cg * self.taps)) for r in range(channels)]

        def kx_step(x_row: ir.Value, w_tap: ir.Value, kx: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
            value = load_tile(b, row.inputs[0], b.add(x_row, b.mul(kx, i64(s.dw))), 1)
            return [fma(b, load_tile(b, row.inputs[1], b.add(b.add(w_channel[r], w_tap), kx), 1), value, accs[r])
                    for r in range(channels)]

        def ky_step(c: ir.Value, ky: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
            x_row = self.x_row(row, c, ky, ix0)
            w_tap = b.add(b.mul(c, i64(self.taps)), b.mul(ky, i64(s.kw)))
            return carried_loop(b, kx_lo, kx_hi, 1, accs, lambda kx, a: kx_step(x_row, w_tap, kx, a), "kx")

        def c_step(c: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
            return carried_loop(b, row.ky_lo, row.ky_hi, 1, accs, lambda ky, a: ky_step(c, ky, a), "ky")

        initial = [self.initial(row, b.add(m, i64(r)), 1) for r in range(channels)]
        accs = carried_loop(b, i64(0), i64(s.cg), 1, initial, c_step, "c")
        for r in range(channels):
            self.store(row, b.add(m, i64(r)), ox, accs[r])

    def interior_columns(self) -> tuple[ir.Value, ir.Value]:
        """[lo, hi): output columns whose every kernel column reads inside the image."""
        b, s, p = self.b, self.s, self.plane
        lo = imin(b, p.ow, i64(-(-self.pl // s.sw)))
        last = b.sub(p.w, i64(1 - self.pl + (s.kw - 1) * s.dw))
        hi = imin(b, p.ow, b.add(b.sdiv(imax(b, last, i64(0)), i64(s.sw)), i64(1)))
        hi = b.select(b.icmp_signed("<", last, i64(0)), lo, hi)
        return lo, imax(b, lo, hi)

    def channel_row(self, row: _Row, m: ir.Value, channels: int, columns: tuple[ir.Value, ir.Value]) -> None:
        """Output columns [begin, end) of row `row.oy` for output channels [m, m + channels)."""
        b, lanes = self.b, self.lanes
        begin, end = columns
        lo, hi = self.interior_columns()
        inner_lo, inner_hi = imax(b, begin, lo), imax(b, imax(b, begin, lo), imin(b, end, hi))
        vectors = max(1, min(VECTORS, self.accumulators // channels))
        tile_cols = vectors * lanes

        def border(ox: ir.Value) -> None:
            self.border_column(row, m, channels, ox)

        simple_loop(b, begin, imin(b, end, lo), 1, border, "left")
        full_end = b.add(inner_lo, b.mul(b.sdiv(b.sub(inner_hi, inner_lo), i64(tile_cols)), i64(tile_cols)))
        simple_loop(b, inner_lo, full_end, tile_cols,
                    lambda ox: self.tile(row, m, channels, ox, (lanes,) * vectors), "ox")
        vector_end = full_end
        if lanes > 1 and vectors > 1:
            vector_end = b.add(full_end, b.mul(b.sdiv(b.sub(inner_hi, full_end), i64(lanes)), i64(lanes)))
            simple_loop(b, full_end, vector_end, lanes, lambda ox: self.tile(row, m, channels, ox, (lanes,)), "ox1")
        if lanes > 1:
            simple_loop(b, vector_end, inner_hi, 1, lambda ox: self.tile(row, m, channels, ox, (1,)), "oxs")
        simple_loop(b, imax(b, begin, hi), end, 1, border, "right")


def _grid_x(s: StaticConv, oh: Expr | int, ow: Expr | int) -> Expr | int:
    if s.pointwise:
        return call("ceildiv", Expr.of(oh) * ow, POINTWISE_CHUNK)
    return oh


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    if spec.kind != "conv2d":
        raise ValueError(f"dynamic conv2d.build got kernel {spec.name} of kind {spec.kind!r}")
    s = static_conv(spec)
    tiling = conv_tiling(target)
    tile_channels = min(tiling.channels, s.mg)
    block_channels = tile_channels * CHANNEL_BLOCK_TILES
    blocks_per_group = -(-s.mg // block_channels)
    channel_blocks = s.group * blocks_per_group
    row_work = NOMINAL_ROW * min(block_channels, s.mg) * s.cg * s.kh * s.kw
    blocks_per_workgroup = max(1, min(channel_blocks, WORK_PER_WORKGROUP // row_work))
    y_groups = -(-channel_blocks // blocks_per_workgroup)

    n_d, _, h_d, w_d = spec.inputs[0].shape
    _, _, oh_d, ow_d = spec.outputs[0].shape
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    if s.pointwise:
        plane = _Plane(i64(1), dk.dim(Expr.of(h_d) * w_d), i64(1), dk.dim(Expr.of(oh_d) * ow_d))
    else:
        plane = _Plane(dk.dim(h_d), dk.dim(w_d), dk.dim(oh_d), dk.dim(ow_d))
    emitter = _ConvEmitter(spec, s, dk, plane, target)
    inputs = [dk.binding(i) for i in range(len(spec.inputs))]
    out = dk.binding(len(spec.inputs))
    image = dk.workgroup_id_index(2)
    first_block = b.mul(dk.workgroup_id_index(1), i64(blocks_per_workgroup))
    end_block = imin(b, b.add(first_block, i64(blocks_per_workgroup)), i64(channel_blocks))
    out_image = b.mul(image, b.mul(i64(s.m), b.mul(plane.oh, plane.ow)))
    if s.pointwise:
        oy = i64(0)
        begin = b.mul(dk.workgroup_id_index(0), i64(POINTWISE_CHUNK))
        columns = (begin, imin(b, b.add(begin, i64(POINTWISE_CHUNK)), plane.ow))
    else:
        oy = dk.workgroup_id_index(0)
        columns = (i64(0), plane.ow)
    mg_full = s.mg - s.mg % tile_channels
    m_tail = s.mg - mg_full
    iy0 = b.sub(b.mul(oy, i64(s.sh)), i64(s.pads[0]))
    ky_lo, ky_hi = valid_range(b, iy0, s.kh, plane.h, s.dh)

    def channel_block(block: ir.Value) -> None:
        group = b.udiv(block, i64(blocks_per_group))
        group_first = b.mul(group, i64(s.mg))
        m_begin = b.add(group_first, b.mul(b.urem(block, i64(blocks_per_group)), i64(block_channels)))
        m_block_end = b.add(m_begin, i64(block_channels))
        m_full_end = imin(b, m_block_end, b.add(group_first, i64(mg_full)))
        has_m_tail = b.icmp_signed(">", m_block_end, b.add(group_first, i64(mg_full)))
        x_image = b.mul(b.add(b.mul(image, i64(s.c)), b.mul(group, i64(s.cg))), b.mul(plane.h, plane.w))
        row = _Row(inputs, out, x_image, out_image, oy, iy0, ky_lo, ky_hi)
        simple_loop(b, m_begin, m_full_end, tile_channels,
                    lambda m: emitter.channel_row(row, m, tile_channels, columns), "m")
        if m_tail:
            if_then(b, has_m_tail,
                    lambda: emitter.channel_row(row, b.add(group_first, i64(mg_full)), m_tail, columns))

    simple_loop(b, first_block, end_block, 1, channel_block, "block")
    dk.finish()
    return dk.info(workgroup_count=(_grid_x(s, oh_d, ow_d), y_groups, n_d))
