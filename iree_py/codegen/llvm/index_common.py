"""Helpers of the gather and scatter kernels: reading a run-time index and checking it.

An index is i32 or i64 (sign-extended to i64). A negative index counts from the end of its axis;
`wrap_index` also says whether the result lies inside the axis, and the kernels only touch memory
for indices that do (docs/ir.md, "Indexing ops").
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.llvm.common import I1, I32, I64, const_i64, element_ptr
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
