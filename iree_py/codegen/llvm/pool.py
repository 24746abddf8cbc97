"""Pooling kernels over NCHW: "maxpool", "maxpool_index", "avgpool", "lppool" (2-D windows,
pool_window.py) and "globalavgpool" (any rank).

N and the spatial dims are ints or Exprs (docs/dynamic_shapes.md §3); C, the window, strides, pads
and dilations are static. With symbolic H or W the output sizes are the spec's (the shape rules'
ceil_mode rule included); taps are clipped to the input, so every read stays inside X whatever
they are. One workgroup per (n, c) plane; an empty batch is an empty grid. Window positions outside the input are skipped: maxpool ignores
padding (as -inf); avgpool divides by the window elements inside the padded input
(count_include_pad=1; windows hanging past it in ceil_mode are clipped) or inside the real input
(count_include_pad=0), as onnxruntime does; lppool sums |x|^p (padding adds 0) and takes the p-th root.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (F32, I32, I64, as_index, const_i64, element_ptr, entry_alloca, float_vector, for_range,
                                         horizontal, lanes_f32, load_f32, splat, store_f32)
from iree_py.codegen.llvm.dims import begin_dynamic_kernel, product
from iree_py.codegen.llvm.math import fmax
from iree_py.codegen.llvm.math_core import emit_pow, fabs, fsqrt
from iree_py.codegen.llvm.epilogue import store_tile
from iree_py.codegen.llvm.pool_window import (VectorWindow, Window, WindowAt, for_each_window, size_product,
                                              window_count)
from iree_py.codegen.llvm.reduce import reduce_row
from iree_py.ir.symbols import dim
from iree_py.ir.types import DType, Dim


def _check_io(spec: KernelSpec, out_dtype: DType = DType.f32) -> tuple[tuple[Dim, ...], tuple[Dim, ...]]:
    what = f"{spec.kind} kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    if spec.inputs[0].dtype != DType.f32 or spec.outputs[0].dtype != out_dtype:
        raise CompileError(f"{what}: only f32 is supported, got {spec.inputs[0]} -> {spec.outputs[0]}")
    x, y = (tuple(dim(d) for d in t.shape) for t in (spec.inputs[0], spec.outputs[0]))
    if len(x) < 3 or x[:2] != y[:2] or len(x) != len(y):
        raise ValueError(f"{what}: input {x} and output {y} must be [N, C, ...] alike")
    if not isinstance(x[1], int):
        raise CompileError(f"{what}: the channel dim must be static, got {spec.inputs[0]}")
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


def _planes(x_shape: tuple[Dim, ...]) -> Dim:
    return product(x_shape[:2])


def _build_window_pool(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    x_shape, _ = _check_io(spec)
    if len(x_shape) != 4:
        raise ValueError(f"{spec.kind} kernel {spec.name}: only 2-D pooling (NCHW) is supported, got {x_shape}")
    include_pad = int(spec.attrs.get("count_include_pad", 0))
    p = int(spec.attrs.get("p", 2))
    if spec.kind == "lppool" and p < 1:
        raise ValueError(f"lppool kernel {spec.name}: p must be an integer >= 1, got {p}")

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    win = Window.of(spec, dilated=True, dk=dk)
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
            # The window count fits i32; converting an i32 needs no compiler builtin on 32-bit targets.
            count = b.sitofp(b.trunc(window_count(b, win, at, include_pad), I32), F32)
            result = b.fdiv(result, count)
        elif spec.kind == "lppool":
            result = _lp_root(b, result, p)
        store_f32(b, result, dst, at.out_index)

    initial = float("-inf") if spec.kind == "maxpool" else 0.0
    vector = None
    if spec.kind in ("maxpool", "avgpool"):
        lanes = lanes_f32(target)
        taps = float(win.kernel[0] * win.kernel[1])  # an interior window counts all its taps

        def combine_vector(acc: ir.Value, taps_value: ir.Value) -> ir.Value:
            return fmax(b, taps_value, acc) if spec.kind == "maxpool" else b.fadd(acc, taps_value)

        def finish_vector(result: ir.Value, out_index: ir.Value) -> None:
            if spec.kind == "avgpool":
                result = b.fdiv(result, splat(taps, float_vector(lanes)))
            store_tile(b, result, dst, out_index)
        vector = VectorWindow(src, lanes, splat(initial, float_vector(lanes)), combine_vector, finish_vector)
    for_each_window(b, dk.workgroup_id_index(0), win, splat(initial, F32), combine, finish, vector)
    dk.finish()
    return dk.info(workgroup_count=(_planes(x_shape), 1, 1))


def _build_max_index(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    """Each window's first maximum's flat index in X: the accumulator is {max, index}, a tap
    replaces it only when strictly greater (row-major index; storage_order 1 swaps H and W)."""
    x_shape, _ = _check_io(spec, DType.i64)
    if len(x_shape) != 4:
        raise ValueError(f"maxpool_index kernel {spec.name}: only 2-D pooling (NCHW) is supported, got {x_shape}")
    column_major = int(spec.attrs.get("storage_order", 0))
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    win = Window.of(spec, dilated=True, dk=dk)
    src, dst = dk.binding(0), dk.binding(1)
    pair = ir.LiteralStructType([F32, I64])

    def combine(acc: ir.Value, index: ir.Value) -> ir.Value:
        v = load_f32(b, src, index)
        greater = b.fcmp_ordered(">", v, b.extract_value(acc, 0))
        acc = b.insert_value(acc, b.select(greater, v, b.extract_value(acc, 0)), 0)
        return b.insert_value(acc, b.select(greater, index, b.extract_value(acc, 1)), 1)

    def finish(result: ir.Value, at: WindowAt) -> None:
        index = b.extract_value(result, 1)
        if column_major:  # plane base + w * H + h
            offset = b.srem(index, size_product(b, win.h, win.w))
            h, w = b.sdiv(offset, as_index(win.w)), b.srem(offset, as_index(win.w))
            index = b.add(b.sub(index, offset), b.add(b.mul(w, as_index(win.h)), h))
        b.store(index, element_ptr(b, dst, at.out_index, I64))

    start = ir.Constant(pair, [ir.Constant(F32, float("-inf")), ir.Constant(I64, 0)])
    for_each_window(b, dk.workgroup_id_index(0), win, start, combine, finish)
    dk.finish()
    return dk.info(workgroup_count=(_planes(x_shape), 1, 1))


def _build_global_avg(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    """The mean of each (n, c) plane: a known plane size goes through reduce_row (vector body,
    exact tail); a symbolic one through a vector loop with a run-time tail."""
    x_shape, y_shape = _check_io(spec)
    if any(d != 1 for d in y_shape[2:]):
        raise ValueError(f"globalavgpool kernel {spec.name}: output {y_shape} must be [N, C, 1, ...]")
    plane_size = product(x_shape[2:])
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    src, dst = dk.binding(0), dk.binding(1)
    plane = dk.workgroup_id_index(0)
    lanes = lanes_f32(target)
    if isinstance(plane_size, int):
        total = reduce_row(b, src, b.mul(plane, const_i64(plane_size)), plane_size, lanes, 0.0,
                           lambda b, x, y: b.fadd(x, y), lambda x, idx: x)
        store_f32(b, b.fdiv(total, splat(float(plane_size), F32)), dst, plane)
    else:
        size = dk.dim(plane_size)
        base = b.mul(plane, size)
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
    return dk.info(workgroup_count=(_planes(x_shape), 1, 1))


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


