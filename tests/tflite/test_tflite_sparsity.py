"""Sparse TFLite constants (Tensor.sparsity) and DENSIFY, compiled for the host.

Each encoding is checked three ways against the dense array it stands for: iree-py's densifier
(sparsity.densify), LiteRT's DENSIFY kernel (its builtin FormatConverter, the reference), and the
compiled module. Hand-written encodings first (CSR on one and on two dims, another traversal order,
block sparse with a block map, each with uint8, uint16 and int32 index vectors), then random tensors
encoded by `encode` below (a plain dense-to-sparse walk, checked against LiteRT too), then the
pattern the MediaPipe models use (float16 weights -> DENSIFY -> DEQUANTIZE -> CONV_2D), a sparse
FULLY_CONNECTED weight read without DENSIFY, and the errors.
"""
from __future__ import annotations

import numpy as np
import pytest
from tflite_harness import check, run_iree, run_tflite
from tflite_writer import Level, Sparsity, TfliteModel

import iree_py
from iree_py.errors import CompileError
from iree_py.frontends.tflite import import_tflite
from iree_py.frontends.tflite.schema.Conv2DOptions import Conv2DOptionsT
from iree_py.frontends.tflite.sparsity import SparsityError, densify

INDEX_TYPES = [np.uint8, np.uint16, np.int32]
RNG = np.random.default_rng(5)


def csr(segments: list[int], indices: list[int], index_type) -> Level:
    return Level(segments=np.array(segments, index_type), indices=np.array(indices, index_type))


# (name, dense array, traversal order, levels given the index type, block map, values in encoding order)
HAND_BUILT = [
    ("csr_1d", np.array([0, 7, 0, 0, -2, 5], np.float32), [0],
     lambda t: [csr([0, 3], [1, 4, 5], t)], None, [7, -2, 5]),
    ("csr_dim1", np.array([[1, 0, 2, 0], [0, 0, 0, 0], [0, 3, 0, 4]], np.float32), [0, 1],
     lambda t: [Level(3), csr([0, 2, 2, 4], [0, 2, 1, 3], t)], None, [1, 2, 3, 4]),
    ("csr_both_dims", np.array([[5, 0, 6], [0, 0, 0], [0, 8, 0], [0, 0, 0]], np.float32), [0, 1],
     lambda t: [csr([0, 2], [0, 2], t), csr([0, 2, 3], [0, 2, 1], t)], None, [5, 6, 8]),
    ("column_major", np.array([[1, 0, 2], [0, 0, 3]], np.float32), [1, 0],   # columns outer, rows inner
     lambda t: [Level(3), csr([0, 1, 1, 3], [0, 0, 1], t)], None, [1, 2, 3]),
    # 4x4 in 2x2 blocks: block (0, 0) and block (1, 1) present, each stored dense.
    ("block_2x2", np.array([[1, 2, 0, 0], [3, 4, 0, 0], [0, 0, 5, 0], [0, 0, 0, 6]], np.float32), [0, 1, 2, 3],
     lambda t: [Level(2), csr([0, 1, 2], [0, 1], t), Level(2), Level(2)], [0, 1], [1, 2, 3, 4, 5, 0, 0, 6]),
    # 2x8 in 1x4 blocks along dim 1 (FULLY_CONNECTED's sparse layout): row 0 block 1, row 1 block 0.
    ("block_1x4", np.array([[0, 0, 0, 0, 1, 0, 2, 3], [4, 5, 0, 6, 0, 0, 0, 0]], np.float32), [0, 1, 2],
     lambda t: [Level(2), csr([0, 1, 2], [1, 0], t), Level(4)], [1], [1, 0, 2, 3, 4, 5, 0, 6]),
    # The block dims traversed in the other order (inside a block, column-major).
    ("block_2x2_transposed", np.array([[1, 2, 0, 0], [3, 4, 0, 0]], np.float32), [0, 1, 3, 2],
     lambda t: [Level(1), csr([0, 1], [0], t), Level(2), Level(2)], [0, 1], [1, 3, 2, 4]),
]


