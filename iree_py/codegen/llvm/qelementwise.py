"""Elementwise quantized kernels: "quantize" (f32 -> i8/u8), "dequantize" (i8/u8/i32 -> f32) and
"qadd" (TFLite's int8 ADD with broadcasting). Semantics: docs/ir.md, "Quantized ops".

The tensor is walked as rows × columns: for quantize/dequantize a row is one run of the innermost
dims after the per-channel axis (so the channel's scale and zero point are loop invariants), for
qadd a row is the output's last axis. Workgroups take blocks of rows and chunks of columns; the
column loop is plain scalar IR that LLVM vectorizes.
"""
from __future__ import annotations

import math
from typing import Callable

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import F32, I32, begin_kernel, const_i64, element_ptr, for_range, min_index, \
    static_shape, strides_of
from iree_py.codegen.llvm.requant import (QRANGE, clamp_i32, float_to_nearest_i32, i32, load_q,
                                          multiply_smaller_than_one, per_channel, store_q)
from iree_py.codegen.llvm.shapes import broadcast_strides, collapse_dims
from iree_py.ir.types import DType

CHUNK_ELEMENTS = 4096  # elements one workgroup covers, about

RowBody = Callable[[ir.IRBuilder, ir.Value, ir.Value, ir.Value], None]  # (b, row, col_begin, col_end)


