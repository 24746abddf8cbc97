"""Shape helpers for kernel builders: numpy broadcasting as strides, and merging of adjacent dims
that every operand walks contiguously.

Dims are ints or Exprs (canonical, iree_py/ir/symbols.py), and so are strides. An input dim that is
symbolic and not known to equal the output's may be 1 at run time (broadcast) or the output's size:
its stride is a `RuntimeBroadcast`, which the kernel resolves from the push constants and which no
merge crosses. Static shapes give plain ints, as they always did.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from iree_py.codegen.llvm.common import const_i64
from iree_py.codegen.llvm.dims import DynamicKernel, product
from iree_py.ir.symbols import Expr
from iree_py.ir.types import Dim


@dataclass(frozen=True)
class RuntimeBroadcast:
    """The stride of an axis whose symbolic input dim `dim` may be 1 at run time: 0 then, else `stride`."""

    dim: Expr
    stride: Dim


Stride = Dim | RuntimeBroadcast


def stride_value(dk: DynamicKernel, stride: Stride) -> ir.Value:
    """A stride as an i64 (call it in the entry block): a RuntimeBroadcast is 0 where its dim is 1
    at run time."""
    if not isinstance(stride, RuntimeBroadcast):
        return dk.dim(stride)
    b = dk.builder
    return b.select(b.icmp_signed("==", dk.dim(stride.dim), const_i64(1)), const_i64(0), dk.dim(stride.stride))


def row_major(shape: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """Row-major element strides of `shape` (ints for a static shape)."""
    strides: list[Dim] = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = product((strides[axis + 1], shape[axis + 1]))
    return tuple(strides)


def broadcast_strides(in_shape: tuple[Dim, ...], out_shape: tuple[Dim, ...], what: str) -> tuple[Stride, ...]:
    """Element strides of an input broadcast numpy-style to `out_shape` (0 on broadcast dims)."""
    if len(in_shape) > len(out_shape):
        raise ValueError(f"{what}: input shape {in_shape} has higher rank than output {out_shape}")
    padded = (1,) * (len(out_shape) - len(in_shape)) + tuple(in_shape)
    own = row_major(padded)
    strides: list[Stride] = []
    for axis, (i, o) in enumerate(zip(padded, out_shape)):
        if i == o:
            strides.append(own[axis] if o != 1 else 0)
        elif i == 1:
            strides.append(0)
        elif isinstance(i, int) and isinstance(o, int):
            raise ValueError(f"{what}: input shape {in_shape} does not broadcast to output shape {out_shape}")
        elif o == 1:  # a symbolic i that must be 1 at run time (the kernel checks): index 0 only
            strides.append(0)
        elif isinstance(i, int):  # a symbolic output dim that must be i at run time
            strides.append(own[axis])
        else:
            strides.append(RuntimeBroadcast(i, own[axis]))
    return tuple(strides)


def _merges(outer: Stride, inner: Stride, inner_dim: Dim) -> bool:
    if isinstance(outer, RuntimeBroadcast) or isinstance(inner, RuntimeBroadcast):
        return False
    return outer == product((inner, inner_dim))


def collapse_dims(shape: tuple[Dim, ...], operand_strides: list[tuple[Stride, ...]]
                  ) -> tuple[tuple[Dim, ...], list[tuple[Stride, ...]]]:
    """Merge adjacent dims wherever every operand's strides allow it; drop size-1 dims.

    Returns (shape, strides per operand) with at least one dim."""
    dims = [(n, [s[axis] for s in operand_strides]) for axis, n in enumerate(shape) if n != 1]
    if not dims:
        return (1,), [(0,) for _ in operand_strides]
    merged = [dims[0]]
    for n, strides in dims[1:]:
        prev_n, prev_strides = merged[-1]
        if all(_merges(ps, s, n) for ps, s in zip(prev_strides, strides)):
            merged[-1] = (product((prev_n, n)), strides)
        else:
            merged.append((n, strides))
    out_shape = tuple(n for n, _ in merged)
    out_strides = [tuple(strides[k] for _, strides in merged) for k in range(len(operand_strides))]
    return out_shape, out_strides
