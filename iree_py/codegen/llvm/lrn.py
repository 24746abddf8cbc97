"""The "lrn" kernel (ONNX LRN) over X[N, C, ...]:
square_sum[c] = sum of x[c']^2 for c' in [c - floor((size-1)/2), c + ceil((size-1)/2)] within [0, C),
y = x / (bias + alpha / size * square_sum) ** beta, the power computed as exp(-beta * log(.)).
One workgroup per (n, c); the spatial positions are vectorized."""
from __future__ import annotations

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (F32, begin_kernel, const_i64, entry_alloca, float_vector, for_range,
                                         lanes_f32, load_f32, max_index, min_index, splat, static_shape,
                                         store_f32, vector_split)
from iree_py.codegen.llvm.math import emit_pow
from iree_py.ir.types import DType


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"lrn kernel {spec.name}: expects 1 input and 1 output")
    if spec.inputs[0].dtype != DType.f32:
        raise CompileError(f"lrn kernel {spec.name}: only f32 is supported, got {spec.inputs[0]}")
    shape = static_shape(spec.inputs[0], f"lrn kernel {spec.name}")
    if len(shape) < 2 or static_shape(spec.outputs[0], f"lrn kernel {spec.name}") != shape:
        raise ValueError(f"lrn kernel {spec.name}: input {shape} must be [N, C, ...] and match the output")
    for name in ("size", "alpha", "beta", "bias"):
        if name not in spec.attrs:
            raise ValueError(f"lrn kernel {spec.name}: missing attribute {name!r}")
    size = int(spec.attrs["size"])
    alpha, beta, bias = (float(spec.attrs[k]) for k in ("alpha", "beta", "bias"))
    n, c = shape[:2]
    inner = 1
    for d in shape[2:]:
        inner *= d
    before, after = (size - 1) // 2, -(-(size - 1) // 2)
    lanes = lanes_f32(target)
    vec_inner, _ = vector_split(inner, lanes)

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    plane = kb.workgroup_id_index(0)
    channel = b.urem(plane, const_i64(c))
    batch_base = b.mul(b.udiv(plane, const_i64(c)), const_i64(c * inner))
    c_lo = max_index(b, b.sub(channel, const_i64(before)), const_i64(0))
    c_hi = min_index(b, b.add(channel, const_i64(after + 1)), const_i64(c))
    plane_base = b.mul(plane, const_i64(inner))

    def emit_positions(start: int, stop: int, ty: ir.Type, step: int) -> None:
        acc = entry_alloca(b, ty, name="square_sum")
        with for_range(b, start, stop, step=step, name="p") as p:
            b.store(splat(0.0, ty), acc)
            with for_range(b, c_lo, c_hi, name="cc") as cc:
                v = load_f32(b, src, b.add(b.add(batch_base, b.mul(cc, const_i64(inner))), p), ty)
                b.store(b.fadd(b.load(acc), b.fmul(v, v)), acc)
            base = b.fadd(splat(bias, ty), b.fmul(splat(alpha / size, ty), b.load(acc)))
            x = load_f32(b, src, b.add(plane_base, p), ty)
            store_f32(b, b.fmul(x, emit_pow(b, base, splat(-beta, ty))), dst, b.add(plane_base, p))

    if vec_inner:
        emit_positions(0, vec_inner, float_vector(lanes), lanes)
    emit_positions(vec_inner, inner, F32, 1)
    kb.finish()
    nbytes = spec.inputs[0].num_bytes
    return KernelInfo(spec.name, (n * c, 1, 1), (), (nbytes, nbytes))
