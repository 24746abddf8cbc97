"""The "softmax", "logsoftmax" and "hardmax" kernels over one axis, seen as [outer, axis, inner].

One workgroup per outer index. With inner == 1 the reductions run along the contiguous axis with
vector accumulators; with inner > 1 they are vectorized across the inner positions.
- softmax: exp(x - max) / sum(exp(x - max));
- logsoftmax, stable: x - max - log(sum(exp(x - max)));
- hardmax: 1.0 at the first maximum along the axis, 0.0 elsewhere (the running best index is kept
  as a float so the same code serves scalars and vectors).
softmax and logsoftmax also run on f64 (exp/log from math_f64.py, < 1 ulp), by inner positions
one at a time, for static dims; hardmax is f32 only. An axis whose max is infinite gives NaN, as onnxruntime does.

Dims are ints or Exprs (one builder for both, docs/dynamic_shapes.md §3): an int folds to a
constant and a known size splits into vectors and tail at build time; an Expr is computed from the
push constants (`DynamicKernel.dim`). When inner is symbolic both paths are compiled and the kernel
picks one at run time. An empty axis or inner part at run time means an empty tensor: the kernel
then touches nothing; a known empty axis is a build error for logsoftmax and hardmax.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (ALIGN, F32, I32, const_i64, element_ptr, entry_alloca, float_vector,
                                         for_columns, for_range, has_vectors, lanes_f32, load_f32, rows_or_columns,
                                         splat_value, store_f32, vector_end)
from iree_py.codegen.llvm.dims import Agreements, DynamicKernel, begin_dynamic_kernel, is_dynamic, product
from iree_py.codegen.llvm.math import emit_exp, fmax
from iree_py.codegen.llvm.math_core import emit_log
from iree_py.codegen.llvm.math_f64 import exp_f64, log_f64
from iree_py.codegen.llvm.reduce import reduce_row
from iree_py.codegen.llvm.typed_values import const
from iree_py.targets import Target
from iree_py.ir.types import Dim, DType

At = Callable[[ir.Value], ir.Value]


@dataclass(frozen=True)
class Floats:
    """The float type a kernel computes in: its LLVM scalar type and exp / log of it."""

    scalar: ir.Type
    exp: Callable[[ir.IRBuilder, ir.Value], ir.Value]
    log: Callable[[ir.IRBuilder, ir.Value], ir.Value]

    def load(self, b: ir.IRBuilder, base: ir.Value, index: ir.Value, ty: ir.Type) -> ir.Value:
        return b.load(element_ptr(b, base, index, self.scalar), typ=ty, align=ALIGN)

    def store(self, b: ir.IRBuilder, value: ir.Value, base: ir.Value, index: ir.Value) -> None:
        b.store(value, element_ptr(b, base, index, self.scalar), align=ALIGN)


FLOATS = {DType.f32: Floats(F32, emit_exp, emit_log), DType.f64: Floats(ir.DoubleType(), exp_f64, log_f64)}

# contiguous(b, src, dst, base, length, lanes): one f32 row when inner == 1 (length: int or i64);
# columns(b, fl, src, dst, at, length, ty): the inner positions at(j) + [0, lanes(ty)) for j < length.
RowFn = Callable[..., None]


def _add(b, x, y):
    return b.fadd(x, y)


def _like(b: ir.IRBuilder, scalar: ir.Value, ty: ir.Type) -> ir.Value:
    """`scalar` as a value of type `ty` (itself, or splat to a vector)."""
    return scalar if ty == scalar.type else splat_value(b, scalar, ty)


def _map_row(b, src, dst, base, length, lanes, fn) -> None:
    """dst[base + i] = fn(src[base + i]) over a contiguous f32 row (length: int or i64); fn gets a
    vector or, in the tail, a scalar."""
    vec_len = vector_end(b, length, lanes)
    if has_vectors(vec_len, lanes):
        vty = float_vector(lanes)
        with for_range(b, 0, vec_len, step=lanes, name="n") as j:
            idx = b.add(base, j)
            store_f32(b, fn(load_f32(b, src, idx, vty)), dst, idx)
    with for_range(b, vec_len, length, name="nt") as j:
        idx = b.add(base, j)
        store_f32(b, fn(load_f32(b, src, idx)), dst, idx)


def _column_max(b, fl: Floats, src, at: At, length, ty) -> ir.Value:
    mx = entry_alloca(b, ty)
    b.store(const(float("-inf"), ty), mx)
    with for_range(b, 0, length, name="m") as j:
        b.store(fmax(b, b.load(mx), fl.load(b, src, at(j), ty)), mx)
    return b.load(mx)


def _column_exp_sum(b, fl: Floats, src, at: At, length, ty, row_max, exp_dst=None) -> ir.Value:
    """sum(exp(x - row_max)) along the axis; the exps are also stored to exp_dst if given."""
    total = entry_alloca(b, ty)
    b.store(const(0.0, ty), total)
    with for_range(b, 0, length, name="e") as j:
        e = fl.exp(b, b.fsub(fl.load(b, src, at(j), ty), row_max))
        if exp_dst is not None:
            fl.store(b, e, exp_dst, at(j))
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
    inv = b.fdiv(const(1.0, F32), total)
    _map_row(b, dst, dst, base, length, lanes, lambda e: b.fmul(e, _like(b, inv, e.type)))


def _softmax_columns(b, fl: Floats, src, dst, at: At, length, ty):
    total = _column_exp_sum(b, fl, src, at, length, ty, _column_max(b, fl, src, at, length, ty), exp_dst=dst)
    inv = b.fdiv(const(1.0, ty), total)
    with for_range(b, 0, length, name="n") as j:
        fl.store(b, b.fmul(fl.load(b, dst, at(j), ty), inv), dst, at(j))


# --- logsoftmax ----------------------------------------------------------------------------------
def _logsoftmax_contiguous(b, src, dst, base, length, lanes):
    row_max = reduce_row(b, src, base, length, lanes, float("-inf"), fmax, lambda x, idx: x)
    total = reduce_row(b, src, base, length, lanes, 0.0, _add,
                       lambda x, idx: emit_exp(b, b.fsub(x, _like(b, row_max, x.type))))
    offset = b.fadd(row_max, emit_log(b, total))
    _map_row(b, src, dst, base, length, lanes, lambda x: b.fsub(x, _like(b, offset, x.type)))


def _logsoftmax_columns(b, fl: Floats, src, dst, at: At, length, ty):
    row_max = _column_max(b, fl, src, at, length, ty)
    offset = b.fadd(row_max, fl.log(b, _column_exp_sum(b, fl, src, at, length, ty, row_max)))
    with for_range(b, 0, length, name="n") as j:
        fl.store(b, b.fsub(fl.load(b, src, at(j), ty), offset), dst, at(j))


# --- hardmax -------------------------------------------------------------------------------------
def _hardmax_columns(b, fl: Floats, src, dst, at: At, length, ty):
    """f32; needs length >= 1 (the driver skips empty tensors)."""
    best = entry_alloca(b, ty, "best")
    where = entry_alloca(b, ty, "where")
    b.store(load_f32(b, src, at(const_i64(0)), ty), best)
    b.store(const(0.0, ty), where)
    # Indices are converted from i32: an i64 conversion needs a compiler builtin on 32-bit targets.
    with for_range(b, 1, length, name="m") as j:
        x = load_f32(b, src, at(j), ty)
        better = b.fcmp_ordered(">", x, b.load(best))
        b.store(b.select(better, x, b.load(best)), best)
        b.store(b.select(better, _like(b, b.sitofp(b.trunc(j, I32), F32), ty), b.load(where)), where)
    chosen = b.load(where)
    with for_range(b, 0, length, name="n") as j:
        hit = b.fcmp_ordered("==", chosen, _like(b, b.sitofp(b.trunc(j, I32), F32), ty))
        store_f32(b, b.select(hit, const(1.0, ty), const(0.0, ty)), dst, at(j))


# --- the shared driver ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Kind:
    contiguous: RowFn | None   # f32 rows when inner == 1 (None: by columns)
    columns: RowFn
    dtypes: tuple[DType, ...]
    needs_elements: bool       # a known empty axis is a build error


KINDS = {
    "softmax": Kind(_softmax_contiguous, _softmax_columns, (DType.f32, DType.f64), needs_elements=False),
    "logsoftmax": Kind(_logsoftmax_contiguous, _logsoftmax_columns, (DType.f32, DType.f64), needs_elements=True),
    "hardmax": Kind(None, _hardmax_columns, (DType.f32,), needs_elements=True),
}


def axis_view(spec: KernelSpec, agree: Agreements, dtypes: tuple[DType, ...]) -> tuple[Dim, Dim, Dim]:
    """(outer, axis length, inner) of the one input, after checking the spec."""
    what = agree.what
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    x, y = spec.inputs[0], spec.outputs[0]
    if x.dtype not in dtypes:
        raise CompileError(f"{what}: only {' and '.join(d.value for d in dtypes)} supported, got {x} -> {y}")
    if y.dtype != x.dtype or x.rank != y.rank:
        raise ValueError(f"{what}: output {y} differs from input {x}")
    for axis, (dx, dy) in enumerate(zip(x.shape, y.shape)):
        agree.equal(dy, dx, f"output dim {axis} (vs the input's)")
    shape = x.shape
    axis = int(spec.attrs.get("axis", len(shape) - 1))
    if not 0 <= axis < max(len(shape), 1):
        raise ValueError(f"{what}: axis {axis} out of range for rank {len(shape)}")
    length = shape[axis] if shape else 1
    return product(shape[:axis]), length, product(shape[axis + 1:])


def _body(dk: DynamicKernel, kind: Kind, fl: Floats, lanes: int, length_d: Dim, inner_d: Dim) -> None:
    """The kernel's work for one outer index, given a non-empty axis and inner part."""
    b = dk.builder
    src, dst = dk.binding(0), dk.binding(1)
    length, inner = dk.index(length_d), dk.index(inner_d)
    inner_v = dk.dim(inner_d)
    base = b.mul(dk.workgroup_id_index(0), dk.dim(product((length_d, inner_d))))

    def by_columns() -> None:
        def body(ty: ir.Type, col: ir.Value) -> None:
            kind.columns(b, fl, src, dst, lambda j: b.add(b.add(base, b.mul(j, inner_v)), col), length, ty)
        for_columns(b, inner, lanes, body, fl.scalar)

    def by_rows() -> None:
        assert kind.contiguous is not None
        kind.contiguous(b, src, dst, base, length, lanes)

    if kind.contiguous is None or fl.scalar != F32:
        by_columns()
    else:
        rows_or_columns(b, inner, by_rows, by_columns)


