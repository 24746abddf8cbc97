"""The "softmax", "logsoftmax" and "hardmax" kernels over one axis, seen as [outer, axis, inner].

One workgroup per outer index. With inner == 1 the reductions run along the contiguous axis with
vector accumulators; with inner > 1 they are vectorized across the inner positions.
- softmax: exp(x - max) / sum(exp(x - max));
- logsoftmax, stable: x - max - log(sum(exp(x - max)));
- hardmax: 1.0 at the first maximum along the axis, 0.0 elsewhere (the running best index is kept
  as a float so the same code serves scalars and vectors).
"""
from __future__ import annotations

import math
from typing import Callable

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (F32, I32, begin_kernel, const_i64, entry_alloca, float_vector, for_range,
                                         lanes_f32, load_f32, splat, splat_value, static_shape, store_f32,
                                         vector_split)
from iree_py.codegen.llvm.math import emit_exp, fmax
from iree_py.codegen.llvm.math_core import emit_log
from iree_py.codegen.llvm.reduce import reduce_row
from iree_py.ir.types import DType

# contiguous(b, src, dst, base, length, lanes) handles one row when inner == 1;
# columns(b, src, dst, base, length, inner, ty, col) handles the inner positions [col, col + lanes(ty)).
RowFn = Callable[..., None]


def _add(b, x, y):
    return b.fadd(x, y)


def _like(b: ir.IRBuilder, scalar: ir.Value, ty: ir.Type) -> ir.Value:
    """`scalar` as a value of type `ty` (itself, or splat to a vector)."""
    return scalar if ty == F32 else splat_value(b, scalar, ty)


def _map_row(b, src, dst, base, length, lanes, fn) -> None:
    """dst[i] = fn(src[i]) over a contiguous row; fn gets a vector or, in the tail, a scalar."""
    vec_len, _ = vector_split(length, lanes)
    if vec_len:
        vty = float_vector(lanes)
        with for_range(b, 0, vec_len, step=lanes, name="n") as j:
            idx = b.add(base, j)
            store_f32(b, fn(load_f32(b, src, idx, vty)), dst, idx)
    with for_range(b, vec_len, length, name="nt") as j:
        idx = b.add(base, j)
        store_f32(b, fn(load_f32(b, src, idx)), dst, idx)


def _column_at(b, base, inner, col):
    return lambda j: b.add(b.add(base, b.mul(j, const_i64(inner))), col)


def _column_max(b, src, at, length, ty) -> ir.Value:
    mx = entry_alloca(b, ty)
    b.store(splat(float("-inf"), ty), mx)
    with for_range(b, 0, length, name="m") as j:
        b.store(fmax(b, b.load(mx), load_f32(b, src, at(j), ty)), mx)
    return b.load(mx)


def _column_exp_sum(b, src, at, length, ty, row_max, exp_dst=None) -> ir.Value:
    """sum(exp(x - row_max)) along the axis; the exps are also stored to exp_dst if given."""
    total = entry_alloca(b, ty)
    b.store(splat(0.0, ty), total)
    with for_range(b, 0, length, name="e") as j:
        e = emit_exp(b, b.fsub(load_f32(b, src, at(j), ty), row_max))
        if exp_dst is not None:
            store_f32(b, e, exp_dst, at(j))
        b.store(b.fadd(b.load(total), e), total)
    return b.load(total)


# --- softmax -------------------------------------------------------------------------------------
def _softmax_contiguous(b, src, dst, base, length, lanes):
    row_max = reduce_row(b, src, base, length, lanes, float("-inf"), fmax, lambda x, idx: x)

    def exp_and_store(x, idx):
        e = emit_exp(b, b.fsub(x, _like(b, row_max, x.type)))
        store_f32(b, e, dst, idx)
        return e

    total = reduce_row(b, src, base, length, lanes, 0.0, _add, exp_and_store)
    inv = b.fdiv(splat(1.0, F32), total)
    _map_row(b, dst, dst, base, length, lanes, lambda e: b.fmul(e, _like(b, inv, e.type)))


def _softmax_columns(b, src, dst, base, length, inner, ty, col):
    at = _column_at(b, base, inner, col)
    total = _column_exp_sum(b, src, at, length, ty, _column_max(b, src, at, length, ty), exp_dst=dst)
    inv = b.fdiv(splat(1.0, ty), total)
    with for_range(b, 0, length, name="n") as j:
        store_f32(b, b.fmul(load_f32(b, dst, at(j), ty), inv), dst, at(j))


# --- logsoftmax ----------------------------------------------------------------------------------
def _logsoftmax_contiguous(b, src, dst, base, length, lanes):
    row_max = reduce_row(b, src, base, length, lanes, float("-inf"), fmax, lambda x, idx: x)
    total = reduce_row(b, src, base, length, lanes, 0.0, _add,
                       lambda x, idx: emit_exp(b, b.fsub(x, _like(b, row_max, x.type))))
    offset = b.fadd(row_max, emit_log(b, total))
    _map_row(b, src, dst, base, length, lanes, lambda x: b.fsub(x, _like(b, offset, x.type)))


