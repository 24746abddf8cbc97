"""The "topk" kernel: the k largest (or smallest) f32 along attrs axis, in order, ties broken by
the lower index (ONNX). attrs result says which output this kernel writes: "values" (f32) or
"indices" (i64); a TopK with both outputs used is two kernels.

Seen as [outer, n, inner]; one workgroup per outer index. Each column is scanned k times: pass r
takes the best element that comes after pass r-1's pick in the order (value, then index), so no
scratch memory is needed (O(k n) per column, fine for the small k of detection heads)."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.argminmax import axis_view
from iree_py.codegen.llvm.common import (F32, I64, begin_kernel, const_f32, const_i64, element_ptr, entry_alloca,
                                         for_range, load_f32, static_shape, store_f32)
from iree_py.ir.types import DType


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    what = f"topk kernel {spec.name}"
    if spec.inputs and spec.inputs[0].dtype != DType.f32:  # other dtypes: the generic kernel
        from iree_py.codegen.llvm.dynamic.topk import build as build_generic
        return build_generic(spec, module, target)
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    result = spec.attrs.get("result")
    want = {"values": DType.f32, "indices": DType.i64}.get(result)
    if want is None or spec.inputs[0].dtype != DType.f32 or spec.outputs[0].dtype != want:
        raise ValueError(f"{what}: result {result!r} wants f32 in and {want} out, got {spec.inputs[0]} -> "
                         f"{spec.outputs[0]}")
    outer, n, inner = axis_view(static_shape(spec.inputs[0], what), int(spec.attrs["axis"]), what)
    k = int(spec.attrs["k"])
    if not 0 <= k <= n or spec.outputs[0].num_elements != outer * k * inner:
        raise ValueError(f"{what}: k {k} of axis size {n} does not give output {spec.outputs[0]}")
    largest = bool(spec.attrs.get("largest", 1))
    before, after = (">", "<") if largest else ("<", ">")

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    prev_v, prev_i = entry_alloca(b, F32, "prev_v"), entry_alloca(b, I64, "prev_i")
    best_v, best_i = entry_alloca(b, F32, "best_v"), entry_alloca(b, I64, "best_i")
    o = kb.workgroup_id_index(0)
    base = b.mul(o, const_i64(n * inner))
    out_base = b.mul(o, const_i64(k * inner))
    if k and inner:
        with for_range(b, 0, inner, name="col") as col:
            b.store(const_f32(float("inf") if largest else float("-inf")), prev_v)
            b.store(const_i64(-1), prev_i)
            with for_range(b, 0, k, name="r") as r:
                b.store(const_i64(-1), best_i)
                b.store(const_f32(0.0), best_v)
                with for_range(b, 0, n, name="j") as j:
                    v = load_f32(b, src, b.add(base, b.add(b.mul(j, const_i64(inner)), col)))
                    pv = b.load(prev_v)
                    eligible = b.or_(b.fcmp_ordered(after, v, pv),
                                     b.and_(b.fcmp_ordered("==", v, pv), b.icmp_signed(">", j, b.load(prev_i))))
                    better = b.or_(b.icmp_signed("<", b.load(best_i), const_i64(0)),
                                   b.fcmp_ordered(before, v, b.load(best_v)))
                    take = b.and_(eligible, better)
                    b.store(b.select(take, v, b.load(best_v)), best_v)
                    b.store(b.select(take, j, b.load(best_i)), best_i)
                b.store(b.load(best_v), prev_v)
                b.store(b.load(best_i), prev_i)
                at = b.add(out_base, b.add(b.mul(r, const_i64(inner)), col))
                if result == "values":
                    store_f32(b, b.load(best_v), dst, at)
                else:
                    b.store(b.load(best_i), element_ptr(b, dst, at, I64), align=4)
    kb.finish()
    return KernelInfo(spec.name, (max(outer, 1), 1, 1), (), (spec.inputs[0].num_bytes, spec.outputs[0].num_bytes))
