"""gather / gather_elements / gather_nd / scatter_elements / scatter_nd / expand kernels against the
numpy reference (iree_py/ir/ir/ops/indexing.py): exact, several element sizes, i32 and i64 indices,
negative indices; an index outside its axis makes the kernel return STATUS_INDEX_OUT_OF_RANGE and
the reference raise IndexOutOfRange."""
from __future__ import annotations

import numpy as np
import pytest

from iree_py.codegen.kernel_abi import STATUS_INDEX_OUT_OF_RANGE
from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm.jit import run_kernels
from iree_py.ir.ops import indexing as indexing_ops
from iree_py.ir.types import DType, TensorType

rng = np.random.default_rng(7)


def _t(a: np.ndarray) -> TensorType:
    return TensorType(DType.from_numpy(a.dtype), a.shape)


def _data(shape: tuple[int, ...], dtype) -> np.ndarray:
    return (rng.integers(-100, 100, size=shape)).astype(dtype)


def _check(cases: list[tuple[str, str, list[np.ndarray], dict]]) -> None:
    """cases: (kind, reference op, inputs, attrs); every kernel built into one library."""
    refs = {"gather": indexing_ops.gather, "gather_elements": indexing_ops.gather_elements,
            "gather_nd": indexing_ops.gather_nd, "scatter_elements": indexing_ops.scatter_elements,
            "scatter_nd": indexing_ops.scatter_nd, "expand": indexing_ops.expand}
    wants = [refs[kind](ins, attrs) for kind, _, ins, attrs in cases]
    specs = [KernelSpec(f"k{i}", kind, tuple(_t(a) for a in ins), (_t(want),), attrs)
             for i, ((kind, _, ins, attrs), want) in enumerate(zip(cases, wants))]
    results = run_kernels(specs, [ins for _, _, ins, _ in cases])
    for (kind, name, _, _), (got,), want in zip(cases, results, wants):
        np.testing.assert_array_equal(got, want, err_msg=f"{kind} {name}")


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int8, np.float16])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_gathers_match_reference(dtype, index_dtype) -> None:
    data = _data((3, 5, 4), dtype)
    cases = []
    for axis in range(3):
        dim = data.shape[axis]
        idx = rng.integers(-dim, dim, size=(2, 3)).astype(index_dtype)
        cases.append(("gather", f"axis{axis}", [data, idx], {"axis": axis}))
    cases.append(("gather", "scalar index", [data, np.array(-1, index_dtype)], {"axis": 1}))
    for axis in range(3):
        shape = tuple(2 if k != axis else 6 for k in range(3))
        idx = rng.integers(-data.shape[axis], data.shape[axis], size=shape).astype(index_dtype)
        cases.append(("gather_elements", f"axis{axis}", [data, idx], {"axis": axis}))
    nd = rng.integers(-3, 3, size=(4, 2)).astype(index_dtype)
    cases.append(("gather_nd", "k2", [data, nd], {"batch_dims": 0}))
    cases.append(("gather_nd", "k3", [data, np.array([[0, -1, 2], [2, 4, -4]], index_dtype)], {"batch_dims": 0}))
    batched = np.stack([rng.integers(-5, 5, size=(2, 1)), rng.integers(-5, 5, size=(2, 1)),
                        rng.integers(-5, 5, size=(2, 1))]).astype(index_dtype)  # [3, 2, 1]
    cases.append(("gather_nd", "batch1", [data, batched], {"batch_dims": 1}))
    _check(cases)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32, np.uint8, np.float64])
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatters_match_reference(dtype, reduction: str) -> None:
    data = _data((4, 3, 5), dtype) if dtype != np.uint8 else rng.integers(0, 9, size=(4, 3, 5)).astype(dtype)
    cases = []
    for axis in range(3):
        shape = tuple(2 if k != axis else 7 for k in range(3))
        idx = rng.integers(-data.shape[axis], data.shape[axis], size=shape).astype(np.int64)
        upd = _data(shape, dtype) if dtype != np.uint8 else rng.integers(0, 9, size=shape).astype(dtype)
        cases.append(("scatter_elements", f"axis{axis}", [data, idx, upd], {"axis": axis, "reduction": reduction}))
    idx = np.array([[1, -1], [0, 2], [1, -1]], np.int32)  # a repeated index: updates apply in order
    upd = _data((3, 5), dtype) if dtype != np.uint8 else rng.integers(0, 9, size=(3, 5)).astype(dtype)
    cases.append(("scatter_nd", "k2", [data, idx, upd], {"reduction": reduction}))
    cases.append(("scatter_nd", "k1", [data, np.array([[3], [-4]], np.int64), data[:2].copy()],
                  {"reduction": reduction}))
    _check(cases)


