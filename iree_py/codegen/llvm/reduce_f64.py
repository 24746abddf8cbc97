"""f64 reductions: the "reduce" kernel (static axes, reduce_kernel.py) and the "reduce_rt" kernel
(axes at run time, dynamic/reduce_rt.py) when X and Y are f64. Both of those hand f64 specs here.

Scalar double-precision loops (no vectors): the same kinds and the same semantics as the f32
kernels (logsumexp stable: log(sum(exp(x - m))) + m with m the finite max), with exp/log from
math_f64.py and sqrt/fabs as LLVM intrinsics, so every step is accurate to double precision.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (ALIGN, I32, I64, begin_kernel, const_i64, element_ptr, entry_alloca,
                                         for_range, static_shape)
from iree_py.codegen.llvm.math_f64 import exp_f64, log_f64
from iree_py.targets import Target
from iree_py.ir.types import DType

F64 = ir.DoubleType()
Fold = Callable[["Reducer64", Callable[[ir.IRBuilder, ir.Value], ir.Value]], ir.Value]


def _intrinsic(b: ir.IRBuilder, name: str, x: ir.Value) -> ir.Value:
    module = b.block.function.module
    full = f"llvm.{name}.f64"
    fn = module.globals.get(full) or ir.Function(module, ir.FunctionType(F64, [F64]), name=full)
    return b.call(fn, [x])


def d(value: float) -> ir.Constant:
    return ir.Constant(F64, float(value))


def load_f64(b: ir.IRBuilder, base: ir.Value, index: ir.Value) -> ir.Value:
    return b.load(element_ptr(b, base, index, F64), typ=F64, align=ALIGN)


def store_f64(b: ir.IRBuilder, value: ir.Value, base: ir.Value, index: ir.Value) -> None:
    b.store(value, element_ptr(b, base, index, F64), align=ALIGN)


def count_to_f64(b: ir.IRBuilder, count: ir.Value, target: Target) -> ir.Value:
    """An i64 count (>= 0) as a double; 32-bit targets convert from i32 (i64 would need a builtin)."""
    if target.pointer_bits >= 64:
        return b.uitofp(count, F64)
    return b.uitofp(b.trunc(count, I32), F64)


@dataclass(frozen=True)
class Reducer64:
    init: float
    combine: Callable[[ir.IRBuilder, ir.Value, ir.Value], ir.Value]
    value_of: Callable[[ir.IRBuilder, ir.Value], ir.Value]
    finish: Callable[[ir.IRBuilder, ir.Value], ir.Value]   # mean divides separately (by the count)


def _max(b, x, y):
    return b.select(b.fcmp_ordered("<", x, y), y, x)      # NaN in the accumulator stays


def _min(b, x, y):
    return b.select(b.fcmp_ordered("<", y, x), y, x)


def _same(b, x):
    return x


def _square(b, x):
    return b.fmul(x, x)


REDUCERS: dict[str, Reducer64] = {
    "sum": Reducer64(0.0, lambda b, x, y: b.fadd(x, y), _same, _same),
    "mean": Reducer64(0.0, lambda b, x, y: b.fadd(x, y), _same, _same),
    "max": Reducer64(float("-inf"), _max, _same, _same),
    "min": Reducer64(float("inf"), _min, _same, _same),
    "prod": Reducer64(1.0, lambda b, x, y: b.fmul(x, y), _same, _same),
    "l1": Reducer64(0.0, lambda b, x, y: b.fadd(x, y), lambda b, x: _intrinsic(b, "fabs", x), _same),
    "l2": Reducer64(0.0, lambda b, x, y: b.fadd(x, y), _square, lambda b, acc: _intrinsic(b, "sqrt", acc)),
    "logsum": Reducer64(0.0, lambda b, x, y: b.fadd(x, y), _same, log_f64),
    "sumsquare": Reducer64(0.0, lambda b, x, y: b.fadd(x, y), _square, _same),
}
KINDS = (*REDUCERS, "logsumexp")


def reduce_value(b: ir.IRBuilder, kind: str, fold: Fold, count: ir.Value) -> ir.Value:
    """One output element; fold(reducer, value_of) -> accumulator; count: the reduced count (f64)."""
    if kind == "logsumexp":
        mx = fold(REDUCERS["max"], _same)
        finite = b.fcmp_ordered("<", _intrinsic(b, "fabs", mx), d(float("inf")))
        shift = b.select(finite, mx, d(0.0))
        total = fold(REDUCERS["sum"], lambda bb, x: exp_f64(bb, bb.fsub(x, shift)))
        return b.fadd(log_f64(b, total), shift)
    r = REDUCERS[kind]
    acc = r.finish(b, fold(r, r.value_of))
    return b.fdiv(acc, count) if kind == "mean" else acc


def _check(spec: KernelSpec, what: str) -> str:
    kind = spec.attrs.get("kind")
    if kind not in KINDS:
        raise ValueError(f"{what}: kind {kind!r} is not one of {list(KINDS)}")
    if spec.inputs[0].dtype != DType.f64 or spec.outputs[0].dtype != DType.f64:
        raise ValueError(f"{what}: the f64 kernel wants f64 -> f64, got {spec.inputs[0]} -> {spec.outputs[0]}")
    return kind


def build_static(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    """The "reduce" kernel on f64: one workgroup per outer index of [outer, reduced, inner]."""
    from iree_py.codegen.llvm.reduce_kernel import collapse  # reduce_kernel imports this module

    what = f"reduce kernel {spec.name} (f64)"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    kind = _check(spec, what)
    shape = static_shape(spec.inputs[0], what)
    outer, reduced, inner = collapse(shape, [int(a) for a in spec.attrs["axes"]], what)
    if reduced == 0 or outer * inner == 0:
        raise ValueError(f"{what}: empty reductions (shape {list(shape)}) are not supported")
    if spec.outputs[0].num_elements != outer * inner:
        raise ValueError(f"{what}: output {spec.outputs[0]} should have {outer * inner} elements")

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    o = kb.workgroup_id_index(0)
    base = b.mul(o, const_i64(reduced * inner))
    with for_range(b, 0, inner, name="c") as col:
        start = b.add(base, col)

        def fold(r: Reducer64, value_of) -> ir.Value:
            acc = entry_alloca(b, F64)
            b.store(d(r.init), acc)
            with for_range(b, 0, reduced, name="r") as j:
                x = load_f64(b, src, b.add(start, b.mul(j, const_i64(inner))))
                b.store(r.combine(b, b.load(acc), value_of(b, x)), acc)
            return b.load(acc)

        result = reduce_value(b, kind, fold, d(float(reduced)))
        store_f64(b, result, dst, b.add(b.mul(o, const_i64(inner)), col))
    kb.finish()
    return KernelInfo(spec.name, (outer, 1, 1), (), (spec.inputs[0].num_bytes, spec.outputs[0].num_bytes))


def build_runtime_axes(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    """The "reduce_rt" kernel on f64 (bindings X, mask i64[R], Y; see dynamic/reduce_rt.py)."""
    from iree_py.codegen.llvm.dynamic.common import begin_dynamic_kernel
    from iree_py.codegen.llvm.dynamic.reduce_rt import _nested, masked_axes

    what = f"reduce_rt kernel {spec.name} (f64)"
    if len(spec.inputs) != 2 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects inputs X, mask and one output")
    kind = _check(spec, what)
    x, mask, y = spec.inputs[0], spec.inputs[1], spec.outputs[0]
    rank = len(x.shape)
    if mask.dtype != DType.i64 or tuple(mask.shape) != (rank,):
        raise ValueError(f"{what}: mask must be i64[{rank}], got {mask}")

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    src, flags, dst = dk.binding(0), dk.binding(1), dk.binding(2)
    one, zero = const_i64(1), const_i64(0)
    m = masked_axes(b, dk.dims(x), flags)
    strides, kept_extent, reduced_extent, out_count, count = (m.strides, m.kept_extent, m.reduced_extent,
                                                              m.out_count, m.count)

    with b.if_then(b.icmp_signed("==", out_count, dk.dim(y.element_count))):
        out_index = entry_alloca(b, I64, name="out_index")
        b.store(zero, out_index)
        count_f = count_to_f64(b, count, target)

        def element(base: ir.Value) -> None:
            def fold(r: Reducer64, value_of) -> ir.Value:
                acc = entry_alloca(b, F64)
                b.store(d(r.init), acc)
                _nested(b, reduced_extent, strides, base,
                        lambda at: b.store(r.combine(b, b.load(acc), value_of(b, load_f64(b, src, at))), acc), "r")
                return b.load(acc)

            o = b.load(out_index)
            store_f64(b, reduce_value(b, kind, fold, count_f), dst, o)
            b.store(b.add(o, one), out_index)

        _nested(b, kept_extent, strides, zero, element, "o")
    dk.finish()
    return dk.info(workgroup_count=(1, 1, 1))
