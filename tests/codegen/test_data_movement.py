"""transpose and concat kernels: exact copies, f32 and other element sizes."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm import build_executable
from iree_py.codegen.llvm.jit import run_kernels
from iree_py.targets import load_target
from iree_py.ir.types import DType, TensorType


def _t(a: np.ndarray) -> TensorType:
    return TensorType(DType.from_numpy(a.dtype), a.shape)


def test_transpose_every_permutation_of_rank_4() -> None:
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 9)).astype(np.float32)
    perms = list(itertools.permutations(range(4)))
    specs = [KernelSpec(f"t{k}", "transpose", (_t(x),), (_t(x.transpose(p)),), {"perm": p})
             for k, p in enumerate(perms)]
    for p, (got,) in zip(perms, run_kernels(specs, [[x]] * len(specs))):
        np.testing.assert_array_equal(got, x.transpose(p), err_msg=str(p))


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.float32])
def test_transpose_other_element_sizes(dtype) -> None:
    x = (np.arange(5 * 7 * 3) % 100).astype(dtype).reshape(5, 7, 3)
    spec = KernelSpec("t", "transpose", (_t(x),), (_t(x.transpose(2, 0, 1)),), {"perm": (2, 0, 1)})
    (got,), = run_kernels([spec], [[x]])
    np.testing.assert_array_equal(got, x.transpose(2, 0, 1))


def test_concat_every_axis() -> None:
    rng = np.random.default_rng(1)
    base = (2, 3, 4, 5)
    specs, inputs, wants = [], [], []
    for axis in range(4):
        parts = [rng.standard_normal(base[:axis] + (n,) + base[axis + 1:]).astype(np.float32) for n in (1, 3, 9)]
        want = np.concatenate(parts, axis=axis)
        specs.append(KernelSpec(f"c{axis}", "concat", tuple(_t(p) for p in parts), (_t(want),), {"axis": axis}))
        inputs.append(parts)
        wants.append(want)
    ints = [np.arange(6, dtype=np.int64).reshape(2, 3), np.arange(4, dtype=np.int64).reshape(2, 2)]
    specs.append(KernelSpec("c_int", "concat", tuple(_t(p) for p in ints), (TensorType(DType.i64, (2, 5)),), {"axis": 1}))
    inputs.append(ints)
    wants.append(np.concatenate(ints, axis=1))
    for spec, (got,), want in zip(specs, run_kernels(specs, inputs), wants):
        np.testing.assert_array_equal(got, want, err_msg=spec.name)


def test_bad_shapes_are_rejected() -> None:
    x = TensorType(DType.f32, (2, 3))
    with pytest.raises(ValueError, match="not a permutation"):
        build_executable([KernelSpec("t", "transpose", (x,), (x,), {"perm": (0, 0)})], load_target("host"))
    with pytest.raises(ValueError, match="sum to 6"):
        build_executable([KernelSpec("c", "concat", (x, x), (TensorType(DType.f32, (2, 5)),), {"axis": 1})],
                         load_target("host"))


SLICES = [  # (shape, starts, ends, steps)
    ((4, 5, 6), (1, 0, 2), (3, 5, 6), (1, 1, 1)),          # inner rows contiguous
    ((4, 5, 6), (0, 4, 5), (4, -1, -1), (1, -1, -2)),      # reversed axes, negative strides
    ((3, 8, 9), (2, 1, 0), (-1, 8, 9), (-2, 3, 4)),        # steps on every axis
    ((2, 3, 40), (0, 0, 3), (2, 3, 37), (1, 1, 1)),        # long contiguous runs (vector copy)
    ((5, 7), (4, 6), (-1, -1), (-1, -1)),                  # full reversal
    ((4, 6), (1, 2), (1, 6), (1, 1)),                      # empty output
]


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int8])
def test_slice_matches_numpy(dtype) -> None:
    from iree_py.ir.ops.layout import slice_
    specs, inputs, wants = [], [], []
    for k, (shape, starts, ends, steps) in enumerate(SLICES):
        x = (np.arange(np.prod(shape)) % 113 - 50).astype(dtype).reshape(shape)
        want = slice_([x], {"starts": starts, "ends": ends, "steps": steps})
        index = tuple(slice(s, None if e < 0 else e, st) for s, e, st in zip(starts, ends, steps))
        np.testing.assert_array_equal(want, x[index])  # the reference itself against numpy slicing
        specs.append(KernelSpec(f"s{k}", "slice", (_t(x),), (_t(want),),
                                {"starts": starts, "ends": ends, "steps": steps}))
        inputs.append([x])
        wants.append(want)
    for spec, (got,), want in zip(specs, run_kernels(specs, inputs), wants):
        np.testing.assert_array_equal(got, want, err_msg=spec.name)


def test_slice_kernel_rejects_wrong_output() -> None:
    x = TensorType(DType.f32, (4, 6))
    with pytest.raises(ValueError, match=r"axis 1: 0:6:2 of 6 gives 3, output has 6"):
        build_executable([KernelSpec("s", "slice", (x,), (x,), {"starts": (0, 0), "ends": (4, 6), "steps": (1, 2)})],
                         load_target("host"))
    with pytest.raises(ValueError, match=r"step 0 is not allowed"):
        build_executable([KernelSpec("s", "slice", (x,), (x,), {"starts": (0, 0), "ends": (4, 6), "steps": (1, 0)})],
                         load_target("host"))
