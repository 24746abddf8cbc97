"""Pooling kernels for symbolic dims: "maxpool", "maxpool_index", "avgpool", "lppool" (2-D windows
over NCHW) and "globalavgpool" (NC + any spatial rank).

N and the spatial dims may be symbolic; C, the window, strides, pads and dilations are static.
The semantics are the static kernels' (codegen/llvm/pool.py, pool_window.py): taps in the padding
are skipped, avgpool divides by the taps inside the padded input (count_include_pad=1; the
ceil_mode overhang does not count) or inside the input, lppool takes (sum |x|^p)^(1/p), maxpool_index
stores each window's first maximum's flat index in X. The output sizes come from the spec's output
shape (the shape rules' ceil_mode rule included); taps are clipped to the input, so every read
stays inside X whatever they are. One workgroup per (n, c) plane; an empty batch is an empty grid.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (F32, I32, I64, const_i64, element_ptr, entry_alloca, float_vector, for_range,
                                         horizontal, lanes_f32, load_f32, max_index, min_index, splat, store_f32)
from iree_py.codegen.llvm.dynamic.common import DynamicKernel, begin_dynamic_kernel
from iree_py.codegen.llvm.math import fmax
from iree_py.codegen.llvm.pool import _lp_power, _lp_root
from iree_py.targets import Target
from iree_py.ir.symbols import Expr, dim
from iree_py.ir.types import DType

WINDOW_KINDS = ("maxpool", "maxpool_index", "avgpool", "lppool")


def _static_ints(spec: KernelSpec, name: str, count: int, default: int) -> tuple[int, ...]:
    raw = spec.attrs.get(name, (default,) * count)
    if any(isinstance(v, Expr) for v in raw):
        raise CompileError(f"{spec.kind} kernel {spec.name}: attribute {name} must be static ints, got {raw}")
    values = tuple(int(v) for v in raw)
    if len(values) != count:
        raise ValueError(f"{spec.kind} kernel {spec.name}: attribute {name} needs {count} values, got {values}")
    return values


def _check_io(spec: KernelSpec, out_dtype: DType) -> None:
    what = f"{spec.kind} kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    x, y = spec.inputs[0], spec.outputs[0]
    if x.dtype != DType.f32 or y.dtype != out_dtype:
        raise CompileError(f"{what}: wants f32 input and {out_dtype.name} output, got {x} -> {y}")
    if x.rank < 3 or x.rank != y.rank:
        raise ValueError(f"{what}: input {x} and output {y} must be [N, C, ...] of one rank")
    if dim(x.shape[0]) != dim(y.shape[0]) or dim(x.shape[1]) != dim(y.shape[1]):
        raise ValueError(f"{what}: input {x} and output {y} must agree on N and C")
    if not isinstance(x.shape[1], int):
        raise CompileError(f"{what}: the channel dim must be static, got {x}")


@dataclass(frozen=True)
class DynWindow:
    """A 2-D window over one [H, W] plane giving [OH, OW]; the sizes are i64 values."""

    h: ir.Value
    w: ir.Value
    oh: ir.Value
    ow: ir.Value
    kernel: tuple[int, int]
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    dilations: tuple[int, int]

    @classmethod
    def of(cls, spec: KernelSpec, dk: DynamicKernel, dilated: bool) -> DynWindow:
        _, _, h, w = spec.inputs[0].shape
        _, _, oh, ow = spec.outputs[0].shape
        kernel = _static_ints(spec, "kernel", 2, 1)
        strides = _static_ints(spec, "strides", 2, 1)
        pads = _static_ints(spec, "pads", 4, 0)
        dilations = _static_ints(spec, "dilations", 2, 1) if dilated else (1, 1)
        if min(*kernel, *strides, *dilations) < 1 or min(pads) < 0:
            raise ValueError(f"{spec.kind} kernel {spec.name}: kernel, strides, dilations must be >= 1 and "
                             f"pads >= 0, got {kernel}, {strides}, {dilations}, {pads}")
        return cls(dk.dim(h), dk.dim(w), dk.dim(oh), dk.dim(ow), kernel, strides, pads, dilations)


@dataclass(frozen=True)
class WindowAt:
    """The current window: its output element index and top-left corner (may lie in the padding)."""

    out_index: ir.Value
    top: ir.Value
    left: ir.Value


def for_each_window(b: ir.IRBuilder, plane: ir.Value, win: DynWindow, start: ir.Value,
                    combine: Callable[[ir.Value, ir.Value], ir.Value],
                    finish: Callable[[ir.Value, WindowAt], None]) -> None:
    """Loops over the output pixels of plane `plane` and each window's taps inside the input."""
    (kh, kw), (sh, sw), (dh, dw) = win.kernel, win.strides, win.dilations
    src_base = b.mul(plane, b.mul(win.h, win.w))
    dst_base = b.mul(plane, b.mul(win.oh, win.ow))
    acc = entry_alloca(b, start.type)
    with for_range(b, 0, win.oh, name="oh") as y:
        top = b.sub(b.mul(y, const_i64(sh)), const_i64(win.pads[0]))
        with for_range(b, 0, win.ow, name="ow") as x:
            left = b.sub(b.mul(x, const_i64(sw)), const_i64(win.pads[1]))
            b.store(start, acc)
            with for_range(b, 0, kh, name="kh") as i:
                hh = b.add(top, b.mul(i, const_i64(dh)))
                with b.if_then(b.icmp_unsigned("<", hh, win.h)):  # unsigned: negative rows too
                    row = b.add(src_base, b.mul(hh, win.w))
                    with for_range(b, 0, kw, name="kw") as j:
                        ww = b.add(left, b.mul(j, const_i64(dw)))
                        with b.if_then(b.icmp_unsigned("<", ww, win.w)):
                            b.store(combine(b.load(acc), b.add(row, ww)), acc)
            finish(b.load(acc), WindowAt(b.add(dst_base, b.add(b.mul(y, win.ow), x)), top, left))


