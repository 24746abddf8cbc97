"""The "resize" kernel: a gather-and-blend over tap tables computed at compile time
(iree_py/ir/resize_math.py).

Bindings: X, index table (i32), weight table (f32), Y. X is f32, or any dtype when every axis
has at most one tap (nearest: the element is moved, weights ignored). attrs: sizes (the output
shape), taps (per axis; 0 = the axis is copied), extrapolation_value. For an output position o,
each resized axis a contributes taps t with source index index_a[o_a, t] and weight
weight_a[o_a, t]; the output is the sum over all tap combinations of the product of the weights
times x at those indices, or extrapolation_value when some axis's first index is -1 (outside the
input, tf_crop_and_resize). One workgroup per index of the leading axes (all but the last two).
"""
from __future__ import annotations

import math

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (F32, I32, I64, begin_kernel, const_f32, const_i64, element_ptr, entry_alloca,
                                         for_range, load_f32, static_shape, store_f32, strides_of)
from iree_py.codegen.llvm.copy_common import element_type
from iree_py.codegen.llvm.pad import value_bits
from iree_py.ir.types import DType


def _check(spec: KernelSpec) -> tuple[tuple[int, ...], tuple[int, ...], list[int]]:
    what = f"resize kernel {spec.name}"
    if len(spec.inputs) != 3 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects X, index table, weight table and 1 output")
    x_t, index_t, weight_t = spec.inputs
    if spec.outputs[0].dtype != x_t.dtype:
        raise ValueError(f"{what}: output dtype {spec.outputs[0].dtype.value} != input {x_t.dtype.value}")
    if index_t.dtype != DType.i32 or weight_t.dtype != DType.f32:
        raise ValueError(f"{what}: tables must be i32 and f32, got {index_t} and {weight_t}")
    in_shape = static_shape(x_t, what)
    out_shape = static_shape(spec.outputs[0], what)
    taps = [int(n) for n in spec.attrs["taps"]]
    if tuple(int(d) for d in spec.attrs["sizes"]) != out_shape or len(taps) != len(in_shape):
        raise ValueError(f"{what}: sizes {spec.attrs['sizes']} / taps {taps} do not match {in_shape} -> {out_shape}")
    entries = sum(n * o for n, o in zip(taps, out_shape))
    if index_t.num_elements != entries or weight_t.num_elements != entries:
        raise ValueError(f"{what}: tables hold {index_t.num_elements} entries, taps need {entries}")
    if x_t.dtype != DType.f32 and any(n > 1 for n in taps):
        raise ValueError(f"{what}: only f32 blends several taps; {x_t.dtype.value} takes one (nearest), taps {taps}")
    for axis, (n, i, o) in enumerate(zip(taps, in_shape, out_shape)):
        if n == 0 and i != o:
            raise ValueError(f"{what}: axis {axis} is copied (0 taps) but {i} != {o}")
    return in_shape, out_shape, taps


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    in_shape, out_shape, taps = _check(spec)
    rank = len(out_shape)
    in_strides, out_strides = strides_of(in_shape), strides_of(out_shape)
    table_base, offset = [], 0
    for n, o in zip(taps, out_shape):
        table_base.append(offset)
        offset += n * o
    resized = [a for a in range(rank) if taps[a]]
    split = max(0, rank - 2)
    groups = math.prod(out_shape[:split])
    extrapolation = float(spec.attrs.get("extrapolation_value", 0.0))
    dtype = spec.inputs[0].dtype
    copy_elem = None if dtype == DType.f32 else element_type(dtype.itemsize, f"resize kernel {spec.name}")

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, index_table, weight_table, dst = (kb.binding(i) for i in range(4))
    acc = entry_alloca(b, F32)
    position: list[ir.Value] = [const_i64(0)] * rank
    rest = kb.workgroup_id_index(0)
    for axis in range(split - 1, -1, -1):
        position[axis] = b.urem(rest, const_i64(out_shape[axis])) if axis else rest
        rest = b.udiv(rest, const_i64(out_shape[axis])) if axis else rest

    def entry(axis: int, tap: ir.Value | int) -> ir.Value:
        return b.add(b.mul(position[axis], const_i64(taps[axis])), b.add(const_i64(table_base[axis]),
                                                                          const_i64(tap) if isinstance(tap, int)
                                                                          else tap))

    def source_index(axis: int, tap: ir.Value | int) -> ir.Value:
        return b.sext(b.load(element_ptr(b, index_table, entry(axis, tap), I32), typ=I32, align=4), I64)

    def copy(offset: ir.Value, out_offset: ir.Value) -> None:
        """Non-f32 (nearest): one tap per axis, its weight 1: move the element."""
        for axis in resized:
            offset = b.add(offset, b.mul(source_index(axis, 0), const_i64(in_strides[axis])))
        align = min(4, copy_elem.width // 8)
        v = b.load(element_ptr(b, src, offset, copy_elem), typ=copy_elem, align=align)
        b.store(v, element_ptr(b, dst, out_offset, copy_elem), align=align)

    def blend(level: int, offset: ir.Value, weight: ir.Value | None) -> None:
        if level == len(resized):
            x = load_f32(b, src, offset)
            b.store(b.fadd(b.load(acc), x if weight is None else b.fmul(weight, x)), acc)
            return
        axis = resized[level]
        with for_range(b, 0, taps[axis], name=f"tap{axis}") as t:
            w = load_f32(b, weight_table, entry(axis, t))
            here = b.add(offset, b.mul(source_index(axis, t), const_i64(in_strides[axis])))
            blend(level + 1, here, w if weight is None else b.fmul(weight, w))

    def element() -> None:
        out_offset = const_i64(0)
        copied = const_i64(0)
        for axis in range(rank):
            out_offset = b.add(out_offset, b.mul(position[axis], const_i64(out_strides[axis])))
            if not taps[axis]:
                copied = b.add(copied, b.mul(position[axis], const_i64(in_strides[axis])))
        outside = ir.Constant(ir.IntType(1), 0)
        for axis in resized:
            outside = b.or_(outside, b.icmp_signed("<", source_index(axis, 0), const_i64(0)))
        with b.if_else(outside) as (then, otherwise):
            with then:
                if copy_elem is None:
                    store_f32(b, const_f32(extrapolation), dst, out_offset)
                else:
                    bits = value_bits(extrapolation, dtype.numpy)
                    b.store(ir.Constant(copy_elem, bits), element_ptr(b, dst, out_offset, copy_elem),
                            align=min(4, copy_elem.width // 8))
            with otherwise:
                if copy_elem is not None:
                    copy(copied, out_offset)
                    return
                b.store(const_f32(0.0), acc)
                blend(0, copied, None)
                store_f32(b, b.load(acc), dst, out_offset)

    def loops(axis: int) -> None:
        if axis == rank:
            element()
            return
        with for_range(b, 0, out_shape[axis], name=f"o{axis}") as i:
            position[axis] = i
            loops(axis + 1)

    if all(out_shape):
        loops(split)
    kb.finish()
    return KernelInfo(spec.name, (max(groups, 1), 1, 1), (),
                      tuple(t.num_bytes for t in (*spec.inputs, spec.outputs[0])))
