"""The "argmax" / "argmin" kernels for symbolic dims (codegen/llvm/argminmax.py is the static
kernel): the i64 index of the largest / smallest f32 along attrs axis, the first on ties (the last
with select_last_index). Seen as [outer, n, inner]; one workgroup per outer index (none when outer
is 0). An empty axis (n = 0) with a non-empty output has no answer: the kernel fails."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import F32, I64, const_i64, element_ptr, entry_alloca, for_range, load_f32
from iree_py.codegen.llvm.dynamic.common import begin_dynamic_kernel
from iree_py.codegen.llvm.dynamic.copy_common import fail_unless, product, require_same_dims
from iree_py.targets import Target
from iree_py.ir.types import DType


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"{spec.kind} kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    in_t, out_t = spec.inputs[0], spec.outputs[0]
    if in_t.dtype != DType.f32 or out_t.dtype != DType.i64:
        raise ValueError(f"{what}: wants f32 in and i64 out, got {in_t} -> {out_t}")
    axis = int(spec.attrs["axis"])
    if not 0 <= axis < in_t.rank:
        raise ValueError(f"{what}: axis {axis} out of range for {in_t}")
    last = bool(spec.attrs.get("select_last_index", 0))
    better = {"argmax": ">=" if last else ">", "argmin": "<=" if last else "<"}[spec.kind]
    outer_d, inner_d = product(in_t.shape[:axis]), product(in_t.shape[axis + 1:])
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    require_same_dims(dk, [(out_t.element_count, product((outer_d, inner_d)), "output elements")], what)
    n, inner = dk.dim(in_t.shape[axis]), dk.dim(inner_d)
    # Only workgroups that exist run: outer > 0 here, so n = 0 fails unless inner is 0.
    fail_unless(dk, b.or_(b.icmp_signed(">", n, const_i64(0)), b.icmp_signed("==", inner, const_i64(0))), "axis")
    src, dst = dk.binding(0), dk.binding(1)
    best, best_index = entry_alloca(b, F32, "best"), entry_alloca(b, I64, "best_index")
    o = dk.workgroup_id_index(0)
    base = b.mul(o, b.mul(n, inner))
    with for_range(b, 0, inner, name="col") as col:
        b.store(load_f32(b, src, b.add(base, col)), best)
        b.store(const_i64(0), best_index)
        with for_range(b, 1, n, name="j") as j:
            v = load_f32(b, src, b.add(base, b.add(b.mul(j, inner), col)))
            take = b.fcmp_ordered(better, v, b.load(best))
            b.store(b.select(take, v, b.load(best)), best)
            b.store(b.select(take, j, b.load(best_index)), best_index)
        b.store(b.load(best_index), element_ptr(b, dst, b.add(b.mul(o, inner), col), I64), align=4)
    dk.finish()
    return dk.info(workgroup_count=(outer_d, 1, 1))