OUT_OF_RANGE_DATA = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
FAR = [2 ** 31 - 1, -(2 ** 31)]
# (kind, name, inputs, attrs): one index in each is outside its axis, the others inside (negative ones too)
OUT_OF_RANGE_CASES = [
    ("gather", "3 of 3 rows", [OUT_OF_RANGE_DATA, np.array([0, -3, 3, 2], np.int64)], {"axis": 0}),
    ("gather", "-4 of 3 rows", [OUT_OF_RANGE_DATA, np.array([0, -4], np.int64)], {"axis": 0}),
    *(("gather", f"i32 {v}", [OUT_OF_RANGE_DATA, np.array([1, v], np.int32)], {"axis": 1}) for v in FAR),
    *(("gather", f"i64 {v}", [OUT_OF_RANGE_DATA, np.array([v, 1], np.int64)], {"axis": 1}) for v in (2 ** 62, -(2 ** 62))),
    ("gather", "the last workgroup", [np.zeros((40000,), np.float32), np.r_[np.zeros(39999), 40000].astype(np.int64)],
     {"axis": 0}),
    ("gather_elements", "4 of 4", [OUT_OF_RANGE_DATA, np.array([[-4, 3], [1, 4], [-1, 0]], np.int64)], {"axis": 1}),
    ("gather_elements", "-5 of 4", [OUT_OF_RANGE_DATA, np.array([[0, 1], [-5, 0], [-1, 0]], np.int32)], {"axis": 1}),
    ("gather_nd", "4 of 4", [OUT_OF_RANGE_DATA, np.array([[0, 3], [2, 4], [-3, -1]], np.int64)], {"batch_dims": 0}),
    ("gather_nd", "-4 of 3", [OUT_OF_RANGE_DATA, np.array([[-4, 0]], np.int32)], {"batch_dims": 0}),
    ("scatter_elements", "3 of 3", [OUT_OF_RANGE_DATA, np.array([[-3, 3, 0, 1]], np.int64),
                                     np.full((1, 4), -1.0, np.float32)], {"axis": 0, "reduction": "none"}),
    ("scatter_elements", "-5 of 4", [OUT_OF_RANGE_DATA, np.array([[0], [-5], [1]], np.int32),
                                      np.ones((3, 1), np.float32)], {"axis": 1, "reduction": "add"}),
    ("scatter_nd", "5 of 3", [OUT_OF_RANGE_DATA, np.array([[1], [5]], np.int64), np.full((2, 4), 9.0, np.float32)],
     {"reduction": "add"}),
    ("scatter_nd", "-4 of 3", [OUT_OF_RANGE_DATA, np.array([[-4, 0]], np.int64), np.ones((1,), np.float32)],
     {"reduction": "none"}),
]


@pytest.mark.parametrize("case", OUT_OF_RANGE_CASES, ids=[f"{c[0]} {c[1]}" for c in OUT_OF_RANGE_CASES])
def test_an_index_out_of_range_fails_the_kernel(case: tuple[str, str, list[np.ndarray], dict]) -> None:
    kind, _, ins, attrs = case
    refs = {"gather": indexing_ops.gather_rule, "gather_elements": indexing_ops.gather_elements_rule,
            "gather_nd": indexing_ops.gather_nd_rule, "scatter_elements": indexing_ops.scatter_elements_rule,
            "scatter_nd": indexing_ops.scatter_nd_rule}
    spec = KernelSpec("k", kind, tuple(_t(a) for a in ins), tuple(refs[kind]([_t(a) for a in ins], attrs)), attrs)
    with pytest.raises(RuntimeError, match=f"returned {STATUS_INDEX_OUT_OF_RANGE} at workgroup"):
        run_kernels([spec], [ins])
    with pytest.raises(indexing_ops.IndexOutOfRange, match="outside the range"):
        getattr(indexing_ops, kind)(ins, attrs)


def test_indices_at_both_ends_of_the_axis_are_in_range() -> None:
    """-dim and dim - 1 are the last indices that wrap / read (the edges of the checks above)."""
    data = OUT_OF_RANGE_DATA
    _check([("gather", "edges", [data, np.array([-3, 2, -1, 0], np.int64)], {"axis": 0}),
            ("gather_elements", "edges", [data, np.array([[-4, 3], [3, -4], [0, -1]], np.int32)], {"axis": 1}),
            ("gather_nd", "edges", [data, np.array([[-3, -4], [2, 3]], np.int64)], {"batch_dims": 0}),
            ("scatter_nd", "edges", [data, np.array([[-3], [2]], np.int64), np.ones((2, 4), np.float32)],
             {"reduction": "add"})])
    assert np.array_equal(indexing_ops.gather([data, np.array([-3, -1], np.int64)], {"axis": 0}), data[[0, 2]])


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_expand(dtype) -> None:
    x = (rng.integers(0, 2, size=(3, 1, 4)) if dtype == np.bool_ else _data((3, 1, 4), dtype)).astype(dtype)
    _check([("expand", "middle", [x, ], {"shape": [2, 3, 5, 4]}),
            ("expand", "same", [x], {"shape": [3, 1, 4]}),
            ("expand", "front", [x[0, 0].copy()], {"shape": [6, 4]})])


def test_bad_specs_are_rejected() -> None:
    """A malformed spec is the caller's bug: the builder's ValueError, with a note naming the kernel
    (compile_model turns it into an InternalCompilerError that says so)."""
    from iree_py.codegen.llvm import build_executable
    from iree_py.targets import load_target
    data, f_idx = TensorType(DType.f32, (3, 4)), TensorType(DType.f32, (2,))
    with pytest.raises(ValueError, match="must be i32 or i64") as caught:
        build_executable([KernelSpec("g", "gather", (data, f_idx), (TensorType(DType.f32, (2, 4)),), {"axis": 0})],
                         load_target("host"))
    assert caught.value.__notes__ == ["while generating kernel g, gather, for host"]
    idx = TensorType(DType.i64, (2,))
    with pytest.raises(ValueError, match="should be"):
        build_executable([KernelSpec("g", "gather", (data, idx), (TensorType(DType.f32, (3, 4)),), {"axis": 0})],
                         load_target("host"))
    bools = TensorType(DType.bool, (3, 4))
    with pytest.raises(ValueError, match="reduction 'add' on bool"):
        build_executable([KernelSpec("s", "scatter_nd", (bools, TensorType(DType.i64, (1, 1)),
                                                         TensorType(DType.bool, (1, 4))), (bools,),
                                     {"reduction": "add"})], load_target("host"))