def emit_row_grid(kb, rows: int, cols: int, body: RowBody) -> tuple[int, int, int]:
    """Call body for every row with its column range, split over a 2-D grid (x: column chunks,
    y: row blocks); returns the grid."""
    b = kb.builder
    chunk = max(1, min(cols, CHUNK_ELEMENTS))
    rows_per_group = max(1, CHUNK_ELEMENTS // chunk)
    grid = (max(1, -(-cols // chunk)), max(1, -(-rows // rows_per_group)), 1)
    col_begin = b.mul(kb.workgroup_id_index(0), const_i64(chunk))
    col_end = min_index(b, b.add(col_begin, const_i64(chunk)), const_i64(cols))
    row_begin = b.mul(kb.workgroup_id_index(1), const_i64(rows_per_group))
    row_end = min_index(b, b.add(row_begin, const_i64(rows_per_group)), const_i64(rows))
    with for_range(b, row_begin, row_end, name="row") as row:
        body(b, row, col_begin, col_end)
    return grid


def _channel_layout(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    """(outer, channels, inner) sizes around a per-channel axis (-1: one channel)."""
    if axis == -1:
        return 1, 1, math.prod(shape)
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def _check_unary(spec: KernelSpec) -> tuple[int, ...]:
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{spec.kind} kernel {spec.name}: expects 1 input and 1 output")
    shape = static_shape(spec.inputs[0], f"{spec.kind} kernel {spec.name} input")
    if shape != static_shape(spec.outputs[0], f"{spec.kind} kernel {spec.name} output"):
        raise ValueError(f"{spec.kind} kernel {spec.name}: input {spec.inputs[0]} and output {spec.outputs[0]} "
                         f"differ in shape")
    return shape


def _build_scale_kernel(spec: KernelSpec, module: ir.Module, target,
                        element: Callable[[ir.IRBuilder, ir.Value, ir.Value, ir.Value], ir.Value],
                        store: Callable[[ir.IRBuilder, ir.Value, ir.Value, ir.Value], None]) -> KernelInfo:
    """Quantize/Dequantize: out[i] = element(b, in[i] index, scale, zero_point) per channel."""
    shape = _check_unary(spec)
    outer, channels, inner = _channel_layout(shape, int(spec.attrs["axis"]))
    kb = begin_kernel(module, spec.name, target)
    src, dst = kb.binding(0), kb.binding(1)

    def row_body(b: ir.IRBuilder, row: ir.Value, col_begin: ir.Value, col_end: ir.Value) -> None:
        channel = b.urem(row, const_i64(channels)) if channels > 1 else const_i64(0)
        scale = per_channel(module, b, f"{spec.name}.scale", list(spec.attrs["scale"]), channel, F32)
        zero_point = per_channel(module, b, f"{spec.name}.zero_point", list(spec.attrs["zero_point"]), channel)
        base = b.mul(row, const_i64(inner))
        with for_range(b, col_begin, col_end, name="col") as col:
            index = b.add(base, col)
            store(b, element(b, src, index, scale, zero_point), dst, index)

    grid = emit_row_grid(kb, outer * channels, inner, row_body)
    kb.finish()
    return KernelInfo(spec.name, grid, (), (spec.inputs[0].num_bytes, spec.outputs[0].num_bytes))


def build_quantize(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    """y = clamp(round(x / scale) + zero_point): x / scale in f32, rounded half to even (ONNX) or
    half away from zero (TFLite)."""
    out = spec.outputs[0].dtype
    if spec.inputs[0].dtype != DType.f32 or out not in QRANGE or out.value != spec.attrs["dtype"]:
        raise ValueError(f"quantize kernel {spec.name}: wants f32 -> {spec.attrs['dtype']}, "
                         f"got {spec.inputs[0]} -> {spec.outputs[0]}")
    lo, hi = QRANGE[out]
    away = spec.attrs["rounding"] == "half_away"
    bound = float(1 << 20)

    def element(b: ir.IRBuilder, src: ir.Value, index: ir.Value, scale: ir.Value, zero_point: ir.Value) -> ir.Value:
        v = b.fdiv(b.load(element_ptr(b, src, index), typ=F32, align=4), scale)
        r = float_to_nearest_i32(b, v, -bound, bound)
        if away:  # a tie rounded toward zero by half-even moves one step away from zero
            diff = b.fsub(v, b.sitofp(r, F32))
            positive, negative = (b.fcmp_ordered(cmp, v, ir.Constant(F32, 0.0)) for cmp in (">", "<"))
            up = b.and_(b.fcmp_ordered("==", diff, ir.Constant(F32, 0.5)), positive)
            down = b.and_(b.fcmp_ordered("==", diff, ir.Constant(F32, -0.5)), negative)
            r = b.sub(b.add(r, b.zext(up, I32)), b.zext(down, I32))
        return clamp_i32(b, b.add(r, zero_point), lo, hi)

    return _build_scale_kernel(spec, module, target, element, store_q)


def build_dequantize(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    """y = f32(x - zero_point) * scale."""
    dtype = spec.inputs[0].dtype
    if dtype not in (DType.i8, DType.u8, DType.i32) or spec.outputs[0].dtype != DType.f32:
        raise ValueError(f"dequantize kernel {spec.name}: wants i8/u8/i32 -> f32, got {spec.inputs[0]} -> "
                         f"{spec.outputs[0]}")

    def element(b: ir.IRBuilder, src: ir.Value, index: ir.Value, scale: ir.Value, zero_point: ir.Value) -> ir.Value:
        return b.fmul(b.sitofp(b.sub(load_q(b, src, index, dtype), zero_point), F32), scale)

    def store(b: ir.IRBuilder, value: ir.Value, dst: ir.Value, index: ir.Value) -> None:
        b.store(value, element_ptr(b, dst, index), align=4)

    return _build_scale_kernel(spec, module, target, element, store)


def build_qadd(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    """TFLite's int8 ADD: each input rescaled to a common fixed-point scale, summed, rescaled."""
    if len(spec.inputs) != 2 or len(spec.outputs) != 1:
        raise ValueError(f"qadd kernel {spec.name}: expects 2 inputs and 1 output")
    a_t, b_t, out_t = spec.inputs[0], spec.inputs[1], spec.outputs[0]
    if a_t.dtype not in QRANGE or b_t.dtype not in QRANGE or out_t.dtype not in QRANGE:
        raise ValueError(f"qadd kernel {spec.name}: wants i8/u8 operands, got {a_t}, {b_t} -> {out_t}")
    out_shape = static_shape(out_t, f"qadd kernel {spec.name} output")
    strides = [broadcast_strides(static_shape(t, f"qadd kernel {spec.name}"), out_shape, f"qadd kernel {spec.name}")
               for t in (a_t, b_t)]
    shape, (out_strides, a_strides, b_strides) = collapse_dims(out_shape, [strides_of(out_shape), *strides])
    at = spec.attrs
    left_shift = int(at["left_shift"])

    def scaled(b: ir.IRBuilder, value: ir.Value, zero_point: int, multiplier: int, shift: int) -> ir.Value:
        shifted = b.shl(b.sub(value, i32(zero_point)), i32(left_shift))
        return multiply_smaller_than_one(b, shifted, multiplier, shift)

    kb = begin_kernel(module, spec.name, target)
    a_buf, b_buf, dst = kb.binding(0), kb.binding(1), kb.binding(2)
    row_shape, cols = shape[:-1], shape[-1]

    def row_body(b: ir.IRBuilder, row: ir.Value, col_begin: ir.Value, col_end: ir.Value) -> None:
        a_off, b_off, rest = const_i64(0), const_i64(0), row
        for axis in range(len(row_shape) - 1, -1, -1):
            idx = b.urem(rest, const_i64(row_shape[axis]))
            rest = b.udiv(rest, const_i64(row_shape[axis]))
            a_off = b.add(a_off, b.mul(idx, const_i64(a_strides[axis])))
            b_off = b.add(b_off, b.mul(idx, const_i64(b_strides[axis])))
        with for_range(b, col_begin, col_end, name="col") as col:
            av = load_q(b, a_buf, b.add(a_off, b.mul(col, const_i64(a_strides[-1]))), a_t.dtype)
            bv = load_q(b, b_buf, b.add(b_off, b.mul(col, const_i64(b_strides[-1]))), b_t.dtype)
            total = b.add(scaled(b, av, int(at["a_zero_point"]), int(at["a_multiplier"]), int(at["a_shift"])),
                          scaled(b, bv, int(at["b_zero_point"]), int(at["b_multiplier"]), int(at["b_shift"])))
            y = b.add(multiply_smaller_than_one(b, total, int(at["y_multiplier"]), int(at["y_shift"])),
                      i32(int(at["y_zero_point"])))
            store_q(b, clamp_i32(b, y, int(at["act_min"]), int(at["act_max"])), dst,
                    b.add(b.mul(row, const_i64(cols)), col))

    rows = math.prod(row_shape)
    grid = emit_row_grid(kb, rows, cols, row_body)
    kb.finish()
    return KernelInfo(spec.name, grid, (), (a_t.num_bytes, b_t.num_bytes, out_t.num_bytes))
