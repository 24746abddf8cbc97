"""Helpers of the gather and scatter kernels: checking a spec, reading a run-time index and
walking from an index (or index tuple) to the element offset it names.

An index is i32 or i64 (sign-extended to i64). A negative index counts from the end of its axis;
`wrap_index` also says whether the result lies inside the axis, and the kernels only touch memory
for indices that do (docs/ir.md, "Indexing ops"). The walks shared by gather and scatter:
`elements_offset` (GatherElements / ScatterElements) and `tuple_offset` (GatherND / ScatterND).
"""
from __future__ import annotations

from typing import Callable

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm.common import I1, I32, I64, const_i64, element_ptr, static_shape, strides_of
from iree_py.ir.types import DType, TensorType

INDEX_TYPES = {DType.i32: I32, DType.i64: I64}


def index_type(t: TensorType, what: str) -> ir.IntType:
    if t.dtype not in INDEX_TYPES:
        raise ValueError(f"{what}: indices {t} must be i32 or i64")
    return INDEX_TYPES[t.dtype]


def load_index(b: ir.IRBuilder, base: ir.Value, position: ir.Value, ty: ir.IntType) -> ir.Value:
    """indices[position] as i64."""
    value = b.load(element_ptr(b, base, position, ty), typ=ty, align=min(4, ty.width // 8))
    return value if ty == I64 else b.sext(value, I64)


def wrap_index(b: ir.IRBuilder, index: ir.Value, dim: int) -> tuple[ir.Value, ir.Value]:
    """(index + dim if index < 0 else index, whether that lies in [0, dim)) as (i64, i1)."""
    wrapped = b.select(b.icmp_signed("<", index, const_i64(0)), b.add(index, const_i64(dim)), index)
    return wrapped, b.icmp_unsigned("<", wrapped, const_i64(dim))


def all_true(b: ir.IRBuilder, flags: list[ir.Value]) -> ir.Value:
    result: ir.Value = ir.Constant(I1, 1)
    for flag in flags:
        result = b.and_(result, flag)
    return result


def unravel(b: ir.IRBuilder, flat: ir.Value, shape: tuple[int, ...]) -> list[ir.Value]:
    """Row-major coordinates of element `flat` of a tensor of `shape`."""
    coords: list[ir.Value] = [const_i64(0)] * len(shape)
    rest = flat
    for axis in range(len(shape) - 1, -1, -1):
        if axis == 0:
            coords[axis] = rest
            break
        coords[axis] = b.urem(rest, const_i64(shape[axis]))
        rest = b.udiv(rest, const_i64(shape[axis]))
    return coords


def check_indexing(spec: KernelSpec, rule: Callable, input_names: tuple[str, ...]
                   ) -> tuple[tuple[int, ...], tuple[int, ...], ir.IntType]:
    """Checks the spec's operands against the op's shape rule; returns (data shape, indices shape,
    index type). Inputs are `input_names` (data and indices first), then one output."""
    what = f"{spec.kind} kernel {spec.name}"
    if len(spec.inputs) != len(input_names) or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects inputs {', '.join(input_names)} and 1 output")
    try:
        want = rule(list(spec.inputs), spec.attrs)
    except (KeyError, ValueError) as e:
        raise ValueError(f"{what}: {e}") from None
    if want[0] != spec.outputs[0]:
        raise ValueError(f"{what}: output {spec.outputs[0]} should be {want[0]}")
    data = static_shape(spec.inputs[0], f"{what} data")
    indices = static_shape(spec.inputs[1], f"{what} indices")
    return data, indices, index_type(spec.inputs[1], what)


def elements_offset(b: ir.IRBuilder, row: ir.Value, idx_ptr: ir.Value, ity: ir.IntType,
                    data: tuple[int, ...], indices: tuple[int, ...], axis: int) -> tuple[ir.Value, ir.Value]:
    """Element `row` of `indices` names data[p with p[axis] = idx[p]] (p: row's coordinates in
    `indices`): (its element offset in data, whether the index is in range)."""
    index, in_range = wrap_index(b, load_index(b, idx_ptr, row, ity), data[axis])
    coords = unravel(b, row, indices)
    coords[axis] = index
    offset = const_i64(0)
    for coord, stride in zip(coords, strides_of(data)):
        offset = b.add(offset, b.mul(coord, const_i64(stride)))
    return offset, in_range


def tuple_offset(b: ir.IRBuilder, row: ir.Value, idx_ptr: ir.Value, ity: ir.IntType,
                 dims: tuple[int, ...], k: int) -> tuple[ir.Value, ir.Value]:
    """Index tuple `row` (k indices from idx_ptr[row * k]) names the first k coordinates of a tensor
    of shape `dims`: (its element offset in that tensor, whether every index is in range)."""
    strides = strides_of(dims)
    offset, flags = const_i64(0), []
    for j in range(k):
        raw = load_index(b, idx_ptr, b.add(b.mul(row, const_i64(k)), const_i64(j)), ity)
        index, in_range = wrap_index(b, raw, dims[j])
        offset = b.add(offset, b.mul(index, const_i64(strides[j])))
        flags.append(in_range)
    return offset, all_true(b, flags)
