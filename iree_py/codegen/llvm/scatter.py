"""The "scatter_elements" and "scatter_nd" kernels: bindings data, indices, updates, output.

The output starts as a copy of data; then the updates are applied in order (index order of
`indices`), each combined with the output by attrs reduction: none (store), add, mul, max, min.
An index still outside its axis after wrapping negatives fails the dispatch with
STATUS_INDEX_OUT_OF_RANGE (codegen/kernel_abi.py), as onnxruntime fails the call: the kernel never
writes outside its output. One workgroup, so later updates see earlier ones.

  scatter_elements  axis: out[p with p[axis] = idx[p]] op= updates[p]
  scatter_nd        out[idx[m, :], c] op= updates[m, c]
Reduction none moves elements of any size; the others compute in f32, f64 or the integer types.
"""
from __future__ import annotations

import math
from typing import Callable

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.kernel_abi import STATUS_INDEX_OUT_OF_RANGE
from iree_py.codegen.llvm.common import (ALIGN, begin_kernel, const_i64, element_ptr, for_range, lanes_f32, return_unless,
                                         strides_of)
from iree_py.codegen.llvm.copy_common import element_type, emit_contiguous_copy
from iree_py.codegen.llvm.index_common import check_indexing, elements_offset, tuple_offset
from iree_py.ir.ops import indexing as indexing_ops
from iree_py.ir.types import DType

# (builder, update row, indices pointer) -> (output element offset of the row, whether it is in range)
RowTarget = Callable[[ir.IRBuilder, ir.Value, ir.Value], tuple[ir.Value, ir.Value]]

FLOAT_TYPES = {DType.f32: ir.FloatType(), DType.f64: ir.DoubleType()}
SIGNED_TYPES = {DType.i8: 8, DType.i16: 16, DType.i32: 32, DType.i64: 64}
UNSIGNED_TYPES = {DType.u8: 8}
DATA_INDICES_UPDATES = ("data", "indices", "updates")


def _arith_type(dtype: DType, reduction: str, what: str) -> ir.Type:
    if dtype in FLOAT_TYPES:
        return FLOAT_TYPES[dtype]
    if dtype in SIGNED_TYPES or dtype in UNSIGNED_TYPES:
        return ir.IntType({**SIGNED_TYPES, **UNSIGNED_TYPES}[dtype])
    raise ValueError(f"{what}: reduction {reduction!r} on {dtype.value} is not supported "
                     f"(f32, f64, i8, u8, i16, i32, i64)")


def _combine(b: ir.IRBuilder, reduction: str, dtype: DType, old: ir.Value, new: ir.Value) -> ir.Value:
    is_float = dtype in FLOAT_TYPES
    if reduction == "none":
        return new
    if reduction == "add":
        return b.fadd(old, new) if is_float else b.add(old, new)
    if reduction == "mul":
        return b.fmul(old, new) if is_float else b.mul(old, new)
    op = ">" if reduction == "max" else "<"
    if is_float:
        keep_old = b.fcmp_ordered(op, old, new)
    elif dtype in UNSIGNED_TYPES:
        keep_old = b.icmp_unsigned(op, old, new)
    else:
        keep_old = b.icmp_signed(op, old, new)
    return b.select(keep_old, old, new)


def _build_rows(spec: KernelSpec, module: ir.Module, target, rows: int, chunk: int, destination: RowTarget
                ) -> KernelInfo:
    data_t, out_t = spec.inputs[0], spec.outputs[0]
    what = f"{spec.kind} kernel {spec.name}"
    reduction = str(spec.attrs["reduction"])
    copy_elem = element_type(data_t.dtype.itemsize, what)
    elem = copy_elem if reduction == "none" else _arith_type(data_t.dtype, reduction, what)
    align = min(ALIGN, data_t.dtype.itemsize)
    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    data, indices, updates, out = (kb.binding(i) for i in range(4))
    emit_contiguous_copy(b, out, const_i64(0), data, const_i64(0), data_t.num_elements, copy_elem, lanes_f32(target))
    if chunk:
        with for_range(b, 0, rows, name="row") as row:
            dst_off, in_range = destination(b, row, indices)
            return_unless(b, in_range, STATUS_INDEX_OUT_OF_RANGE, "index")
            with for_range(b, 0, chunk, name="c") as j:
                dst = element_ptr(b, out, b.add(dst_off, j), elem)
                new = b.load(element_ptr(b, updates, b.add(b.mul(row, const_i64(chunk)), j), elem),
                             typ=elem, align=align)
                old = b.load(dst, typ=elem, align=align)
                b.store(_combine(b, reduction, data_t.dtype, old, new), dst, align=align)
    kb.finish()
    return KernelInfo(spec.name, (1, 1, 1), (), tuple(t.num_bytes for t in (*spec.inputs, out_t)))


def build_scatter_elements(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    data, indices, ity = check_indexing(spec, indexing_ops.scatter_elements_rule, DATA_INDICES_UPDATES)
    axis = int(spec.attrs["axis"])

    def destination(b: ir.IRBuilder, row: ir.Value, idx_ptr: ir.Value) -> tuple[ir.Value, ir.Value]:
        return elements_offset(b, row, idx_ptr, ity, const_i64(data[axis]), [const_i64(d) for d in indices],
                               [const_i64(s) for s in strides_of(data)], axis)

    return _build_rows(spec, module, target, math.prod(indices), 1, destination)


def build_scatter_nd(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    data, indices, ity = check_indexing(spec, indexing_ops.scatter_nd_rule, DATA_INDICES_UPDATES)
    k = indices[-1]

    def destination(b: ir.IRBuilder, row: ir.Value, idx_ptr: ir.Value) -> tuple[ir.Value, ir.Value]:
        return tuple_offset(b, row, idx_ptr, ity, data, k)

    return _build_rows(spec, module, target, math.prod(indices[:-1]), math.prod(data[k:]), destination)
