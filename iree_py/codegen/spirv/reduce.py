"""Reductions on SPIR-V (f32; kind sum mean max min prod l1 l2 logsum logsumexp sumsquare), one
invocation per output, with the CPU backend's reducers (codegen/llvm/reduce.py): logsumexp is
log(sum(exp(x - m))) + m with m the max where it is finite (else 0); an empty reduction gives the
start value after the finish (sum 0, prod 1, max -inf, min +inf, logsum -inf, mean NaN).

- reduce: over one contiguous run of axes, the input seen as [outer, reduced, inner];
- reduce_rt: over the axes a run-time mask names (bindings X, mask i64[rank] read as words,
  non-zero = reduced, Y). Each output walks the kept axes' coordinates of its index, then the
  reduced elements by their coordinates; Y is row-major over the kept axes (its layout for
  keepdims 0 and 1 alike). Where the mask's output count is not Y's, nothing is written.
"""
from __future__ import annotations

import math
from typing import Callable

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder, Value
from iree_py.codegen.spirv.indexing import Dim, dims, product, strides

KINDS = ("sum", "mean", "max", "min", "prod", "l1", "l2", "logsum", "logsumexp", "sumsquare")

Combine = Callable[[Value, Value], Value]
Unary = Callable[[Value], Value]
# fold(start value, combine(accumulator, value), value_of(loaded x)) -> the accumulator over the reduced elements
Fold = Callable[[float, Combine, Unary], Value]


def reduce_value(b: KernelBuilder, kind: str, fold: Fold, count: Value) -> Value:
    """One output of reduction `kind` over the elements `fold` walks (`count` of them)."""
    def add(a: Value, x: Value) -> Value:
        return a + x

    def same(x: Value) -> Value:
        return x

    def square(x: Value) -> Value:
        return x * x

    if kind == "logsumexp":
        top = fold(-math.inf, b.max, same)
        shift = b.select(b.ext("FAbs", top) < math.inf, top, b.float(0.0))
        return b.ext("Log", fold(0.0, add, lambda x: b.ext("Exp", x - shift))) + shift
    if kind in ("max", "min"):
        return fold(-math.inf if kind == "max" else math.inf, b.max if kind == "max" else b.min, same)
    if kind == "prod":
        return fold(1.0, lambda a, x: a * x, same)
    value_of = {"l1": lambda x: b.ext("FAbs", x), "l2": square, "sumsquare": square}.get(kind, same)
    total = fold(0.0, add, value_of)
    finish = {"mean": lambda: total / b.to_f32(count), "l2": lambda: b.ext("Sqrt", total),
              "logsum": lambda: b.ext("Log", total)}
    return finish[kind]() if kind in finish else total


def _fold_over(b: KernelBuilder, count: Value, at: Callable[[Value], Value]) -> Fold:
    """The fold over elements at(i) of X for i in [0, count)."""
    def fold(initial: float, combine: Combine, value_of: Unary) -> Value:
        acc = b.variable("f32", initial)
        with b.loop(0, count) as i:
            acc.set(combine(acc.get(), value_of(b.load(0, at(i)))))
        return acc.get()
    return fold


def build_reduce(b: KernelBuilder, spec: KernelSpec) -> Dim:
    shape = dims(spec.inputs[0])
    axes = list(spec.attrs["axes"])
    first, last = (axes[0], axes[-1]) if axes else (len(shape), len(shape) - 1)
    outer, length, inner = product(shape[:first]), product(shape[first:last + 1]), product(shape[last + 1:])
    outputs = product([outer, inner])
    with b.for_each(outputs) as out:
        base = (out / b.dim(inner)) * b.dim(product([length, inner])) + out % b.dim(inner)
        step = b.dim(inner)
        fold = _fold_over(b, b.dim(length), lambda i: base + i * step)
        b.store(1, out, reduce_value(b, spec.attrs["kind"], fold, b.dim(length)))
    return outputs


def _offset(b: KernelBuilder, index: Value, extents: list[Value], element_strides: list[Value], base: Value
            ) -> Value:
    """base + the offset in X of `index`'s row-major coordinates over `extents`."""
    rest, offset = index, base
    for axis in range(len(extents) - 1, -1, -1):
        coord = rest if axis == 0 else rest % extents[axis]
        offset = offset + coord * element_strides[axis]
        if axis:
            rest = rest / extents[axis]
    return offset


def build_reduce_rt(b: KernelBuilder, spec: KernelSpec) -> Dim:
    shape = dims(spec.inputs[0])
    outputs = product(dims(spec.outputs[0]))
    extents = [b.dim(d) for d in shape]
    element_strides = [b.dim(s) for s in strides(shape)]
    one = b.int(1)
    reduced = [b.logical_or(b.load(1, 2 * a).ne(0), b.load(1, 2 * a + 1).ne(0)) for a in range(len(shape))]
    kept_extents = [b.select(r, one, d) for r, d in zip(reduced, extents)]
    reduced_extents = [b.select(r, d, one) for r, d in zip(reduced, extents)]
    out_count, count = one, one
    for k, r in zip(kept_extents, reduced_extents):
        out_count, count = out_count * k, count * r
    consistent = out_count.eq(b.dim(outputs))
    with b.for_each(outputs) as out:
        with b.if_(consistent):
            base = _offset(b, out, kept_extents, element_strides, b.int(0))
            fold = _fold_over(b, count, lambda i: _offset(b, i, reduced_extents, element_strides, base))
            b.store(2, out, reduce_value(b, spec.attrs["kind"], fold, count))
    return outputs