def _logsoftmax_columns(b, src, dst, base, length, inner, ty, col):
    at = _column_at(b, base, inner, col)
    row_max = _column_max(b, src, at, length, ty)
    offset = b.fadd(row_max, emit_log(b, _column_exp_sum(b, src, at, length, ty, row_max)))
    with for_range(b, 0, length, name="n") as j:
        store_f32(b, b.fsub(load_f32(b, src, at(j), ty), offset), dst, at(j))


# --- hardmax -------------------------------------------------------------------------------------
def _hardmax_columns(b, src, dst, base, length, inner, ty, col):
    at = _column_at(b, base, inner, col)
    best = entry_alloca(b, ty, "best")
    where = entry_alloca(b, ty, "where")
    b.store(load_f32(b, src, at(const_i64(0)), ty), best)
    b.store(splat(0.0, ty), where)
    # Indices are converted from i32: an i64 conversion needs a compiler builtin on 32-bit targets.
    with for_range(b, 1, length, name="m") as j:
        x = load_f32(b, src, at(j), ty)
        better = b.fcmp_ordered(">", x, b.load(best))
        b.store(b.select(better, x, b.load(best)), best)
        b.store(b.select(better, _like(b, b.sitofp(b.trunc(j, I32), F32), ty), b.load(where)), where)
    chosen = b.load(where)
    with for_range(b, 0, length, name="n") as j:
        hit = b.fcmp_ordered("==", chosen, _like(b, b.sitofp(b.trunc(j, I32), F32), ty))
        store_f32(b, b.select(hit, splat(1.0, ty), splat(0.0, ty)), dst, at(j))


# --- the shared driver ---------------------------------------------------------------------------
def _axis_view(spec: KernelSpec, what: str) -> tuple[int, int, int]:
    """(outer, axis length, inner) of the one input, after checking the spec."""
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    if spec.inputs[0].dtype != DType.f32:
        raise CompileError(f"{what}: only f32 is supported, got {spec.inputs[0]}")
    shape = static_shape(spec.inputs[0], what)
    if static_shape(spec.outputs[0], what) != shape:
        raise ValueError(f"{what}: output {spec.outputs[0]} differs from input {spec.inputs[0]}")
    axis = int(spec.attrs.get("axis", len(shape) - 1))
    if not 0 <= axis < max(len(shape), 1):
        raise ValueError(f"{what}: axis {axis} out of range for rank {len(shape)}")
    length = shape[axis] if shape else 1
    return math.prod(shape[:axis]), length, math.prod(shape[axis + 1:])


def _build(spec: KernelSpec, module: ir.Module, target, contiguous: RowFn | None, columns: RowFn,
           what: str, needs_elements: bool) -> KernelInfo:
    outer, length, inner = _axis_view(spec, what)
    if needs_elements and length == 0:
        raise ValueError(f"{what}: empty axis in {spec.inputs[0]}")
    lanes = lanes_f32(target)
    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    base = b.mul(kb.workgroup_id_index(0), const_i64(length * inner))
    if inner == 1 and contiguous is not None:
        contiguous(b, src, dst, base, length, lanes)
    else:
        vec_inner, _ = vector_split(inner, lanes)
        if vec_inner:
            with for_range(b, 0, vec_inner, step=lanes, name="c") as col:
                columns(b, src, dst, base, length, inner, float_vector(lanes), col)
        with for_range(b, vec_inner, inner, name="ct") as col:
            columns(b, src, dst, base, length, inner, F32, col)
    kb.finish()
    nbytes = spec.inputs[0].num_bytes
    return KernelInfo(spec.name, (outer, 1, 1), (), (nbytes, nbytes))


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    if spec.inputs and spec.inputs[0].dtype == DType.f64:  # f64math: softmax_f64.py
        from iree_py.codegen.llvm import softmax_f64
        return softmax_f64.build(spec, module, target, log=False)
    return _build(spec, module, target, _softmax_contiguous, _softmax_columns, f"softmax kernel {spec.name}",
                  needs_elements=False)


def build_logsoftmax(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    if spec.inputs and spec.inputs[0].dtype == DType.f64:  # f64math: softmax_f64.py
        from iree_py.codegen.llvm import softmax_f64
        return softmax_f64.build(spec, module, target, log=True)
    return _build(spec, module, target, _logsoftmax_contiguous, _logsoftmax_columns,
                  f"logsoftmax kernel {spec.name}", needs_elements=True)


def build_hardmax(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    return _build(spec, module, target, None, _hardmax_columns, f"hardmax kernel {spec.name}",
                  needs_elements=True)
