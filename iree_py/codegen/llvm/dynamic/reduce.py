"""The "reduce" kernel for symbolic dims: sum mean max min prod l1 l2 logsum logsumexp sumsquare
over a contiguous run of axes, seen as [outer, reduced, inner] (static kernel:
codegen/llvm/reduce_kernel.py, whose reducers this one uses).

One workgroup per outer index (grid x = outer). inner == 1 folds along the contiguous reduced run
with a vector accumulator; otherwise the inner positions are vectorized (both compiled when inner is
symbolic, chosen at run time). mean divides by the run-time count. An empty reduction (reduced = 0
at run time) gives the reducer's start value after its finish: sum 0, prod 1, max -inf, min +inf,
logsum and logsumexp -inf, mean NaN (0 / 0), as numpy's with an initial value.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (const_f32, const_i64, entry_alloca, for_range, lanes_f32, load_f32, splat,
                                         splat_value, store_f32)
from iree_py.codegen.llvm.dynamic.common import begin_dynamic_kernel
from iree_py.codegen.llvm.dynamic.linalg_common import (Agreements, count_to_f32, for_columns, product, static_value)
from iree_py.codegen.llvm.reduce import reduce_row
from iree_py.codegen.llvm.reduce_kernel import KINDS, REDUCERS, Reducer, _reduce
from iree_py.targets import Target
from iree_py.ir.types import Dim, DType


def collapse(shape: tuple[Dim, ...], axes: list[int], what: str) -> tuple[Dim, Dim, Dim]:
    """(outer, reduced, inner) of a reduction over a contiguous run of axes; a dim between the axes
    must be a known 1."""
    if not axes or axes != sorted(set(axes)) or not all(0 <= a < len(shape) for a in axes):
        raise ValueError(f"{what}: axes {axes} must be sorted, unique, non-empty and within rank {len(shape)}")
    gaps = [i for i in range(axes[0], axes[-1] + 1) if i not in axes and static_value(shape[i]) != 1]
    if gaps:
        raise ValueError(f"{what}: axes {axes} of shape {list(shape)} are not one contiguous run "
                         f"(dims {gaps} lie between them and are not 1); transpose first")
    reduced = product(shape[a] for a in axes)
    return product(shape[:axes[0]]), reduced, product(shape[axes[-1] + 1:])


def _fold_columns(b, src, at, length, ty, r: Reducer, value_of) -> ir.Value:
    acc = entry_alloca(b, ty)
    b.store(splat(r.init, ty), acc)
    with for_range(b, 0, length, name="r") as j:
        b.store(r.combine(b, b.load(acc), value_of(b, load_f32(b, src, at(j), ty))), acc)
    return b.load(acc)


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"reduce kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    x, y = spec.inputs[0], spec.outputs[0]
    if x.dtype != DType.f32 or y.dtype != DType.f32:
        raise CompileError(f"{what}: only f32 is supported, got {x} -> {y}")
    kind = spec.attrs.get("kind")
    if kind not in KINDS:
        raise ValueError(f"{what}: kind {kind!r} is not one of {list(KINDS)}")
    outer_d, reduced_d, inner_d = collapse(tuple(x.shape), [int(a) for a in spec.attrs["axes"]], what)
    agree = Agreements(what)
    agree.equal(y.element_count, product((outer_d, inner_d)), "the output's element count")
    lanes = lanes_f32(target)

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    agree.emit(dk)
    src, dst = dk.binding(0), dk.binding(1)
    reduced, inner = dk.dim(reduced_d), dk.dim(inner_d)
    o = dk.workgroup_id_index(0)
    base = b.mul(o, b.mul(reduced, inner))
    out_base = b.mul(o, inner)

    def finish(acc: ir.Value) -> ir.Value:
        if kind == "logsumexp":
            return acc
        if kind == "mean":
            inv = b.fdiv(const_f32(1.0), count_to_f32(b, reduced, target))
            return b.fmul(acc, splat_value(b, inv, acc.type))
        return REDUCERS[kind].finish(b, acc, 1)

    def by_rows() -> None:
        result = _reduce(b, kind, lambda r, value_of: reduce_row(b, src, base, reduced, lanes, r.init, r.combine,
                                                                 lambda v, idx: value_of(b, v)))
        store_f32(b, finish(result), dst, o)

    def by_columns() -> None:
        def body(ty: ir.Type, col: ir.Value) -> None:
            at = lambda j: b.add(b.add(base, b.mul(j, inner)), col)  # noqa: E731
            result = _reduce(b, kind, lambda r, value_of: _fold_columns(b, src, at, reduced, ty, r, value_of))
            store_f32(b, finish(result), dst, b.add(out_base, col))
        for_columns(b, inner, lanes, body)

    inner_static = static_value(inner_d)
    if inner_static == 1:
        by_rows()
    elif inner_static is not None:
        by_columns()
    else:
        with b.if_else(b.icmp_signed("==", inner, const_i64(1))) as (rows_path, columns_path):
            with rows_path:
                by_rows()
            with columns_path:
                by_columns()
    dk.finish()
    return dk.info(workgroup_count=(outer_d, 1, 1))
