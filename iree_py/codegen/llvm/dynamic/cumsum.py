"""The "cumsum" and "cumprod" kernels for symbolic dims (codegen/llvm/cumsum.py is the static
kernel): running sums / products along attrs axis (exclusive, reverse: 0/1), f32, f64, i32, i64
computed in the element type. Seen as [outer, n, inner]; one workgroup per outer index (none when
outer is 0), the inner columns accumulated side by side."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import const_i64, element_ptr, entry_alloca, for_range
from iree_py.codegen.llvm.cumsum import ACCUMULATIONS, ELEMENT_TYPES
from iree_py.codegen.llvm.dynamic.common import begin_dynamic_kernel
from iree_py.codegen.llvm.dynamic.copy_common import product, require_same_dims
from iree_py.targets import Target


def _build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"{spec.kind} kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    in_t, out_t = spec.inputs[0], spec.outputs[0]
    if in_t.dtype not in ELEMENT_TYPES or out_t.dtype != in_t.dtype or out_t.rank != in_t.rank:
        raise ValueError(f"{what}: wants f32, f64, i32 or i64 in and the same type out, got {in_t} -> {out_t}")
    axis = int(spec.attrs["axis"])
    if not 0 <= axis < in_t.rank:
        raise ValueError(f"{what}: axis {axis} out of range for {in_t}")
    elem = ELEMENT_TYPES[in_t.dtype]
    is_float = isinstance(elem, (ir.FloatType, ir.DoubleType))
    identity, combine = ACCUMULATIONS[spec.kind]
    align = min(in_t.dtype.itemsize, 4)
    exclusive, reverse = bool(spec.attrs.get("exclusive", 0)), bool(spec.attrs.get("reverse", 0))
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    require_same_dims(dk, [(i, o, f"output dim {k}") for k, (i, o) in enumerate(zip(in_t.shape, out_t.shape))], what)
    outer_d = product(in_t.shape[:axis])
    n, inner = dk.dim(in_t.shape[axis]), dk.dim(product(in_t.shape[axis + 1:]))
    src, dst = dk.binding(0), dk.binding(1)
    acc = entry_alloca(b, elem)
    base = b.mul(dk.workgroup_id_index(0), b.mul(n, inner))
    last = b.sub(n, const_i64(1))
    with for_range(b, 0, inner, name="col") as col:
        b.store(ir.Constant(elem, float(identity) if is_float else identity), acc)
        with for_range(b, 0, n, name="j") as j:
            k = b.sub(last, j) if reverse else j
            at = b.add(base, b.add(b.mul(k, inner), col))
            before = b.load(acc)
            total = combine(b, before, b.load(element_ptr(b, src, at, elem), typ=elem, align=align), is_float)
            b.store(before if exclusive else total, element_ptr(b, dst, at, elem), align=align)
            b.store(total, acc)
    dk.finish()
    return dk.info(workgroup_count=(outer_d, 1, 1))


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    """Kind "cumsum"."""
    return _build(spec, module, target)


def build_cumprod(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    """Kind "cumprod"."""
    return _build(spec, module, target)
