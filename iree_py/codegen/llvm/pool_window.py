"""The window iteration shared by the 2-D pooling kernels (pool.py: maxpool, maxpool_index,
avgpool, lppool; qpool.py: integer maxpool, qavgpool).

One workgroup per (n, c) plane of an NCHW tensor. For each output pixel the accumulator starts at
`start`, every window tap inside the input (taps in the padding are skipped) folds in through
`combine(acc, index)` (index: the tap's element index in X), and `finish(acc, at)` stores the
result, `at` saying where the window is. A kernel whose combine and finish also work on vectors
(maxpool, avgpool) passes a VectorWindow: with symbolic sizes, the interior pixels then go a
vector of output columns at a time (the static loops LLVM vectorizes by itself).

The plane sizes are ints or, for symbolic dims (docs/dynamic_shapes.md §3), i64 values computed
from the push constants; the window itself (kernel, strides, pads, dilations) is static. An int
size folds to a constant, so a static spec compiles as it always did.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm.common import as_index, const_i64, entry_alloca, for_range, max_index, min_index
from iree_py.codegen.llvm.dims import DynamicKernel
from iree_py.codegen.llvm.epilogue import load_span, load_tile, pick_lanes
from iree_py.ir.opdef import pool_output_size
from iree_py.ir.symbols import Expr, dim

Size = int | ir.Value  # a plane size: known, or computed at run time


def spec_ints(spec: KernelSpec, name: str, count: int, default: int) -> tuple[int, ...]:
    raw = spec.attrs.get(name, (default,) * count)
    if any(isinstance(v, Expr) for v in raw):
        raise CompileError(f"{spec.kind} kernel {spec.name}: attribute {name} must be static ints, got {raw}")
    values = tuple(int(v) for v in raw)
    if len(values) != count:
        raise ValueError(f"{spec.kind} kernel {spec.name}: attribute {name} needs {count} values, got {values}")
    return values


def size_product(b: ir.IRBuilder, x: Size, y: Size) -> ir.Value:
    """x * y: folded when both are known."""
    if isinstance(x, int) and isinstance(y, int):
        return const_i64(x * y)
    return b.mul(as_index(x), as_index(y))


@dataclass(frozen=True)
class Window:
    """A 2-D pooling window over one [H, W] plane, with the [OH, OW] output it gives."""

    h: Size
    w: Size
    oh: Size
    ow: Size
    kernel: tuple[int, int]
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    dilations: tuple[int, int]

    @classmethod
    def of(cls, spec: KernelSpec, dilated: bool, dk: DynamicKernel | None = None) -> Window:
        """The window of a pooling spec (attrs kernel, strides, pads, ceil_mode and, when
        `dilated`, dilations). Static H and W: the output shape is checked against it; symbolic
        ones (lowered through `dk`): the output sizes are the spec's (its shape rule's)."""
        n, c, h, w = (dim(d) for d in spec.inputs[0].shape)
        kernel = spec_ints(spec, "kernel", 2, 1)
        strides = spec_ints(spec, "strides", 2, 1)
        pads = spec_ints(spec, "pads", 4, 0)
        dilations = spec_ints(spec, "dilations", 2, 1) if dilated else (1, 1)
        if isinstance(h, int) and isinstance(w, int):
            ceil_mode = int(spec.attrs.get("ceil_mode", 0))
            oh = pool_output_size(h, kernel[0], strides[0], pads[0], pads[2], dilations[0], ceil_mode)
            ow = pool_output_size(w, kernel[1], strides[1], pads[1], pads[3], dilations[1], ceil_mode)
            if tuple(dim(d) for d in spec.outputs[0].shape) != (n, c, oh, ow):
                raise ValueError(f"{spec.kind} kernel {spec.name}: output {spec.outputs[0]} should be "
                                 f"[{n}, {c}, {oh}, {ow}]")
            return cls(h, w, oh, ow, kernel, strides, pads, dilations)
        if dk is None:
            raise CompileError(f"{spec.kind} kernel {spec.name}: needs static H and W, got {spec.inputs[0]}")
        if min(*kernel, *strides, *dilations) < 1 or min(pads) < 0:
            raise ValueError(f"{spec.kind} kernel {spec.name}: kernel, strides, dilations must be >= 1 and "
                             f"pads >= 0, got {kernel}, {strides}, {dilations}, {pads}")
        _, _, oh, ow = spec.outputs[0].shape
        return cls(*(dk.index(d) for d in (h, w, oh, ow)), kernel, strides, pads, dilations)


@dataclass(frozen=True)
class VectorWindow:
    """The vector form of a kernel's combine and finish, for interior pixels (every tap inside
    the input): `combine(acc, taps)` folds in one tap of `lanes` consecutive output columns (read
    from `src`, the f32 input), `finish(result, out_index)` stores the `lanes` results from output
    element out_index on."""

    src: ir.Value
    lanes: int
    start: ir.Value
    combine: Callable[[ir.Value, ir.Value], ir.Value]
    finish: Callable[[ir.Value, ir.Value], None]


@dataclass(frozen=True)
class WindowAt:
    """Where the current window is: its output element index and its top-left corner (may be
    negative: in the padding)."""

    out_index: ir.Value
    top: ir.Value
    left: ir.Value


def for_each_window(b: ir.IRBuilder, plane: ir.Value, win: Window, start: ir.Value,
                    combine: Callable[[ir.Value, ir.Value], ir.Value],
                    finish: Callable[[ir.Value, WindowAt], None], vector: VectorWindow | None = None) -> None:
    """Emit the loops over output pixels and window taps of plane `plane` (an i64 index).

    Known H and W: every tap is checked (LLVM drops the checks it can decide). Run-time ones: in
    the rows whose window lies inside the input, the interior columns (computed here) read their
    taps unchecked, unrolled (with `vector`: a vector of columns at a time, each tap one strided
    load, then the remaining columns one by one); the taps are visited in the same order either
    way."""
    (kh, kw), (sh, sw), (dh, dw) = win.kernel, win.strides, win.dilations
    pt, pl = win.pads[0], win.pads[1]
    src_base = b.mul(plane, size_product(b, win.h, win.w))
    dst_base = b.mul(plane, size_product(b, win.oh, win.ow))
    acc = entry_alloca(b, start.type)

    def pixel(y: ir.Value, hs: ir.Value, x: ir.Value, checked: bool) -> None:
        ws = b.sub(b.mul(x, const_i64(sw)), const_i64(pl))
        b.store(start, acc)
        if checked:
            with for_range(b, 0, kh, name="kh") as i:
                hh = b.add(hs, b.mul(i, const_i64(dh)))
                with b.if_then(b.icmp_unsigned("<", hh, as_index(win.h))):  # unsigned: negative rows too
                    with for_range(b, 0, kw, name="kw") as j:
                        ww = b.add(ws, b.mul(j, const_i64(dw)))
                        with b.if_then(b.icmp_unsigned("<", ww, as_index(win.w))):
                            index = b.add(src_base, b.add(b.mul(hh, as_index(win.w)), ww))
                            b.store(combine(b.load(acc), index), acc)
        else:
            for i in range(kh):
                row = b.add(src_base, b.mul(b.add(hs, const_i64(i * dh)), as_index(win.w)))
                for j in range(kw):
                    b.store(combine(b.load(acc), b.add(row, b.add(ws, const_i64(j * dw)))), acc)
        finish(b.load(acc), WindowAt(b.add(dst_base, b.add(b.mul(y, as_index(win.ow)), x)), hs, ws))

    def pixels(y: ir.Value, hs: ir.Value, x: ir.Value) -> None:
        """Output columns [x, x + vector.lanes) of row y, every tap inside the input."""
        assert vector is not None
        ws = b.sub(b.mul(x, const_i64(sw)), const_i64(pl))
        result = vector.start
        lanes = vector.lanes
        span = (lanes - 1) * sw + (kw - 1) * dw + 1  # every tap of the row's lanes columns
        for i in range(kh):
            row = b.add(b.add(src_base, b.mul(b.add(hs, const_i64(i * dh)), as_index(win.w))), ws)
            # Strided: the row's taps are lanes of one span (whole-vector loads, then shuffles);
            # stride 1: one plain load per tap beats shifting lanes across the halves of a vector.
            wide = load_span(b, vector.src, row, span, lanes) if sw > 1 else None
            for j in range(kw):
                if wide is None:
                    taps = load_tile(b, vector.src, b.add(row, const_i64(j * dw)), lanes)
                else:
                    taps = pick_lanes(b, wide, [j * dw + k * sw for k in range(lanes)])
                result = vector.combine(result, taps)
        vector.finish(result, b.add(dst_base, b.add(b.mul(y, as_index(win.ow)), x)))

    def interior(y: ir.Value, hs: ir.Value, lo: ir.Value, hi: ir.Value) -> None:
        if vector is None:
            with for_range(b, lo, hi, name="ow") as x:
                pixel(y, hs, x, False)
            return
        lanes = const_i64(vector.lanes)
        vector_end = b.add(lo, b.mul(b.sdiv(b.sub(hi, lo), lanes), lanes))
        with for_range(b, lo, vector_end, step=vector.lanes, name="owv") as x:
            pixels(y, hs, x)
        with for_range(b, vector_end, hi, name="ow") as x:
            pixel(y, hs, x, False)

    if isinstance(win.h, int) and isinstance(win.w, int):
        with for_range(b, 0, win.oh, name="oh") as y:
            hs = b.sub(b.mul(y, const_i64(sh)), const_i64(pt))
            with for_range(b, 0, win.ow, name="ow") as x:
                pixel(y, hs, x, True)
        return
    lo, hi = _interior_columns(b, win)
    with for_range(b, 0, win.oh, name="oh") as y:
        hs = b.sub(b.mul(y, const_i64(sh)), const_i64(pt))
        inside = b.and_(b.icmp_signed(">=", hs, const_i64(0)),
                        b.icmp_signed("<", b.add(hs, const_i64((kh - 1) * dh)), as_index(win.h)))
        with b.if_else(inside) as (then, otherwise):
            with then:
                with for_range(b, 0, lo, name="left") as x:
                    pixel(y, hs, x, True)
                interior(y, hs, lo, hi)
                with for_range(b, hi, win.ow, name="right") as x:
                    pixel(y, hs, x, True)
            with otherwise:
                with for_range(b, 0, win.ow, name="ow") as x:
                    pixel(y, hs, x, True)


def _interior_columns(b: ir.IRBuilder, win: Window) -> tuple[ir.Value, ir.Value]:
    """[lo, hi): the output columns whose every tap lies inside the input (i64 values); empty
    when none does."""
    (_, kw), (_, sw), (_, dw), pl = win.kernel, win.strides, win.dilations, win.pads[1]
    ow = as_index(win.ow)
    lo = min_index(b, ow, const_i64(-(-pl // sw)))
    last = b.sub(as_index(win.w), const_i64(1 - pl + (kw - 1) * dw))  # the last tap's start column
    hi = min_index(b, ow, b.add(b.sdiv(max_index(b, last, const_i64(0)), const_i64(sw)), const_i64(1)))
    hi = b.select(b.icmp_signed("<", last, const_i64(0)), lo, hi)
    return lo, max_index(b, lo, hi)


def window_count(b: ir.IRBuilder, win: Window, at: WindowAt, include_pad: int) -> ir.Value:
    """Elements an average divides by (i64): the window's taps inside the padded input
    (count_include_pad=1; the ceil_mode overhang does not count) or inside the input itself."""
    if include_pad:
        low = (-win.pads[0], -win.pads[1])
        high = tuple(size + pad if isinstance(size, int) else b.add(size, const_i64(pad))
                     for size, pad in ((win.h, win.pads[2]), (win.w, win.pads[3])))
    else:
        low, high = (0, 0), (win.h, win.w)
    rows = _taps_inside(b, at.top, win.kernel[0], win.dilations[0], low[0], high[0])
    cols = _taps_inside(b, at.left, win.kernel[1], win.dilations[1], low[1], high[1])
    return b.mul(rows, cols)


def _taps_inside(b: ir.IRBuilder, start: ir.Value, kernel: int, dilation: int, low: Size, high: Size) -> ir.Value:
    """How many of the taps start + i * dilation (0 <= i < kernel) lie in [low, high): from
    ceil((low - start) / dilation) to ceil((high - start) / dilation), clipped to [0, kernel]. The
    numerators are clamped at 0 first, so the (truncating) division only sees non-negative values."""
    zero, d = const_i64(0), const_i64(dilation)

    def ceil_taps(bound: Size) -> ir.Value:
        gap = max_index(b, b.sub(as_index(bound), start), zero)
        return b.sdiv(b.add(gap, const_i64(dilation - 1)), d)
    first = ceil_taps(low)
    end = min_index(b, ceil_taps(high), const_i64(kernel))
    return max_index(b, b.sub(end, first), zero)
