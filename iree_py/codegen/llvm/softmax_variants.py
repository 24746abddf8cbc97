"""The "logsoftmax" and "hardmax" kernels, next to softmax: one axis seen as [outer, axis, inner],
one workgroup per outer index, vectorized across the inner positions when inner > 1 (along the
contiguous axis for logsoftmax's reductions when inner == 1).

logsoftmax is stable: x - max - log(sum(exp(x - max))). hardmax writes 1.0 at the first maximum
along the axis and 0.0 elsewhere (the running best index is kept as a float so the same code
serves scalars and vectors)."""
from __future__ import annotations

import math

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (F32, begin_kernel, const_i64, entry_alloca, float_vector, for_range,
                                         lanes_f32, load_f32, splat, splat_value, static_shape, store_f32,
                                         vector_split)
from iree_py.codegen.llvm.math import emit_exp, fmax
from iree_py.codegen.llvm.math_core import emit_log
from iree_py.codegen.llvm.reduce import reduce_row
from iree_py.ir.types import DType


def _add(b, x, y):
    return b.fadd(x, y)


def _at(b, base, j, inner, col):
    return b.add(b.add(base, b.mul(j, const_i64(inner))), col)


def _logsoftmax_contiguous(b, src, dst, base, length, lanes):
    row_max = reduce_row(b, src, base, length, lanes, float("-inf"), fmax, lambda x, idx: x)

    def shifted_exp(x, idx):
        return emit_exp(b, b.fsub(x, row_max if x.type == F32 else splat_value(b, row_max, x.type)))

    total = reduce_row(b, src, base, length, lanes, 0.0, _add, shifted_exp)
    offset = b.fadd(row_max, emit_log(b, total))
    vec_len, _ = vector_split(length, lanes)
    if vec_len:
        vty = float_vector(lanes)
        voff = splat_value(b, offset, vty)
        with for_range(b, 0, vec_len, step=lanes, name="n") as j:
            idx = b.add(base, j)
            store_f32(b, b.fsub(load_f32(b, src, idx, vty), voff), dst, idx)
    with for_range(b, vec_len, length, name="nt") as j:
        idx = b.add(base, j)
        store_f32(b, b.fsub(load_f32(b, src, idx), offset), dst, idx)


def _logsoftmax_columns(b, src, dst, base, length, inner, ty, col):
    mx = entry_alloca(b, ty)
    b.store(splat(float("-inf"), ty), mx)
    with for_range(b, 0, length, name="m") as j:
        b.store(fmax(b, b.load(mx), load_f32(b, src, _at(b, base, j, inner, col), ty)), mx)
    row_max = b.load(mx)
    total = entry_alloca(b, ty)
    b.store(splat(0.0, ty), total)
    with for_range(b, 0, length, name="e") as j:
        e = emit_exp(b, b.fsub(load_f32(b, src, _at(b, base, j, inner, col), ty), row_max))
        b.store(b.fadd(b.load(total), e), total)
    offset = b.fadd(row_max, emit_log(b, b.load(total)))
    with for_range(b, 0, length, name="n") as j:
        idx = _at(b, base, j, inner, col)
        store_f32(b, b.fsub(load_f32(b, src, idx, ty), offset), dst, idx)


def _hardmax_columns(b, src, dst, base, length, inner, ty, col):
    best = entry_alloca(b, ty, "best")
    where = entry_alloca(b, ty, "where")
    b.store(load_f32(b, src, _at(b, base, const_i64(0), inner, col), ty), best)
    b.store(splat(0.0, ty), where)
    with for_range(b, 1, length, name="m") as j:
        x = load_f32(b, src, _at(b, base, j, inner, col), ty)
        better = b.fcmp_ordered(">", x, b.load(best))
        b.store(b.select(better, x, b.load(best)), best)
        b.store(b.select(better, splat_value(b, b.sitofp(j, F32), ty) if ty != F32 else b.sitofp(j, F32),
                         b.load(where)), where)
    chosen = b.load(where)
    with for_range(b, 0, length, name="n") as j:
        jf = b.sitofp(j, F32)
        hit = b.fcmp_ordered("==", chosen, jf if ty == F32 else splat_value(b, jf, ty))
        store_f32(b, b.select(hit, splat(1.0, ty), splat(0.0, ty)), dst, _at(b, base, j, inner, col))


def _check(spec: KernelSpec, what: str) -> tuple[int, int, int]:
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    if spec.inputs[0].dtype != DType.f32:
        raise ValueError(f"{what}: only f32 is supported, got {spec.inputs[0]}")
    shape = static_shape(spec.inputs[0], what)
    if static_shape(spec.outputs[0], what) != shape:
        raise ValueError(f"{what}: output {spec.outputs[0]} differs from input {spec.inputs[0]}")
    axis = int(spec.attrs.get("axis", len(shape) - 1))
    if not 0 <= axis < len(shape):
        raise ValueError(f"{what}: axis {axis} out of range for rank {len(shape)}")
    if shape[axis] == 0:
        raise ValueError(f"{what}: empty axis {axis} in {spec.inputs[0]}")
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def _build(spec: KernelSpec, module: ir.Module, target, contiguous, columns, what: str) -> KernelInfo:
    outer, length, inner = _check(spec, what)
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


def build_logsoftmax(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    return _build(spec, module, target, _logsoftmax_contiguous, _logsoftmax_columns,
                  f"logsoftmax kernel {spec.name}")


def build_hardmax(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    return _build(spec, module, target, None, _hardmax_columns, f"hardmax kernel {spec.name}")
