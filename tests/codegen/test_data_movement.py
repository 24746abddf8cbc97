"""transpose and concat kernels: exact copies, f32 and other element sizes."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm import build_executable
from iree_py.codegen.llvm.jit import run_kernels
from iree_py.codegen.target import load_target
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