def densify_model(shape: tuple[int, ...], values: np.ndarray, sparsity: Sparsity) -> bytes:
    m = TfliteModel()
    s = m.sparse_const("s", shape, values, sparsity)
    y = m.tensor("y", shape, values.dtype)
    m.op("DENSIFY", [s], [y])
    m.output(y)
    return m.build()


def check_encoding(dense: np.ndarray, values: np.ndarray, sparsity: Sparsity) -> None:
    """The three readings of the encoding all give `dense`, exactly."""
    ours = densify(values, dense.shape, sparsity.to_fb())
    np.testing.assert_array_equal(ours, dense)
    data = densify_model(dense.shape, values, sparsity)
    (litert,) = run_tflite(data, [])
    np.testing.assert_array_equal(litert, dense)
    (compiled,) = run_iree(data, [])
    assert compiled.dtype == dense.dtype
    np.testing.assert_array_equal(compiled, dense)


@pytest.mark.parametrize("index_type", INDEX_TYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("name,dense,order,levels,block_map,values", HAND_BUILT, ids=[c[0] for c in HAND_BUILT])
def test_hand_built_encoding(name, dense, order, levels, block_map, values, index_type):
    sparsity = Sparsity(order, levels(index_type), block_map)
    check_encoding(dense, np.array(values, dense.dtype), sparsity)


# ---------------------------------------------------------------------------------------------- encode

def encode(dense: np.ndarray, order: list[int], sparse: list[bool], block_map: list[int] | None = None,
           block_sizes: list[int] | None = None, index_type=np.int32) -> tuple[np.ndarray, Sparsity]:
    """The TFLite encoding of `dense`: `sparse[L]` says whether level L is SPARSE_CSR (an index is
    kept when its sub-tensor has a non-zero); DENSE levels keep everything, zeros included."""
    block_map, block_sizes = block_map or [], block_sizes or []
    rank = dense.ndim
    split, outer, inner = [], {}, {}
    for d in range(rank):
        outer[d] = len(split)
        if d in block_map:
            j = block_map.index(d)
            split += [dense.shape[d] // block_sizes[j], block_sizes[j]]
            inner[rank + j] = len(split) - 1
        else:
            split.append(dense.shape[d])
    axes = [outer[e] if e < rank else inner[e] for e in order]
    walk_array = dense.reshape(split).transpose(axes)
    segments: list[list[int]] = [[0] for _ in order]
    indices: list[list[int]] = [[] for _ in order]
    values: list = []

    def walk(sub: np.ndarray, level: int) -> None:
        if level == len(order):
            values.append(sub)
            return
        for i in range(sub.shape[0]):
            if not sparse[level]:
                walk(sub[i], level + 1)
            elif np.any(sub[i] != 0):
                indices[level].append(i)
                walk(sub[i], level + 1)
        if sparse[level]:
            segments[level].append(len(indices[level]))

    walk(walk_array, 0)
    levels = [csr(segments[L], indices[L], index_type) if sparse[L] else Level(walk_array.shape[L])
              for L in range(len(order))]
    return np.array(values, dense.dtype), Sparsity(order, levels, block_map or None)


def sparse_array(shape: tuple[int, ...], density: float, dtype=np.float32,
                 block: tuple[int, ...] | None = None) -> np.ndarray:
    """Random values with most elements (or, with `block`, most blocks) zero."""
    values = RNG.standard_normal(shape).astype(dtype)
    if block is None:
        return np.where(RNG.random(shape) < density, values, 0).astype(dtype)
    keep = RNG.random([s // b for s, b in zip(shape, block)]) < density
    for axis, b in enumerate(block):
        keep = np.repeat(keep, b, axis=axis)
    return np.where(keep, values, 0).astype(dtype)


@pytest.mark.parametrize("shape,order,sparse,block_map,block_sizes,index_type", [
    ((16, 24), [0, 1], [False, True], None, None, np.uint8),
    ((12, 10), [1, 0], [False, True], None, None, np.uint16),
    ((6, 5, 7), [2, 0, 1], [True, False, True], None, None, np.int32),
    ((16, 1, 1, 24), [0, 1, 2, 3], [False, False, False, True], None, None, np.uint8),   # the MediaPipe layout
    ((8, 12), [0, 1, 2, 3], [False, True, False, False], [0, 1], [2, 3], np.uint16),
    ((4, 32), [0, 1, 2], [False, True, False], [1], [16], np.uint8),
    ((6, 8, 4), [1, 0, 2, 4, 3], [True, True, False, False, False], [0, 2], [3, 2], np.int32),
    ((300, 4), [0, 1], [True, False], None, None, np.uint16),    # more than 255 positions: uint16 segments
])
def test_random_encoding(shape, order, sparse, block_map, block_sizes, index_type):
    block = tuple(block_sizes[block_map.index(d)] if block_map and d in block_map else 1 for d in range(len(shape)))
    dense = sparse_array(shape, 0.3, block=block if block_map else None)
    values, sparsity = encode(dense, order, sparse, block_map, block_sizes, index_type)
    assert values.size < dense.size       # the encoding dropped something
    check_encoding(dense, values, sparsity)


def test_float16_weights_behind_densify_and_dequantize():
    """The MediaPipe pattern: float16 sparse weights -> DENSIFY -> DEQUANTIZE -> CONV_2D."""
    w = sparse_array((16, 1, 1, 24), 0.4, np.float16)
    values, sparsity = encode(w, [0, 1, 2, 3], [False, False, False, True], index_type=np.uint8)
    m = TfliteModel()
    x = m.input("x", (1, 6, 6, 24))
    s = m.sparse_const("w_sparse", w.shape, values, sparsity)
    w16, w32, y = m.tensor("w16", w.shape, np.float16), m.tensor("w32", w.shape), m.tensor("y")
    b = m.const("b", RNG.standard_normal(16).astype(np.float32))
    m.op("DENSIFY", [s], [w16])
    m.op("DEQUANTIZE", [w16], [w32])
    opts = Conv2DOptionsT()
    opts.padding, opts.strideH, opts.strideW = 1, 1, 1
    m.op("CONV_2D", [x, w32, b], [y], opts)
    m.output(y)
    check(m)


def test_sparse_fully_connected_weights_without_densify():
    """LiteRT's FULLY_CONNECTED reads sparse weights itself; iree-py reads them as the dense constant."""
    w = sparse_array((8, 12), 0.3)
    values, sparsity = encode(w, [0, 1], [False, True])
    m = TfliteModel()
    x = m.input("x", (3, 12))
    wi = m.sparse_const("w", w.shape, values, sparsity)
    y = m.tensor("y", (3, 8))
    m.op("FULLY_CONNECTED", [x, wi, -1], [y])
    m.output(y)
    check(m)


# ---------------------------------------------------------------------------------------------- errors

def csr_model(levels: list[Level], values: list[float], shape=(3, 4), order=(0, 1), block_map=None) -> TfliteModel:
    m = TfliteModel()
    s = m.sparse_const("weights", shape, np.array(values, np.float32), Sparsity(list(order), levels, block_map))
    y = m.tensor("y", shape)
    m.op("DENSIFY", [s], [y])
    m.output(y)
    return m


GOOD_LEVELS = [Level(3), csr([0, 2, 2, 4], [0, 2, 1, 3], np.uint8)]


@pytest.mark.parametrize("levels,values,order,block_map,message", [
    (GOOD_LEVELS, [1, 2, 3], (0, 1), None, "the encoding places 4 values, the buffer holds 3"),
    ([Level(3), csr([0, 2, 2, 4], [0, 2, 1, 4], np.uint8)], [1, 2, 3, 4], (0, 1), None,
     r"dim_metadata\[1\] \(SPARSE_CSR\): array_indices must lie in 0..3"),
    ([Level(3), csr([0, 2, 4], [0, 2, 1, 3], np.uint8)], [1, 2, 3, 4], (0, 1), None,
     r"dim_metadata\[1\] \(SPARSE_CSR\) has 3 array_segments; the levels before it reach 3 positions, which need 4"),
    ([Level(3), csr([0, 3, 2, 4], [0, 2, 1, 3], np.uint8)], [1, 2, 3, 4], (0, 1), None,
     r"dim_metadata\[1\] \(SPARSE_CSR\): array_segments must increase from >= 0 to at most the 4 array_indices, "
     r"got \[0, 3, 2, 4\]"),
    ([Level(2), csr([0, 2, 2, 4], [0, 2, 1, 3], np.uint8)], [1, 2, 3, 4], (0, 1), None,
     r"dim_metadata\[0\] \(DENSE\) has dense_size 2; dim 0 of the traversal has size 3"),
    ([Level(3), Level(segments=np.array([0, 1, 1, 2], np.int32), indices=None)], [1, 2], (0, 1), None,
     r"dim_metadata\[1\] \(SPARSE_CSR\) has no array_indices"),
    (GOOD_LEVELS, [1, 2, 3, 4], (0, 0), None, r"traversal_order \[0, 0\] is not a permutation"),
    ([Level(3), csr([0, 2, 2, 4], [0, 1, 1, 1], np.uint8)], [1, 2, 3, 4], (0, 1), None,
     r"the encoding places two values on element \(2, 1\)"),
    ([Level(3), csr([0, 1, 2, 3], [0, 1, 0], np.uint8), csr([0, 2, 2, 4], [0, 1, 0, 1], np.uint8)],
     [1, 2, 3, 4], (0, 1, 2), [1], r"block dim 2 \(dim_metadata\[2\]\) is SPARSE_CSR; only dense blocks"),
    ([Level(3), Level(4), Level(1), Level(1)], [0.0] * 12, (0, 1, 2, 3), [1, 0], r"block_map \[1, 0\] must name"),
])
def test_bad_encoding_is_named_with_tensor_and_operator(levels, values, order, block_map, message):
    m = csr_model(levels, values, order=order, block_map=block_map)
    where = r"sparse tensor 0 \('weights'\), read by operator 0 \(DENSIFY\): "
    with pytest.raises(CompileError, match=where + message):
        import_tflite(m.build())


def test_unknown_dimension_format_is_refused():
    m = csr_model(GOOD_LEVELS, [1, 2, 3, 4])
    m.tensors[0].sparsity.dimMetadata[1].format = 2
    with pytest.raises(CompileError, match=r"sparse tensor 0 \('weights'\), read by operator 0 \(DENSIFY\): "
                                           r"dim_metadata\[1\] has format 2, not implemented \(DENSE, SPARSE_CSR\)"):
        import_tflite(m.build())


def test_sparse_tensor_without_data_is_refused():
    m = TfliteModel()
    x = m.input("x", (3, 4))
    m.tensors[x].sparsity = Sparsity([0, 1], GOOD_LEVELS).to_fb()
    y = m.tensor("y", (3, 4))
    m.op("RELU", [x], [y])
    m.output(y)
    with pytest.raises(CompileError, match=r"sparse tensor 0 \('x'\), read by operator 0 \(RELU\): has no data; "
                                           "only sparse constants are supported"):
        import_tflite(m.build())


def test_densify_of_a_dense_constant_is_refused():
    m = TfliteModel()
    s = m.const("dense", np.ones((2, 2), np.float32))
    y = m.tensor("y", (2, 2))
    m.op("DENSIFY", [s], [y])
    m.output(y)
    with pytest.raises(CompileError, match=r"operator 0 \(DENSIFY\): DENSIFY's input \(tensor 0\) must be a sparse "
                                           "constant"):
        iree_py.compile(m.build())


def test_block_sizes_that_litert_reads_differently_are_refused():
    """With three block dims in a cycle, LiteRT takes block dim n + j's size from level
    traversal_order[n + j] rather than from the level that traverses it; iree-py refuses."""
    sparsity = Sparsity([0, 1, 2, 4, 5, 3], [Level(1), Level(1), Level(1), Level(3), Level(1), Level(2)], [0, 1, 2])
    with pytest.raises(SparsityError, match=r"block dim 3 is traversed at level 5 \(size 2\), but TFLite takes "
                                            r"its size from level 4 \(size 1\)"):
        densify(np.zeros(6, np.float32), (2, 3, 1), sparsity.to_fb())