def _build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    kind = KINDS[spec.kind]
    agree = Agreements(f"{spec.kind} kernel {spec.name}")
    # f64 with symbolic dims stays refused, as it was before the builders merged (the f64 code path
    # would serve it; tests/frontend/test_f64math.py holds the refusal).
    dtypes = (DType.f32,) if is_dynamic(spec) else kind.dtypes
    outer, length_d, inner_d = axis_view(spec, agree, dtypes)
    if kind.needs_elements and length_d == 0:
        raise ValueError(f"{agree.what}: empty axis in {spec.inputs[0]}")
    fl = FLOATS[spec.inputs[0].dtype]
    lanes = lanes_f32(target) if fl.scalar == F32 else 1
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    agree.emit(dk)
    if isinstance(length_d, int) and isinstance(inner_d, int):
        if length_d > 0 and inner_d > 0:
            _body(dk, kind, fl, lanes, length_d, inner_d)
    else:
        length, inner = dk.dim(length_d), dk.dim(inner_d)
        not_empty = b.and_(b.icmp_signed(">", length, const_i64(0)), b.icmp_signed(">", inner, const_i64(0)))
        with b.if_then(not_empty):
            _body(dk, kind, fl, lanes, length_d, inner_d)
    dk.finish()
    return dk.info(workgroup_count=(outer, 1, 1))


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    """Kind "softmax"."""
    return _build(spec, module, target)


def build_logsoftmax(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    """Kind "logsoftmax"."""
    return _build(spec, module, target)


def build_hardmax(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    """Kind "hardmax"."""
    return _build(spec, module, target)
