"""The "softmax", "logsoftmax" and "hardmax" kernels for symbolic dims (any dim, the axis too),
over the one input seen as [outer, axis, inner] (static kernels: codegen/llvm/softmax.py).

One workgroup per outer index (grid x = outer). With inner == 1 the reductions run along the
contiguous axis with vector accumulators; otherwise they are vectorized across the inner positions.
When inner is symbolic both paths are compiled and the kernel picks one at run time. An empty axis
or inner part means an empty tensor: the kernel then touches nothing.
"""
from __future__ import annotations

from typing import Callable

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (F32, I32, const_i64, entry_alloca, lanes_f32, load_f32, splat,
                                         splat_value, store_f32, for_range)
from iree_py.codegen.llvm.dynamic.common import begin_dynamic_kernel
from iree_py.codegen.llvm.dynamic.linalg_common import (Agreements, for_columns, map_row, product, static_value)
from iree_py.codegen.llvm.reduce import reduce_row
from iree_py.codegen.llvm.math import emit_exp, fmax
from iree_py.codegen.llvm.math_core import emit_log
from iree_py.targets import Target
from iree_py.ir.types import Dim, DType

# contiguous(b, src, dst, base, length, lanes): one row when inner == 1 (length: i64 value);
# columns(b, src, dst, at, length, ty): the inner positions at(j) + [0, lanes(ty)) for j < length.
RowFn = Callable[..., None]
At = Callable[[ir.Value], ir.Value]


def _add(b, x, y):
    return b.fadd(x, y)


def _like(b: ir.IRBuilder, scalar: ir.Value, ty: ir.Type) -> ir.Value:
    return scalar if ty == F32 else splat_value(b, scalar, ty)


def _column_max(b, src, at: At, length, ty) -> ir.Value:
    mx = entry_alloca(b, ty)
    b.store(splat(float("-inf"), ty), mx)
    with for_range(b, 0, length, name="m") as j:
        b.store(fmax(b, b.load(mx), load_f32(b, src, at(j), ty)), mx)
    return b.load(mx)


def _column_exp_sum(b, src, at: At, length, ty, row_max, exp_dst=None) -> ir.Value:
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
    map_row(b, dst, dst, base, length, lanes, lambda e: b.fmul(e, _like(b, inv, e.type)))


def _softmax_columns(b, src, dst, at, length, ty):
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
    map_row(b, src, dst, base, length, lanes, lambda x: b.fsub(x, _like(b, offset, x.type)))


def _logsoftmax_columns(b, src, dst, at, length, ty):
    row_max = _column_max(b, src, at, length, ty)
    offset = b.fadd(row_max, emit_log(b, _column_exp_sum(b, src, at, length, ty, row_max)))
    with for_range(b, 0, length, name="n") as j:
        store_f32(b, b.fsub(load_f32(b, src, at(j), ty), offset), dst, at(j))


# --- hardmax -------------------------------------------------------------------------------------
def _hardmax_columns(b, src, dst, at, length, ty):
    """Needs length >= 1 (the driver skips empty tensors)."""
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
def axis_view(spec: KernelSpec, agree: Agreements) -> tuple[Dim, Dim, Dim]:
    """(outer, axis length, inner) of the one input, after checking the spec."""
    what = agree.what
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    x, y = spec.inputs[0], spec.outputs[0]
    if x.dtype != DType.f32 or y.dtype != DType.f32:
        raise CompileError(f"{what}: only f32 is supported, got {x} -> {y}")
    if x.rank != y.rank:
        raise ValueError(f"{what}: output {y} differs from input {x}")
    for axis, (dx, dy) in enumerate(zip(x.shape, y.shape)):
        agree.equal(dy, dx, f"output dim {axis} (vs the input's)")
    shape = x.shape
    axis = int(spec.attrs.get("axis", len(shape) - 1))
    if not 0 <= axis < max(len(shape), 1):
        raise ValueError(f"{what}: axis {axis} out of range for rank {len(shape)}")
    length = shape[axis] if shape else 1
    return product(shape[:axis]), length, product(shape[axis + 1:])


def _build(spec: KernelSpec, module: ir.Module, target: Target, contiguous: RowFn | None, columns: RowFn,
           what: str) -> KernelInfo:
    agree = Agreements(what)
    outer, length_d, inner_d = axis_view(spec, agree)
    lanes = lanes_f32(target)
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    agree.emit(dk)
    src, dst = dk.binding(0), dk.binding(1)
    length, inner = dk.dim(length_d), dk.dim(inner_d)
    base = b.mul(dk.workgroup_id_index(0), b.mul(length, inner))

    def by_columns() -> None:
        def body(ty: ir.Type, col: ir.Value) -> None:
            columns(b, src, dst, lambda j: b.add(b.add(base, b.mul(j, inner)), col), length, ty)
        for_columns(b, inner, lanes, body)

    def by_rows() -> None:
        assert contiguous is not None
        contiguous(b, src, dst, base, length, lanes)

    not_empty = b.and_(b.icmp_signed(">", length, const_i64(0)), b.icmp_signed(">", inner, const_i64(0)))
    with b.if_then(not_empty):
        inner_static = static_value(inner_d)
        if contiguous is None or (inner_static is not None and inner_static != 1):
            by_columns()
        elif inner_static == 1:
            by_rows()
        else:
            with b.if_else(b.icmp_signed("==", inner, const_i64(1))) as (rows_path, columns_path):
                with rows_path:
                    by_rows()
                with columns_path:
                    by_columns()
    dk.finish()
    return dk.info(workgroup_count=(outer, 1, 1))


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    return _build(spec, module, target, _softmax_contiguous, _softmax_columns, f"softmax kernel {spec.name}")


def build_logsoftmax(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    return _build(spec, module, target, _logsoftmax_contiguous, _logsoftmax_columns,
                  f"logsoftmax kernel {spec.name}")


def build_hardmax(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    return _build(spec, module, target, None, _hardmax_columns, f"hardmax kernel {spec.name}")
