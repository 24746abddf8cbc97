"""The "argmax" / "argmin" kernels: the index (i64) of the largest / smallest f32 along attrs axis,
the first one on ties (the last with select_last_index). Seen as [outer, n, inner]; one workgroup
per outer index (none when outer is 0), each inner column scanned once.

Dims are ints or Exprs (one builder for both, docs/dynamic_shapes.md §3): an int folds to a
constant, an Expr is computed from the push constants (`DynamicKernel.dim`). An empty axis has no
answer: a known one is a build error; a symbolic one that is 0 at run time with a non-empty output
fails the dispatch.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_abi import STATUS_DISPATCH_REFUSED
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import F32, I64, const_i64, element_ptr, entry_alloca, for_range, load_f32, \
    return_unless
from iree_py.codegen.llvm.dims import Agreements, begin_dynamic_kernel, product
from iree_py.targets import Target
from iree_py.ir.types import Dim, DType


def axis_view(shape: tuple[Dim, ...], axis: int, what: str) -> tuple[Dim, Dim, Dim]:
    """(outer, n, inner) of `shape` around `axis` (ints when the shape is static)."""
    if not 0 <= axis < len(shape):
        raise ValueError(f"{what}: axis {axis} out of range for shape {list(shape)}")
    return product(shape[:axis]), shape[axis], product(shape[axis + 1:])


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"{spec.kind} kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    in_t, out_t = spec.inputs[0], spec.outputs[0]
    if in_t.dtype != DType.f32 or out_t.dtype != DType.i64:
        raise ValueError(f"{what}: wants f32 in and i64 out, got {in_t} -> {out_t}")
    outer_d, n_d, inner_d = axis_view(in_t.shape, int(spec.attrs["axis"]), what)
    if isinstance(n_d, int) and n_d == 0:
        raise ValueError(f"{what}: the axis of {in_t} is empty: no index to give")
    agree = Agreements(what)
    agree.equal(out_t.element_count, product((outer_d, inner_d)), "the output's element count")
    last = bool(spec.attrs.get("select_last_index", 0))
    better = {"argmax": ">=" if last else ">", "argmin": "<=" if last else "<"}[spec.kind]

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    agree.emit(dk)
    n, inner = dk.dim(n_d), dk.dim(inner_d)
    if not isinstance(n_d, int):
        # Only workgroups that exist run: outer > 0 here, so n = 0 fails unless inner is 0.
        has_answer = b.or_(b.icmp_signed(">", n, const_i64(0)), b.icmp_signed("==", inner, const_i64(0)))
        return_unless(b, has_answer, STATUS_DISPATCH_REFUSED, "axis")
    src, dst = dk.binding(0), dk.binding(1)
    best, best_index = entry_alloca(b, F32, "best"), entry_alloca(b, I64, "best_index")
    o = dk.workgroup_id_index(0)
    base = b.mul(o, dk.dim(product((n_d, inner_d))))
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