def _taps_inside(b: ir.IRBuilder, start: ir.Value, kernel: int, dilation: int, low: ir.Value,
                 high: ir.Value) -> ir.Value:
    """How many taps start + i * dilation (0 <= i < kernel) lie in [low, high) (numerators clamped
    at 0 so the truncating division sees non-negative values)."""
    zero, d = const_i64(0), const_i64(dilation)

    def ceil_taps(bound: ir.Value) -> ir.Value:
        gap = max_index(b, b.sub(bound, start), zero)
        return b.sdiv(b.add(gap, const_i64(dilation - 1)), d)
    end = min_index(b, ceil_taps(high), const_i64(kernel))
    return max_index(b, b.sub(end, ceil_taps(low)), zero)


def window_count(b: ir.IRBuilder, win: DynWindow, at: WindowAt, include_pad: int) -> ir.Value:
    """The elements an average divides by (i64)."""
    if include_pad:
        low = (const_i64(-win.pads[0]), const_i64(-win.pads[1]))
        high = (b.add(win.h, const_i64(win.pads[2])), b.add(win.w, const_i64(win.pads[3])))
    else:
        low, high = (const_i64(0), const_i64(0)), (win.h, win.w)
    rows = _taps_inside(b, at.top, win.kernel[0], win.dilations[0], low[0], high[0])
    cols = _taps_inside(b, at.left, win.kernel[1], win.dilations[1], low[1], high[1])
    return b.mul(rows, cols)


def _planes(spec: KernelSpec) -> Expr | int:
    n, c = spec.inputs[0].shape[:2]
    return dim(Expr.of(n) * c)


