"""The "lrn" kernel (ONNX LRN) over X[N, C, ...]:
square_sum[c] = sum of x[c']^2 for c' in [c - floor((size-1)/2), c + ceil((size-1)/2)] within [0, C),
y = x / (bias + alpha / size * square_sum) ** beta, the power computed as exp(-beta * log(.)).
One workgroup per (n, c) plane (grid x = N * C); the spatial positions are vectorized, with a
scalar tail.

Dims are ints or Exprs (one builder for both, docs/dynamic_shapes.md §3): an int folds to a
constant (a known spatial size splits into vectors and tail at build time), an Expr is computed
from the push constants (`DynamicKernel.dim`).
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (const_i64, entry_alloca, for_columns, for_range, lanes_f32, load_f32,
                                         max_index, min_index, splat, store_f32)
from iree_py.codegen.llvm.dims import Agreements, begin_dynamic_kernel, product
from iree_py.codegen.llvm.math import emit_pow
from iree_py.targets import Target
from iree_py.ir.types import DType


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"lrn kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    x, y = spec.inputs[0], spec.outputs[0]
    if x.dtype != DType.f32 or y.dtype != DType.f32:
        raise CompileError(f"{what}: only f32 is supported, got {x} -> {y}")
    if x.rank < 2 or y.rank != x.rank:
        raise ValueError(f"{what}: input {x} must be [N, C, ...] and match the output {y}")
    for name in ("size", "alpha", "beta", "bias"):
        if name not in spec.attrs:
            raise ValueError(f"{what}: missing attribute {name!r}")
    agree = Agreements(what)
    for axis, (dx, dy) in enumerate(zip(x.shape, y.shape)):
        agree.equal(dy, dx, f"output dim {axis} (vs the input's)")
    size = int(spec.attrs["size"])
    alpha, beta, bias = (float(spec.attrs[k]) for k in ("alpha", "beta", "bias"))
    before, after = (size - 1) // 2, -(-(size - 1) // 2)
    lanes = lanes_f32(target)
    c_d, inner_d = x.shape[1], product(x.shape[2:])

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    agree.emit(dk)
    src, dst = dk.binding(0), dk.binding(1)
    c, inner = dk.dim(c_d), dk.dim(inner_d)
    plane = dk.workgroup_id_index(0)       # < N * C, so C > 0 here
    channel = b.urem(plane, c)
    batch_base = b.mul(b.udiv(plane, c), dk.dim(product((c_d, inner_d))))
    c_lo = max_index(b, b.sub(channel, const_i64(before)), const_i64(0))
    c_hi = min_index(b, b.add(channel, const_i64(after + 1)), c)
    plane_base = b.mul(plane, inner)

    def positions(ty: ir.Type, p: ir.Value) -> None:
        acc = entry_alloca(b, ty, name="square_sum")
        b.store(splat(0.0, ty), acc)
        with for_range(b, c_lo, c_hi, name="cc") as cc:
            v = load_f32(b, src, b.add(b.add(batch_base, b.mul(cc, inner)), p), ty)
            b.store(b.fadd(b.load(acc), b.fmul(v, v)), acc)
        base = b.fadd(splat(bias, ty), b.fmul(splat(alpha / size, ty), b.load(acc)))
        value = load_f32(b, src, b.add(plane_base, p), ty)
        store_f32(b, b.fmul(value, emit_pow(b, base, splat(-beta, ty))), dst, b.add(plane_base, p))

    for_columns(b, dk.index(inner_d), lanes, positions)
    dk.finish()
    return dk.info(workgroup_count=(product(x.shape[:2]), 1, 1))
