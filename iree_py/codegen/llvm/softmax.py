"""The "softmax" kernel over one axis, seen as [outer, axis, inner]: max-subtract, exp, sum,
divide. One workgroup per outer index. inner == 1 reduces along the contiguous axis with vector
accumulators; inner > 1 vectorizes across the inner positions."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (F32, begin_kernel, const_i64, entry_alloca, float_vector, for_range,
                                         lanes_f32, load_f32, splat, splat_value, static_shape, store_f32,
                                         vector_split)
from iree_py.codegen.llvm.math import emit_exp, fmax
from iree_py.codegen.llvm.reduce import reduce_row
from iree_py.ir.types import DType


def _max(b, x, y):
    return fmax(b, x, y)


def _add(b, x, y):
    return b.fadd(x, y)


def _softmax_contiguous(b, src, dst, base, length, lanes):
    row_max = reduce_row(b, src, base, length, lanes, float("-inf"), _max, lambda x, idx: x)

    def exp_and_store(x, idx):
        ty = x.type
        mx = row_max if ty == F32 else splat_value(b, row_max, ty)
        e = emit_exp(b, b.fsub(x, mx))
        store_f32(b, e, dst, idx)
        return e

    total = reduce_row(b, src, base, length, lanes, 0.0, _add, exp_and_store)
    inv = b.fdiv(splat(1.0, F32), total)
    vec_len, _ = vector_split(length, lanes)
    if vec_len:
        vty = float_vector(lanes)
        vinv = splat_value(b, inv, vty)
        with for_range(b, 0, vec_len, step=lanes, name="n") as j:
            idx = b.add(base, j)
            store_f32(b, b.fmul(load_f32(b, dst, idx, vty), vinv), dst, idx)
    with for_range(b, vec_len, length, name="nt") as j:
        idx = b.add(base, j)
        store_f32(b, b.fmul(load_f32(b, dst, idx), inv), dst, idx)


def _softmax_columns(b, src, dst, base, length, inner, ty, col):
    """Softmax along the axis for the inner positions [col, col + lanes(ty)) at stride `inner`."""
    def at(j):
        return b.add(b.add(base, b.mul(j, const_i64(inner))), col)

    mx = entry_alloca(b, ty)
    b.store(splat(float("-inf"), ty), mx)
    with for_range(b, 0, length, name="m") as j:
        b.store(fmax(b, b.load(mx), load_f32(b, src, at(j), ty)), mx)
    row_max = b.load(mx)
    total = entry_alloca(b, ty)
    b.store(splat(0.0, ty), total)
    with for_range(b, 0, length, name="e") as j:
        e = emit_exp(b, b.fsub(load_f32(b, src, at(j), ty), row_max))
        store_f32(b, e, dst, at(j))
        b.store(b.fadd(b.load(total), e), total)
    inv = b.fdiv(splat(1.0, ty), b.load(total))
    with for_range(b, 0, length, name="n") as j:
        store_f32(b, b.fmul(load_f32(b, dst, at(j), ty), inv), dst, at(j))


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"softmax kernel {spec.name}: expects 1 input and 1 output")
    if spec.inputs[0].dtype != DType.f32:
        raise ValueError(f"softmax kernel {spec.name}: only f32 is supported, got {spec.inputs[0]}")
    shape = static_shape(spec.inputs[0], f"softmax kernel {spec.name}")
    if static_shape(spec.outputs[0], f"softmax kernel {spec.name}") != shape:
        raise ValueError(f"softmax kernel {spec.name}: output {spec.outputs[0]} differs from input {spec.inputs[0]}")
    axis = int(spec.attrs.get("axis", len(shape) - 1))
    if not 0 <= axis < max(len(shape), 1):
        raise ValueError(f"softmax kernel {spec.name}: axis {axis} out of range for rank {len(shape)}")
    outer = 1
    for n in shape[:axis]:
        outer *= n
    length = shape[axis] if shape else 1
    inner = 1
    for n in shape[axis + 1:]:
        inner *= n
    lanes = lanes_f32(target)

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    base = b.mul(kb.workgroup_id_index(0), const_i64(length * inner))
    if inner == 1:
        _softmax_contiguous(b, src, dst, base, length, lanes)
    else:
        vec_inner, _ = vector_split(inner, lanes)
        if vec_inner:
            with for_range(b, 0, vec_inner, step=lanes, name="c") as col:
                _softmax_columns(b, src, dst, base, length, inner, float_vector(lanes), col)
        with for_range(b, vec_inner, inner, name="ct") as col:
            _softmax_columns(b, src, dst, base, length, inner, F32, col)
    kb.finish()
    nbytes = spec.inputs[0].num_bytes
    return KernelInfo(spec.name, (outer, 1, 1), (), (nbytes, nbytes))
