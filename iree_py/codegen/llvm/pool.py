"""Pooling kernels over NCHW: "maxpool", "avgpool" (2-D windows) and "globalavgpool" (any rank).

One workgroup per (n, c) plane. Window positions outside the input are skipped: maxpool ignores
padding (as -inf); avgpool divides by the window elements inside the padded input
(count_include_pad=1; windows hanging past it in ceil_mode are clipped) or inside the real input
(count_include_pad=0), as onnxruntime does.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (F32, I32, begin_kernel, const_i64, entry_alloca, for_range, lanes_f32,
                                         load_f32, max_index, min_index, splat, static_shape, store_f32)
from iree_py.codegen.llvm.math import fmax
from iree_py.codegen.llvm.reduce import reduce_row
from iree_py.ir.types import DType


def _ints(spec: KernelSpec, name: str, count: int, default: int) -> tuple[int, ...]:
    values = tuple(int(v) for v in spec.attrs.get(name, (default,) * count))
    if len(values) != count:
        raise ValueError(f"{spec.kind} kernel {spec.name}: attribute {name} needs {count} values, got {values}")
    return values


def _check_io(spec: KernelSpec) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{spec.kind} kernel {spec.name}: expects 1 input and 1 output")
    if spec.inputs[0].dtype != DType.f32 or spec.outputs[0].dtype != DType.f32:
        raise ValueError(f"{spec.kind} kernel {spec.name}: only f32 is supported, got {spec.inputs[0]}")
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


def _build_window_pool(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    x_shape, y_shape = _check_io(spec)
    if len(x_shape) != 4:
        raise ValueError(f"{spec.kind} kernel {spec.name}: only 2-D pooling (NCHW) is supported, got {x_shape}")
    n, c, h, w = x_shape
    oh, ow = y_shape[2:]
    kh, kw = _ints(spec, "kernel", 2, 1)
    sh, sw = _ints(spec, "strides", 2, 1)
    pt, pl, pb, pr = _ints(spec, "pads", 4, 0)
    dh, dw = _ints(spec, "dilations", 2, 1) if spec.kind == "maxpool" else (1, 1)
    is_max = spec.kind == "maxpool"
    include_pad = int(spec.attrs.get("count_include_pad", 0))

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    plane = kb.workgroup_id_index(0)
    src_base = b.mul(plane, const_i64(h * w))
    dst_base = b.mul(plane, const_i64(oh * ow))
    acc = entry_alloca(b, F32)
    zero = const_i64(0)
    with for_range(b, 0, oh, name="oh") as y:
        hs = b.sub(b.mul(y, const_i64(sh)), const_i64(pt))
        with for_range(b, 0, ow, name="ow") as x:
            ws = b.sub(b.mul(x, const_i64(sw)), const_i64(pl))
            b.store(splat(float("-inf") if is_max else 0.0, F32), acc)
            with for_range(b, 0, kh, name="kh") as i:
                hh = b.add(hs, b.mul(i, const_i64(dh)))
                with b.if_then(b.icmp_unsigned("<", hh, const_i64(h))):
                    with for_range(b, 0, kw, name="kw") as j:
                        ww = b.add(ws, b.mul(j, const_i64(dw)))
                        with b.if_then(b.icmp_unsigned("<", ww, const_i64(w))):
                            v = load_f32(b, src, b.add(src_base, b.add(b.mul(hh, const_i64(w)), ww)))
                            b.store(fmax(b, v, b.load(acc)) if is_max else b.fadd(b.load(acc), v), acc)
            result = b.load(acc)
            if not is_max:
                if include_pad:
                    rows = b.sub(min_index(b, b.add(hs, const_i64(kh)), const_i64(h + pb)), hs)
                    cols = b.sub(min_index(b, b.add(ws, const_i64(kw)), const_i64(w + pr)), ws)
                else:
                    rows = b.sub(min_index(b, b.add(hs, const_i64(kh)), const_i64(h)), max_index(b, hs, zero))
                    cols = b.sub(min_index(b, b.add(ws, const_i64(kw)), const_i64(w)), max_index(b, ws, zero))
                # The window count fits i32; converting an i32 needs no compiler builtin on 32-bit targets.
                count = b.sitofp(b.trunc(b.mul(rows, cols), I32), F32)
                result = b.fdiv(result, count)
            store_f32(b, result, dst, b.add(dst_base, b.add(b.mul(y, const_i64(ow)), x)))
    kb.finish()
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
    if spec.kind in ("maxpool", "avgpool"):
        return _build_window_pool(spec, module, target)
    raise ValueError(f"pool kernel {spec.name}: unsupported kind {spec.kind!r}")


