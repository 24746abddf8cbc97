"""The "cumsum" and "cumprod" kernels: running sums / products along attrs axis (exclusive: each
output leaves out its own element; reverse: they run from the end). f32, f64, i32 and i64, computed
in the element type (integers wrap). Seen as [outer, n, inner]; one workgroup per outer index, the
inner columns accumulated side by side."""
from __future__ import annotations

from typing import Callable

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.argminmax import axis_view
from iree_py.codegen.llvm.common import begin_kernel, const_i64, element_ptr, entry_alloca, for_range, static_shape
from iree_py.ir.types import DType

ELEMENT_TYPES: dict[DType, ir.Type] = {DType.f32: ir.FloatType(), DType.f64: ir.DoubleType(),
                                       DType.i32: ir.IntType(32), DType.i64: ir.IntType(64)}

# kind -> (identity, combine(builder, accumulated, element, is_float))
Combine = Callable[[ir.IRBuilder, ir.Value, ir.Value, bool], ir.Value]
ACCUMULATIONS: dict[str, tuple[int, Combine]] = {
    "cumsum": (0, lambda b, acc, x, is_float: b.fadd(acc, x) if is_float else b.add(acc, x)),
    "cumprod": (1, lambda b, acc, x, is_float: b.fmul(acc, x) if is_float else b.mul(acc, x)),
}


def _build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    what = f"{spec.kind} kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    dtype = spec.inputs[0].dtype
    if dtype not in ELEMENT_TYPES or spec.outputs[0] != spec.inputs[0]:
        raise ValueError(f"{what}: wants f32, f64, i32 or i64 in and the same type out, "
                         f"got {spec.inputs[0]} -> {spec.outputs[0]}")
    elem = ELEMENT_TYPES[dtype]
    is_float = isinstance(elem, (ir.FloatType, ir.DoubleType))
    identity, combine = ACCUMULATIONS[spec.kind]
    align = min(dtype.itemsize, 4)
    outer, n, inner = axis_view(static_shape(spec.inputs[0], what), int(spec.attrs["axis"]), what)
    exclusive, reverse = bool(spec.attrs.get("exclusive", 0)), bool(spec.attrs.get("reverse", 0))

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    acc = entry_alloca(b, elem)
    base = b.mul(kb.workgroup_id_index(0), const_i64(n * inner))
    if n and inner:
        with for_range(b, 0, inner, name="col") as col:
            b.store(ir.Constant(elem, float(identity) if is_float else identity), acc)
            with for_range(b, 0, n, name="j") as j:
                k = b.sub(const_i64(n - 1), j) if reverse else j
                at = b.add(base, b.add(b.mul(k, const_i64(inner)), col))
                before = b.load(acc)
                total = combine(b, before, b.load(element_ptr(b, src, at, elem), typ=elem, align=align), is_float)
                b.store(before if exclusive else total, element_ptr(b, dst, at, elem), align=align)
                b.store(total, acc)
    kb.finish()
    return KernelInfo(spec.name, (max(outer, 1), 1, 1), (), (spec.inputs[0].num_bytes, spec.outputs[0].num_bytes))


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    """Kind "cumsum"."""
    return _build(spec, module, target)


def build_cumprod(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    """Kind "cumprod"."""
    return _build(spec, module, target)
