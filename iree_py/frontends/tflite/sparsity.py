"""TFLite sparse tensors -> dense numpy arrays, and DENSIFY (registered in ops.py's CONVERTERS).

A sparse tensor (`Tensor.sparsity`, SparsityParameters in flatbuffers/tflite.fbs) stores only its
values; the metadata says where each one goes. For a tensor of rank n with a k-dimensional block
(0 <= k <= n) the encoding walks n + k levels in `traversal_order`: first a permutation of the n
tensor dims (a dim that `block_map` blocks counts blocks there: size / block size), then a
permutation of the k block dims n .. n+k-1, where block dim n + j indexes inside a block of tensor
dim `block_map[j]`. Level L has `dim_metadata[L]`:

- DENSE: every index 0 .. dense_size - 1 is present;
- SPARSE_CSR: for the p-th position reached so far, the present indices are
  array_indices[array_segments[p] : array_segments[p + 1]] (CSR's row pointers and column indices).

Positions are numbered level by level: a DENSE level of size D turns position p into p * D + i, a
SPARSE_CSR level into the number of the array_indices entry it read. The values follow the
traversal in order (the last level varies fastest). This is TFLite's FormatConverter::SparseToDense
(tensorflow/lite/kernels/internal/utils/sparsity_format_converter.cc), which LiteRT's DENSIFY kernel
runs, done level by level with numpy instead of element by element.

What LiteRT reads without checking (segments past the end, indices out of range, values missing) is
refused here, as are the encodings its converter reads differently from the schema's description:
a SPARSE_CSR block level, a block_map that is not increasing, and a block traversal under which
LiteRT's block sizes differ from the schema's (LiteRT takes block dim n + j's size from level
traversal_order[n + j], not from the level that traverses it; they agree when the block order is its
own inverse, as with one or two block dims).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.tflite.schema.BuiltinOperator import BuiltinOperator as B
from iree_py.frontends.tflite.schema.DimensionType import DimensionType
from iree_py.frontends.tflite.schema.SparseIndexVector import SparseIndexVector
from iree_py.frontends.tflite.schema.SparsityParameters import SparsityParametersT
from iree_py.ir.graph import Value

if TYPE_CHECKING:
    from iree_py.frontends.tflite.importer import TfliteContext

FORMAT_NAMES = {DimensionType.DENSE: "DENSE", DimensionType.SPARSE_CSR: "SPARSE_CSR"}
INDEX_VECTOR_NAMES = {SparseIndexVector.Int32Vector: "Int32Vector", SparseIndexVector.Uint16Vector: "Uint16Vector",
                      SparseIndexVector.Uint8Vector: "Uint8Vector"}


class SparsityError(ValueError):
    """A sparse encoding iree-py cannot read; the caller adds which tensor and operator."""


def _ints(values: object) -> list[int]:
    return [] if values is None else [int(v) for v in np.asarray(values).reshape(-1)]


def _index_vector(level: int, what: str, kind: int, vector: object) -> np.ndarray:
    if kind not in INDEX_VECTOR_NAMES:
        raise SparsityError(f"dim_metadata[{level}] (SPARSE_CSR) has no {what} (index vector type {kind})")
    values = getattr(vector, "values", None)
    return np.zeros(0, np.int64) if values is None else np.asarray(values, dtype=np.int64).reshape(-1)


def _check_orders(rank: int, order: list[int], block_map: list[int], levels: int) -> None:
    k = len(block_map)
    if len(order) != rank + k:
        raise SparsityError(f"traversal_order {order} has {len(order)} entries; a rank-{rank} tensor with "
                            f"{k} block dims needs {rank + k}")
    if sorted(order[:rank]) != list(range(rank)) or sorted(order[rank:]) != list(range(rank, rank + k)):
        raise SparsityError(f"traversal_order {order} is not a permutation of the tensor dims 0..{rank - 1} "
                            f"followed by one of the block dims {rank}..{rank + k - 1}")
    if levels != rank + k:
        raise SparsityError(f"dim_metadata has {levels} entries, traversal_order {order} has {rank + k}")
    if any(not 0 <= d < rank for d in block_map) or any(a >= b for a, b in zip(block_map, block_map[1:])):
        raise SparsityError(f"block_map {block_map} must name tensor dims (0..{rank - 1}) in increasing order")


def _block_sizes(shape: tuple[int, ...], order: list[int], block_map: list[int], metadata: list) -> list[int]:
    """The size of each block dim: the dense size of the level that traverses it."""
    rank, sizes = len(shape), []
    for j, dim in enumerate(block_map):
        level = order.index(rank + j)
        if metadata[level].format != DimensionType.DENSE:
            raise SparsityError(f"block dim {rank + j} (dim_metadata[{level}]) is "
                                f"{FORMAT_NAMES.get(metadata[level].format, metadata[level].format)}; "
                                "only dense blocks are supported (as in TFLite)")
        size = int(metadata[level].denseSize)
        if int(metadata[order[rank + j]].denseSize) != size:
            raise SparsityError(f"traversal_order {order}: block dim {rank + j} is traversed at level {level} (size "
                                f"{size}), but TFLite takes its size from level {order[rank + j]} (size "
                                f"{metadata[order[rank + j]].denseSize}); such a block traversal is not supported")
        if size < 1 or shape[dim] % size:
            raise SparsityError(f"block size {size} (block dim {rank + j}) does not divide dim {dim} of shape "
                                f"{list(shape)}")
        sizes.append(size)
    return sizes


def _walk(metadata: list, level_sizes: list[int], order: list[int]) -> list[np.ndarray]:
    """The index at each level of every element the encoding stores, in storage order."""
    positions = np.zeros(1, np.int64)     # after level L: the position number of each element reached
    coords: list[np.ndarray] = []         # coords[L][i]: the level-L index of element i
    for level, (meta, size) in enumerate(zip(metadata, level_sizes)):
        if meta.format == DimensionType.DENSE:
            if int(meta.denseSize) != size:
                raise SparsityError(f"dim_metadata[{level}] (DENSE) has dense_size {meta.denseSize}; dim "
                                    f"{order[level]} of the traversal has size {size}")
            coords = [np.repeat(c, size) for c in coords]
            coords.append(np.tile(np.arange(size, dtype=np.int64), positions.size))
            positions = (positions[:, None] * size + np.arange(size, dtype=np.int64)).reshape(-1)
            continue
        if meta.format != DimensionType.SPARSE_CSR:
            raise SparsityError(f"dim_metadata[{level}] has format {meta.format}, not implemented (DENSE, SPARSE_CSR)")
        segments = _index_vector(level, "array_segments", meta.arraySegmentsType, meta.arraySegments)
        indices = _index_vector(level, "array_indices", meta.arrayIndicesType, meta.arrayIndices)
        reach = int(positions.max()) + 1 if positions.size else 0
        if segments.size < reach + 1:
            raise SparsityError(f"dim_metadata[{level}] (SPARSE_CSR) has {segments.size} array_segments; the "
                                f"levels before it reach {reach} positions, which need {reach + 1}")
        if segments.size and (segments[0] < 0 or np.any(np.diff(segments) < 0) or segments[-1] > indices.size):
            raise SparsityError(f"dim_metadata[{level}] (SPARSE_CSR): array_segments must increase from >= 0 to at "
                                f"most the {indices.size} array_indices, got {segments.tolist()}")
        if indices.size and (indices.min() < 0 or indices.max() >= size):
            raise SparsityError(f"dim_metadata[{level}] (SPARSE_CSR): array_indices must lie in 0..{size - 1} (dim "
                                f"{order[level]} of the traversal), got {indices.min()}..{indices.max()}")
        starts, counts = segments[positions], segments[positions + 1] - segments[positions]
        # Position p reaches entries segments[p] .. segments[p + 1] - 1; they become the new positions.
        offsets = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
        positions = np.repeat(starts, counts) + offsets
        coords = [np.repeat(c, counts) for c in coords]
        coords.append(indices[positions])
    return coords


def densify(values: np.ndarray, shape: tuple[int, ...], sparsity: SparsityParametersT) -> np.ndarray:
    """The dense array of `shape` that the sparse encoding (`values` in order, `sparsity`) describes."""
    rank = len(shape)
    order, block_map = _ints(sparsity.traversalOrder), _ints(sparsity.blockMap)
    metadata = list(sparsity.dimMetadata or [])
    _check_orders(rank, order, block_map, len(metadata))
    block_sizes = _block_sizes(shape, order, block_map, metadata)
    blocked = list(shape)
    for dim, size in zip(block_map, block_sizes):
        blocked[dim] //= size
    coords = _walk(metadata, [blocked[d] if d < rank else block_sizes[d - rank] for d in order], order)

    values = np.asarray(values).reshape(-1)
    count = coords[0].size if coords else 1      # a scalar (no levels) stores its one value
    if values.size != count:
        raise SparsityError(f"the encoding places {count} values, the buffer holds {values.size}")
    if rank == 0:
        return values.reshape(())
    dense_index = [coords[order.index(d)] for d in range(rank)]
    for level, dim in enumerate(order[rank:], start=rank):   # inside a block: index = block * size + offset
        j = dim - rank
        dense_index[block_map[j]] = dense_index[block_map[j]] * block_sizes[j] + coords[level]
    flat = np.ravel_multi_index(tuple(dense_index), shape)
    stored, hits = np.unique(flat, return_counts=True)
    if stored.size != flat.size:
        element = tuple(int(i) for i in np.unravel_index(int(stored[np.argmax(hits > 1)]), shape))
        raise SparsityError(f"the encoding places two values on element {element}")
    dense = np.zeros(int(np.prod(shape, dtype=np.int64)), values.dtype)
    dense[flat] = values
    return dense.reshape(shape)


def densify_op(ctx: "TfliteContext") -> list[Value]:
    """DENSIFY of a sparse constant: the dense constant the importer already made of it."""
    index = ctx._index(0)
    if index < 0 or ctx.tensors[index].sparsity is None:
        raise ctx.error(f"DENSIFY's input (tensor {index}) must be a sparse constant; it has no sparsity parameters")
    x = ctx.input(0)
    if not x.is_const:
        raise ctx.error(f"DENSIFY's input '{x.name}' must be a constant")
    return [ctx.reshape(x, ctx.output_shape(0), out=0)]


TFLITE_SPARSITY_CONVERTERS = {
    B.DENSIFY: densify_op,
}
