"""Index arithmetic shared by the SPIR-V kernels: dims as ints or Exprs, row-major strides, a
linear index split into coordinates, and the index of a broadcast input."""
from __future__ import annotations

from iree_py.codegen.spirv.builder import KernelBuilder, Value
from iree_py.ir.symbols import Expr, dim
from iree_py.ir.types import TensorType

Dim = int | Expr


def dims(t: TensorType) -> list[Dim]:
    return [dim(d) for d in t.shape]


def product(values: list[Dim]) -> Dim:
    n: Dim = 1
    for v in values:
        n = dim(v * n) if isinstance(v, Expr) else dim(n * v)
    return n


def strides(shape: list[Dim]) -> list[Dim]:
    return [product(shape[i + 1:]) for i in range(len(shape))]


def unravel(b: KernelBuilder, index: Value, shape: list[Dim]) -> list[Value]:
    """The coordinates of linear `index` in a row-major array of `shape`."""
    coords: list[Value] = []
    rest = index
    for axis in range(len(shape) - 1, -1, -1):
        if axis == 0:
            coords.append(rest)
            break
        d = b.dim(shape[axis])
        coords.append(rest % d)
        rest = rest / d
    return coords[::-1]


def linear(b: KernelBuilder, coords: list[Value | int], shape: list[Dim]) -> Value:
    """The row-major index of `coords` in an array of `shape`."""
    total = b.int(0)
    for c, s in zip(coords, strides(shape)):
        if s != 0:
            total = total + b.lift(c, "i32") * b.dim(s)
    return total


def broadcast_index(b: KernelBuilder, out_coords: list[Value], in_shape: list[Dim]) -> Value:
    """The index in an input of `in_shape` broadcast numpy-style to the output the coords index."""
    offset = len(out_coords) - len(in_shape)
    total = b.int(0)
    for axis, (d, s) in enumerate(zip(in_shape, strides(in_shape))):
        if d == 1:
            continue
        total = total + out_coords[offset + axis] * b.dim(s)
    return total


def read_index(b: KernelBuilder, binding: int, position: Value, words: int, size: Value) -> Value:
    """Index `position` of an i32 (words 1) or i64 (words 2, read as its low word: every index the
    backend handles is < 2**31) indices binding, a negative one wrapped once by `size`, then clamped
    into [0, size): this backend has no dispatch status to fail with yet (docs/vulkan.md)."""
    k = b.load(binding, position * words)
    k = b.select(k < 0, k + size, k)
    return b.max(b.min(k, size - 1), 0)
