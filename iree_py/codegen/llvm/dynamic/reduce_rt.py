"""The "reduce_rt" kernel: a reduction whose axes arrive at run time as a mask (op ReduceRuntimeAxes,
iree_py/ir/ops_rt_reduce.py). Kinds and reducers as the "reduce" kernel's (codegen/llvm/reduce.py),
f32 or f64 (scalar double precision throughout).

Bindings: X (f32 or f64, rank R, dims static or symbolic), mask (i64[R], non-zero = reduced), Y. The
rank is known at compile time, so the kernel is 2R nested loops with run-time extents: for each
axis, the output loops run over d (kept) or 1 (reduced) and the reduction loops over 1 or d. Y is
written row-major over the kept axes, which is its layout for keepdims 0 and 1 alike.

One workgroup. Before touching memory the kernel checks that the mask's output element count
equals Y's (computed from the push constants, which the guard checked against the binding
lengths); otherwise it returns without writing. An empty reduction gives the reducer's start value
after its finish (sum 0, max -inf, mean NaN), as the static dynamic reduce does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import ALIGN, I64, const_i64, element_ptr, entry_alloca, for_range
from iree_py.codegen.llvm.dims import begin_dynamic_kernel
from iree_py.codegen.llvm.reduce import FLOATS, KINDS, Fold, Reducer, reduce_value
from iree_py.codegen.llvm.typed_values import const
from iree_py.targets import Target
from iree_py.ir.types import DType


@dataclass
class MaskedAxes:
    """X's run-time strides split by the axes mask: the extents each output element walks over
    (kept: 1 on reduced axes; reduced: 1 on kept axes) and the element counts of both."""

    strides: list[ir.Value]
    kept_extent: list[ir.Value]
    reduced_extent: list[ir.Value]
    out_count: ir.Value
    count: ir.Value


def masked_axes(b: ir.IRBuilder, dims: list[ir.Value], flags: ir.Value) -> MaskedAxes:
    """`flags`: the i64[rank] mask binding (nonzero = reduced)."""
    one, zero, rank = const_i64(1), const_i64(0), len(dims)
    strides: list[ir.Value] = [one] * rank
    for axis in range(rank - 2, -1, -1):
        strides[axis] = b.mul(strides[axis + 1], dims[axis + 1])
    reduced = [b.icmp_signed("!=", b.load(element_ptr(b, flags, axis, I64), typ=I64, align=ALIGN), zero)
               for axis in range(rank)]
    kept_extent = [b.select(r, one, d) for r, d in zip(reduced, dims)]
    reduced_extent = [b.select(r, d, one) for r, d in zip(reduced, dims)]
    out_count, count = one, one
    for k, r in zip(kept_extent, reduced_extent):
        out_count, count = b.mul(out_count, k), b.mul(count, r)
    return MaskedAxes(strides, kept_extent, reduced_extent, out_count, count)


def _nested(b: ir.IRBuilder, extents: list[ir.Value], strides: list[ir.Value], base: ir.Value,
            body: Callable[[ir.Value], None], name: str) -> None:
    """Loops over `extents` (outermost first); body(offset) with offset = base + sum(index * stride)."""
    if not extents:
        body(base)
        return
    with for_range(b, 0, extents[0], name=f"{name}{len(extents)}") as i:
        _nested(b, extents[1:], strides[1:], b.add(base, b.mul(i, strides[0])), body, name)


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"reduce_rt kernel {spec.name}"
    if len(spec.inputs) != 2 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects inputs X, mask and one output")
    x, mask, y = spec.inputs[0], spec.inputs[1], spec.outputs[0]
    fl = FLOATS.get(x.dtype)
    if fl is None or y.dtype != x.dtype:
        raise ValueError(f"{what}: only f32 and f64 are supported, got {x} -> {y}")
    rank = len(x.shape)
    if mask.dtype != DType.i64 or tuple(mask.shape) != (rank,):
        raise ValueError(f"{what}: mask must be i64[{rank}], got {mask}")
    kind = spec.attrs.get("kind")
    if kind not in KINDS:
        raise ValueError(f"{what}: kind {kind!r} is not one of {list(KINDS)}")

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    src, flags, dst = dk.binding(0), dk.binding(1), dk.binding(2)
    one, zero = const_i64(1), const_i64(0)
    m = masked_axes(b, dk.dims(x), flags)
    strides, kept_extent, reduced_extent, out_count, count = (m.strides, m.kept_extent, m.reduced_extent,
                                                              m.out_count, m.count)

    consistent = b.icmp_signed("==", out_count, dk.dim(y.element_count))
    with b.if_then(consistent):
        out_index = entry_alloca(b, I64, name="out_index")
        b.store(zero, out_index)

        def fold(base: ir.Value) -> Fold:
            def run(r: Reducer, value_of: Callable) -> ir.Value:
                acc = entry_alloca(b, fl.scalar)
                b.store(const(r.init, fl.scalar), acc)
                _nested(b, reduced_extent, strides, base,
                        lambda at: b.store(r.combine(b, b.load(acc), value_of(b, fl.load(b, src, at))), acc), "r")
                return b.load(acc)
            return run

        def element(base: ir.Value) -> None:
            o = b.load(out_index)
            value = reduce_value(b, fl, kind, fold(base))
            if kind == "mean":
                value = b.fdiv(value, fl.count(b, count, target))
            fl.store(b, value, dst, o)
            b.store(b.add(o, one), out_index)

        _nested(b, kept_extent, strides, zero, element, "o")
    dk.finish()
    return dk.info(workgroup_count=(1, 1, 1))
