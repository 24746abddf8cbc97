"""The "softmax" and "logsoftmax" kernels on f64 (softmax.py hands f64 specs here), static shapes.

The input is seen as [outer, axis, inner]; one workgroup per outer index, scalar double loops over
the inner positions (no vectors). Same formulas as the f32 kernels, in double precision:
softmax = exp(x - max) / sum(exp(x - max)); logsoftmax = x - max - log(sum(exp(x - max))), with
exp/log from math_f64.py (< 1 ulp). An axis whose max is infinite gives NaN, as onnxruntime does.
"""
from __future__ import annotations

import math

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import begin_kernel, const_i64, entry_alloca, for_range, static_shape
from iree_py.codegen.llvm.math_f64 import exp_f64, log_f64
from iree_py.codegen.llvm.reduce_f64 import F64, d, load_f64, store_f64
from iree_py.targets import Target
from iree_py.ir.types import DType


def build(spec: KernelSpec, module: ir.Module, target: Target, log: bool) -> KernelInfo:
    what = f"{'logsoftmax' if log else 'softmax'} kernel {spec.name} (f64)"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    if spec.inputs[0].dtype != DType.f64 or spec.outputs[0].dtype != DType.f64:
        raise ValueError(f"{what}: wants f64 -> f64, got {spec.inputs[0]} -> {spec.outputs[0]}")
    shape = static_shape(spec.inputs[0], what)
    if static_shape(spec.outputs[0], what) != shape:
        raise ValueError(f"{what}: output {spec.outputs[0]} differs from input {spec.inputs[0]}")
    axis = int(spec.attrs.get("axis", len(shape) - 1))
    if not 0 <= axis < max(len(shape), 1):
        raise ValueError(f"{what}: axis {axis} out of range for rank {len(shape)}")
    length = shape[axis] if shape else 1
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    if log and length == 0:
        raise ValueError(f"{what}: empty axis in {spec.inputs[0]}")

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    base = b.mul(kb.workgroup_id_index(0), const_i64(length * inner))
    with for_range(b, 0, inner, name="c") as col:
        def at(j: ir.Value) -> ir.Value:
            return b.add(b.add(base, b.mul(j, const_i64(inner))), col)

        mx = entry_alloca(b, F64, "mx")
        b.store(d(float("-inf")), mx)
        with for_range(b, 0, length, name="m") as j:
            x = load_f64(b, src, at(j))
            b.store(b.select(b.fcmp_ordered("<", b.load(mx), x), x, b.load(mx)), mx)
        row_max = b.load(mx)
        total = entry_alloca(b, F64, "total")
        b.store(d(0.0), total)
        with for_range(b, 0, length, name="e") as j:
            e = exp_f64(b, b.fsub(load_f64(b, src, at(j)), row_max))
            if not log:
                store_f64(b, e, dst, at(j))
            b.store(b.fadd(b.load(total), e), total)
        if log:
            offset = b.fadd(row_max, log_f64(b, b.load(total)))
            with for_range(b, 0, length, name="n") as j:
                store_f64(b, b.fsub(load_f64(b, src, at(j)), offset), dst, at(j))
        else:
            inv = b.fdiv(d(1.0), b.load(total))
            with for_range(b, 0, length, name="n") as j:
                store_f64(b, b.fmul(load_f64(b, dst, at(j)), inv), dst, at(j))
    kb.finish()
    nbytes = spec.inputs[0].num_bytes
    return KernelInfo(spec.name, (outer, 1, 1), (), (nbytes, nbytes))
