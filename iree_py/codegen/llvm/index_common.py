"""Helpers of the gather and scatter kernels: checking a spec, reading a run-time index and
walking from an index (or index tuple) to the element offset it names.

An index is i32 or i64 (sign-extended to i64). A negative index counts from the end of its axis;
`wrap_index` also says whether the result lies inside the axis; the kernels fail the dispatch with
STATUS_INDEX_OUT_OF_RANGE for one that does not, before they touch memory (docs/ir.md, "Indexing
ops"). The walks shared by gather and scatter: `elements_offset` (GatherElements / ScatterElements)
and `tuple_offset` (GatherND / ScatterND).
Dims given as i64 values may be constants or computed from push constants (`DynamicKernel.dim`).
"""
from __future__ import annotations

from typing import Callable

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm.common import I1, I32, I64, as_index, const_i64, element_ptr, static_shape, strides_of
from iree_py.codegen.llvm.copy_common import require_same_dims
from iree_py.codegen.llvm.dims import DynamicKernel
from iree_py.ir.symbols import dim
from iree_py.ir.types import Dim, DType, TensorType

INDEX_TYPES = {DType.i32: I32, DType.i64: I64}


def index_type(t: TensorType, what: str) -> ir.IntType:
    if t.dtype not in INDEX_TYPES:
        raise ValueError(f"{what}: indices {t} must be i32 or i64")
    return INDEX_TYPES[t.dtype]


def load_index(b: ir.IRBuilder, base: ir.Value, position: ir.Value, ty: ir.IntType) -> ir.Value:
    """indices[position] as i64."""
    value = b.load(element_ptr(b, base, position, ty), typ=ty, align=min(4, ty.width // 8))
    return value if ty == I64 else b.sext(value, I64)


def wrap_index(b: ir.IRBuilder, index: ir.Value, size: int | ir.Value) -> tuple[ir.Value, ir.Value]:
    """(index + size if index < 0 else index, whether that lies in [0, size)) as (i64, i1)."""
    wrapped = b.select(b.icmp_signed("<", index, const_i64(0)), b.add(index, as_index(size)), index)
    return wrapped, b.icmp_unsigned("<", wrapped, as_index(size))


def all_true(b: ir.IRBuilder, flags: list[ir.Value]) -> ir.Value:
    result: ir.Value = ir.Constant(I1, 1)
    for flag in flags:
        result = b.and_(result, flag)
    return result


def unravel(b: ir.IRBuilder, flat: ir.Value, shape: list[ir.Value]) -> list[ir.Value]:
    """Row-major coordinates of element `flat` of a tensor of `shape` (i64 dims)."""
    coords: list[ir.Value] = [const_i64(0)] * len(shape)
    rest = flat
    for axis in range(len(shape) - 1, -1, -1):
        if axis == 0:
            coords[axis] = rest
            break
        coords[axis] = b.urem(rest, shape[axis])
        rest = b.udiv(rest, shape[axis])
    return coords


def element_strides(dk: DynamicKernel, shape: tuple[Dim, ...]) -> list[ir.Value]:
    """Row-major element strides of a tensor of `shape` as i64 values (constants when static)."""
    if all(isinstance(d, int) for d in shape):
        return [const_i64(s) for s in strides_of(tuple(int(d) for d in shape))]
    strides: list[ir.Value] = [const_i64(1)] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = dk.builder.mul(strides[axis + 1], dk.dim(shape[axis + 1]))
    return strides


def check_indexing(spec: KernelSpec, rule: Callable, input_names: tuple[str, ...], dk: DynamicKernel | None = None
                   ) -> tuple[tuple[Dim, ...], tuple[Dim, ...], ir.IntType]:
    """Checks the spec's operands against the op's shape rule; returns (data shape, indices shape,
    index type). Inputs are `input_names` (data and indices first), then one output. Without `dk`
    the shapes must be static; with it they may be symbolic, and an output dim whose form differs
    from the rule's is compared at run time (the kernel refuses the dispatch)."""
    what = f"{spec.kind} kernel {spec.name}"
    if len(spec.inputs) != len(input_names) or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects inputs {', '.join(input_names)} and 1 output")
    try:
        want = rule(list(spec.inputs), spec.attrs)[0]
    except (KeyError, ValueError) as e:
        raise ValueError(f"{what}: {e}") from None
    out = spec.outputs[0]
    static = all(t.is_static for t in (*spec.inputs, out))
    if want.dtype != out.dtype or want.rank != out.rank or (static and want != out):
        raise ValueError(f"{what}: output {out} should be {want}")
    if dk is None or static:
        data = static_shape(spec.inputs[0], f"{what} data")
        indices = static_shape(spec.inputs[1], f"{what} indices")
    else:
        require_same_dims(dk, [(w, o, f"output dim {k}") for k, (w, o) in enumerate(zip(want.shape, out.shape))], what)
        data, indices = (tuple(dim(d) for d in t.shape) for t in spec.inputs[:2])
    return data, indices, index_type(spec.inputs[1], what)


def elements_offset(b: ir.IRBuilder, row: ir.Value, idx_ptr: ir.Value, ity: ir.IntType, axis_dim: ir.Value,
                    indices: list[ir.Value], strides: list[ir.Value], axis: int) -> tuple[ir.Value, ir.Value]:
    """Element `row` of `indices` (its i64 dims) names data[p with p[axis] = idx[p]] (p: row's
    coordinates in `indices`; data has `axis_dim` along axis and element `strides`): (its element
    offset in data, whether the index is in range)."""
    index, in_range = wrap_index(b, load_index(b, idx_ptr, row, ity), axis_dim)
    coords = unravel(b, row, indices)
    coords[axis] = index
    offset = const_i64(0)
    for coord, stride in zip(coords, strides):
        offset = b.add(offset, b.mul(coord, stride))
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
