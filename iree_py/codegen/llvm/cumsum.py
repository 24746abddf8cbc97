"""The "cumsum" kernel: running f32 sums along attrs axis (exclusive: each output leaves out its
own element; reverse: sums run from the end). Seen as [outer, n, inner]; one workgroup per outer
index, the inner columns summed side by side."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.argminmax import axis_view
from iree_py.codegen.llvm.common import (F32, begin_kernel, const_f32, const_i64, entry_alloca, for_range, load_f32,
                                         static_shape, store_f32)
from iree_py.ir.types import DType


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    what = f"cumsum kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    if spec.inputs[0].dtype != DType.f32 or spec.outputs[0] != spec.inputs[0]:
        raise ValueError(f"{what}: wants f32 in and out of the same shape, got {spec.inputs[0]} -> {spec.outputs[0]}")
    outer, n, inner = axis_view(static_shape(spec.inputs[0], what), int(spec.attrs["axis"]), what)
    exclusive, reverse = bool(spec.attrs.get("exclusive", 0)), bool(spec.attrs.get("reverse", 0))

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    acc = entry_alloca(b, F32)
    base = b.mul(kb.workgroup_id_index(0), const_i64(n * inner))
    if n and inner:
        with for_range(b, 0, inner, name="col") as col:
            b.store(const_f32(0.0), acc)
            with for_range(b, 0, n, name="j") as j:
                k = b.sub(const_i64(n - 1), j) if reverse else j
                at = b.add(base, b.add(b.mul(k, const_i64(inner)), col))
                total = b.fadd(b.load(acc), load_f32(b, src, at))
                store_f32(b, b.load(acc) if exclusive else total, dst, at)
                b.store(total, acc)
    kb.finish()
    return KernelInfo(spec.name, (max(outer, 1), 1, 1), (), (spec.inputs[0].num_bytes, spec.outputs[0].num_bytes))
