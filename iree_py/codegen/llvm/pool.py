"""Pooling kernels over NCHW: "maxpool", "avgpool", "lppool" (2-D windows, pool_window.py) and
"globalavgpool" (any rank).

One workgroup per (n, c) plane. Window positions outside the input are skipped: maxpool ignores
padding (as -inf); avgpool divides by the window elements inside the padded input
(count_include_pad=1; windows hanging past it in ceil_mode are clipped) or inside the real input
(count_include_pad=0), as onnxruntime does; lppool sums |x|^p (padding adds 0) and takes the p-th root.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (F32, I32, I64, begin_kernel, const_i64, element_ptr, lanes_f32, load_f32, splat, static_shape,
                                         store_f32)
from iree_py.codegen.llvm.math import fmax
from iree_py.codegen.llvm.math_core import emit_pow, fabs, fsqrt
from iree_py.codegen.llvm.pool_window import Window, WindowAt, for_each_window, window_count
from iree_py.codegen.llvm.reduce import reduce_row
from iree_py.ir.types import DType


def _check_io(spec: KernelSpec, out_dtype: DType = DType.f32) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{spec.kind} kernel {spec.name}: expects 1 input and 1 output")
    if spec.inputs[0].dtype != DType.f32 or spec.outputs[0].dtype != out_dtype:
        raise CompileError(f"{spec.kind} kernel {spec.name}: only f32 is supported, got {spec.inputs[0]}")
    x = static_shape(spec.inputs[0], f"{spec.kind} kernel {spec.name} input")
    y = static_shape(spec.outputs[0], f"{spec.kind} kernel {spec.name} output")
    if len(x) < 3 or x[:2] != y[:2] or len(x) != len(y):
        raise ValueError(f"{spec.kind} kernel {spec.name}: input {x} and output {y} must be [N, C, ...] alike")
    return x, y


def pooled_size(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int, dilation: int,
                ceil_mode: int) -> int:
    """ONNX output size; in ceil_mode a last window starting past the padded input is dropped."""
    span = size + pad_begin + pad_end - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def _lp_power(b: ir.IRBuilder, v: ir.Value, p: int) -> ir.Value:
    """|v| ** p for an integer p >= 1, by repeated multiplication."""
    magnitude = fabs(b, v)
    result = magnitude
    for _ in range(p - 1):
        result = b.fmul(result, magnitude)
    return result


def _lp_root(b: ir.IRBuilder, total: ir.Value, p: int) -> ir.Value:
    if p == 1:
        return total
    if p == 2:
        return fsqrt(b, total)
    return emit_pow(b, total, splat(1.0 / p, F32))  # total >= 0; exp(log(0) / p) = 0


def _build_window_pool(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    x_shape, _ = _check_io(spec)
    if len(x_shape) != 4:
        raise ValueError(f"{spec.kind} kernel {spec.name}: only 2-D pooling (NCHW) is supported, got {x_shape}")
    win = Window.of(spec, dilated=spec.kind in ("maxpool", "lppool", "avgpool"))
    include_pad = int(spec.attrs.get("count_include_pad", 0))
    p = int(spec.attrs.get("p", 2))

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)

    def combine(acc: ir.Value, index: ir.Value) -> ir.Value:
        v = load_f32(b, src, index)
        if spec.kind == "maxpool":
            return fmax(b, v, acc)
        if spec.kind == "lppool":
            return b.fadd(acc, _lp_power(b, v, p))
        return b.fadd(acc, v)

    def finish(result: ir.Value, at: WindowAt) -> None:
        if spec.kind == "avgpool":
            # The window count fits i32; converting an i32 needs no compiler builtin on 32-bit targets.
            count = b.sitofp(b.trunc(window_count(b, win, at, include_pad), I32), F32)
            result = b.fdiv(result, count)
        elif spec.kind == "lppool":
            result = _lp_root(b, result, p)
        store_f32(b, result, dst, at.out_index)

    start = splat(float("-inf") if spec.kind == "maxpool" else 0.0, F32)
    for_each_window(b, kb.workgroup_id_index(0), win, start, combine, finish)
    kb.finish()
    n, c = x_shape[:2]
    return KernelInfo(spec.name, (n * c, 1, 1), (), (spec.inputs[0].num_bytes, spec.outputs[0].num_bytes))


def _build_max_index(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    """Each window's first maximum's flat index in X: the accumulator is {max, index}, a tap
    replaces it only when strictly greater (row-major index; storage_order 1 swaps H and W)."""
    x_shape, _ = _check_io(spec, DType.i64)
    win = Window.of(spec, dilated=True)
    column_major = int(spec.attrs.get("storage_order", 0))
    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    pair = ir.LiteralStructType([F32, I64])

    def combine(acc: ir.Value, index: ir.Value) -> ir.Value:
        v = load_f32(b, src, index)
        greater = b.fcmp_ordered(">", v, b.extract_value(acc, 0))
        acc = b.insert_value(acc, b.select(greater, v, b.extract_value(acc, 0)), 0)
        return b.insert_value(acc, b.select(greater, index, b.extract_value(acc, 1)), 1)

    def finish(result: ir.Value, at: WindowAt) -> None:
        index = b.extract_value(result, 1)
        if column_major:  # plane base + w * H + h
            plane_size = const_i64(win.h * win.w)
            offset = b.srem(index, plane_size)
            h, w = b.sdiv(offset, const_i64(win.w)), b.srem(offset, const_i64(win.w))
            index = b.add(b.sub(index, offset), b.add(b.mul(w, const_i64(win.h)), h))
        b.store(index, element_ptr(b, dst, at.out_index, I64))

    start = ir.Constant(pair, [ir.Constant(F32, float("-inf")), ir.Constant(I64, 0)])
    for_each_window(b, kb.workgroup_id_index(0), win, start, combine, finish)
    kb.finish()
    n, c = x_shape[:2]
    return KernelInfo(spec.name, (n * c, 1, 1), (), (spec.inputs[0].num_bytes, spec.outputs[0].num_bytes))


def _build_global_avg(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    x_shape, y_shape = _check_io(spec)
    if any(d != 1 for d in y_shape[2:]):
        raise ValueError(f"globalavgpool kernel {spec.name}: output {y_shape} must be [N, C, 1, ...]")
    plane_size = 1
    for d in x_shape[2:]:
        plane_size *= d
    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    plane = kb.workgroup_id_index(0)
    total = reduce_row(b, src, b.mul(plane, const_i64(plane_size)), plane_size, lanes_f32(target), 0.0,
                       lambda b, x, y: b.fadd(x, y), lambda x, idx: x)
    store_f32(b, b.fdiv(total, splat(float(plane_size), F32)), dst, plane)
    kb.finish()
    return KernelInfo(spec.name, (x_shape[0] * x_shape[1], 1, 1), (),
                      (spec.inputs[0].num_bytes, spec.outputs[0].num_bytes))


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    if spec.kind == "maxpool" and spec.inputs and spec.inputs[0].dtype in (DType.i8, DType.u8):
        from iree_py.codegen.llvm import qpool  # quant: integer max pooling
        return qpool.build(spec, module, target)
    if spec.kind == "globalavgpool":
        return _build_global_avg(spec, module, target)
    if spec.kind in ("maxpool", "avgpool", "lppool"):
        return _build_window_pool(spec, module, target)
    if spec.kind == "maxpool_index":
        return _build_max_index(spec, module, target)
    raise ValueError(f"pool kernel {spec.name}: unsupported kind {spec.kind!r}")


