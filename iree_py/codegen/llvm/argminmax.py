"""The "argmax" / "argmin" kernels: the index (i64) of the largest / smallest f32 along attrs axis,
the first one on ties (the last with select_last_index). Seen as [outer, n, inner]; one workgroup
per outer index, each inner column scanned once."""
from __future__ import annotations

import math

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (F32, I64, begin_kernel, const_i64, element_ptr, entry_alloca, for_range,
                                         load_f32, static_shape)
from iree_py.ir.types import DType


def axis_view(shape: tuple[int, ...], axis: int, what: str) -> tuple[int, int, int]:
    """(outer, n, inner) of `shape` around `axis`."""
    if not 0 <= axis < len(shape):
        raise ValueError(f"{what}: axis {axis} out of range for shape {list(shape)}")
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    what = f"{spec.kind} kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    if spec.inputs[0].dtype != DType.f32 or spec.outputs[0].dtype != DType.i64:
        raise ValueError(f"{what}: wants f32 in and i64 out, got {spec.inputs[0]} -> {spec.outputs[0]}")
    outer, n, inner = axis_view(static_shape(spec.inputs[0], what), int(spec.attrs["axis"]), what)
    if n == 0 or spec.outputs[0].num_elements != outer * inner:
        raise ValueError(f"{what}: output {spec.outputs[0]} should have {outer * inner} elements (axis size {n})")
    last = bool(spec.attrs.get("select_last_index", 0))
    if spec.kind == "argmax":
        better = ">=" if last else ">"
    else:
        better = "<=" if last else "<"

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    best, best_index = entry_alloca(b, F32, "best"), entry_alloca(b, I64, "best_index")
    o = kb.workgroup_id_index(0)
    base = b.mul(o, const_i64(n * inner))
    with for_range(b, 0, inner, name="col") as col:
        b.store(load_f32(b, src, b.add(base, col)), best)
        b.store(const_i64(0), best_index)
        with for_range(b, 1, n, name="j") as j:
            v = load_f32(b, src, b.add(base, b.add(b.mul(j, const_i64(inner)), col)))
            take = b.fcmp_ordered(better, v, b.load(best))
            b.store(b.select(take, v, b.load(best)), best)
            b.store(b.select(take, j, b.load(best_index)), best_index)
        out = element_ptr(b, dst, b.add(b.mul(o, const_i64(inner)), col), I64)
        b.store(b.load(best_index), out, align=4)
    kb.finish()
    return KernelInfo(spec.name, (max(outer, 1), 1, 1), (), (spec.inputs[0].num_bytes, spec.outputs[0].num_bytes))
