"""The "cumsum" and "cumprod" kernels: running sums / products along attrs axis (exclusive: each
output leaves out its own element; reverse: they run from the end). f32, f64, i32 and i64, computed
in the element type (integers wrap). Seen as [outer, n, inner]; one workgroup per outer index (none
when outer is 0), the inner columns accumulated side by side.

Dims are ints or Exprs (one builder for both, docs/dynamic_shapes.md §3): an int folds to a
constant, an Expr is computed from the push constants (`DynamicKernel.dim`); output dims the spec
cannot prove equal to the input's are checked in the kernel, which then refuses the dispatch.
"""
from __future__ import annotations

from typing import Callable

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import const_i64, element_ptr, entry_alloca, for_range
from iree_py.codegen.llvm.dims import Agreements, begin_dynamic_kernel, product
from iree_py.targets import Target
from iree_py.ir.types import DType

ELEMENT_TYPES: dict[DType, ir.Type] = {DType.f32: ir.FloatType(), DType.f64: ir.DoubleType(),
                                       DType.i32: ir.IntType(32), DType.i64: ir.IntType(64)}

# kind -> (identity, combine(builder, accumulated, element, is_float))
Combine = Callable[[ir.IRBuilder, ir.Value, ir.Value, bool], ir.Value]
ACCUMULATIONS: dict[str, tuple[int, Combine]] = {
    "cumsum": (0, lambda b, acc, x, is_float: b.fadd(acc, x) if is_float else b.add(acc, x)),
    "cumprod": (1, lambda b, acc, x, is_float: b.fmul(acc, x) if is_float else b.mul(acc, x)),
}


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
    agree = Agreements(what)
    for k, (i, o) in enumerate(zip(in_t.shape, out_t.shape)):
        agree.equal(o, i, f"output dim {k} (vs the input's)")
    elem = ELEMENT_TYPES[in_t.dtype]
    is_float = isinstance(elem, (ir.FloatType, ir.DoubleType))
    identity, combine = ACCUMULATIONS[spec.kind]
    align = min(in_t.dtype.itemsize, 4)
    exclusive, reverse = bool(spec.attrs.get("exclusive", 0)), bool(spec.attrs.get("reverse", 0))
    n_d, inner_d = in_t.shape[axis], product(in_t.shape[axis + 1:])

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    agree.emit(dk)
    n, inner = dk.dim(n_d), dk.dim(inner_d)
    src, dst = dk.binding(0), dk.binding(1)
    acc = entry_alloca(b, elem)
    base = b.mul(dk.workgroup_id_index(0), dk.dim(product((n_d, inner_d))))
    last = dk.dim(n_d - 1)
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
    return dk.info(workgroup_count=(product(in_t.shape[:axis]), 1, 1))


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    """Kind "cumsum"."""
    return _build(spec, module, target)


def build_cumprod(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    """Kind "cumprod"."""
    return _build(spec, module, target)