def _build_window_pool(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    _check_io(spec, DType.f32)
    if spec.inputs[0].rank != 4:
        raise ValueError(f"{spec.kind} kernel {spec.name}: only 2-D pooling (NCHW) is supported, got {spec.inputs[0]}")
    include_pad = int(spec.attrs.get("count_include_pad", 0))
    p = int(spec.attrs.get("p", 2))
    if spec.kind == "lppool" and p < 1:
        raise ValueError(f"lppool kernel {spec.name}: p must be an integer >= 1, got {p}")
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    win = DynWindow.of(spec, dk, dilated=True)
    src, dst = dk.binding(0), dk.binding(1)

    def combine(acc: ir.Value, index: ir.Value) -> ir.Value:
        v = load_f32(b, src, index)
        if spec.kind == "maxpool":
            return fmax(b, v, acc)
        if spec.kind == "lppool":
            return b.fadd(acc, _lp_power(b, v, p))
        return b.fadd(acc, v)

    def finish(result: ir.Value, at: WindowAt) -> None:
        if spec.kind == "avgpool":
            # The count fits i32; an i32 converts without a compiler builtin on 32-bit targets.
            count = b.sitofp(b.trunc(window_count(b, win, at, include_pad), I32), F32)
            result = b.fdiv(result, count)
        elif spec.kind == "lppool":
            result = _lp_root(b, result, p)
        store_f32(b, result, dst, at.out_index)

    start = splat(float("-inf") if spec.kind == "maxpool" else 0.0, F32)
    for_each_window(b, dk.workgroup_id_index(0), win, start, combine, finish)
    dk.finish()
    return dk.info(workgroup_count=(_planes(spec), 1, 1))


def _build_max_index(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    """{max, index} accumulator; a tap replaces it only when strictly greater (storage_order 1:
    the index within the plane is w * H + h)."""
    _check_io(spec, DType.i64)
    if spec.inputs[0].rank != 4:
        raise ValueError(f"maxpool_index kernel {spec.name}: only 2-D pooling (NCHW) is supported")
    column_major = int(spec.attrs.get("storage_order", 0))
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    win = DynWindow.of(spec, dk, dilated=True)
    src, dst = dk.binding(0), dk.binding(1)
    pair = ir.LiteralStructType([F32, I64])

    def combine(acc: ir.Value, index: ir.Value) -> ir.Value:
        v = load_f32(b, src, index)
        greater = b.fcmp_ordered(">", v, b.extract_value(acc, 0))
        acc = b.insert_value(acc, b.select(greater, v, b.extract_value(acc, 0)), 0)
        return b.insert_value(acc, b.select(greater, index, b.extract_value(acc, 1)), 1)

    def finish(result: ir.Value, at: WindowAt) -> None:
        index = b.extract_value(result, 1)
        if column_major:
            offset = b.srem(index, b.mul(win.h, win.w))
            h, w = b.sdiv(offset, win.w), b.srem(offset, win.w)
            index = b.add(b.sub(index, offset), b.add(b.mul(w, win.h), h))
        b.store(index, element_ptr(b, dst, at.out_index, I64))

    start = ir.Constant(pair, [ir.Constant(F32, float("-inf")), ir.Constant(I64, 0)])
    for_each_window(b, dk.workgroup_id_index(0), win, start, combine, finish)
    dk.finish()
    return dk.info(workgroup_count=(_planes(spec), 1, 1))


def _build_global_avg(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    _check_io(spec, DType.f32)
    if any(d != 1 for d in spec.outputs[0].shape[2:]):
        raise ValueError(f"globalavgpool kernel {spec.name}: output {spec.outputs[0]} must be [N, C, 1, ...]")
    plane_expr = dim(1)
    for d in spec.inputs[0].shape[2:]:
        plane_expr = dim(Expr.of(plane_expr) * d)
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    src, dst = dk.binding(0), dk.binding(1)
    plane = dk.workgroup_id_index(0)
    size = dk.dim(plane_expr)
    base = b.mul(plane, size)
    lanes = lanes_f32(target)
    vty = float_vector(lanes)
    vacc, acc = entry_alloca(b, vty, "vacc"), entry_alloca(b, F32, "acc")
    b.store(splat(0.0, vty), vacc)
    vec_end = b.mul(b.sdiv(size, const_i64(lanes)), const_i64(lanes))
    with for_range(b, 0, vec_end, step=lanes, name="v") as j:
        b.store(b.fadd(b.load(vacc), load_f32(b, src, b.add(base, j), vty)), vacc)
    b.store(horizontal(b, b.load(vacc), lambda bb, x, y: bb.fadd(x, y)), acc)
    with for_range(b, vec_end, size, name="t") as j:
        b.store(b.fadd(b.load(acc), load_f32(b, src, b.add(base, j))), acc)
    # The plane size fits i32 (the runtime's dims are u32); i32 converts without a builtin everywhere.
    count = b.sitofp(b.trunc(size, I32), F32)
    store_f32(b, b.fdiv(b.load(acc), count), dst, plane)
    dk.finish()
    return dk.info(workgroup_count=(_planes(spec), 1, 1))


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    if spec.kind == "globalavgpool":
        return _build_global_avg(spec, module, target)
    if spec.kind == "maxpool_index":
        return _build_max_index(spec, module, target)
    if spec.kind in WINDOW_KINDS:
        return _build_window_pool(spec, module, target)
    raise ValueError(f"dynamic pool kernel {spec.name}: unsupported kind {spec.kind!r}")
