"""cumsum and cumprod kernels (f32, f64, i32, i64) and the BitwiseAnd/Or/Xor elementwise steps
against the numpy reference: integers exactly, floats within 1e-6 of the largest magnitude."""
from __future__ import annotations

import numpy as np
import pytest

from iree_py.codegen.kernel_spec import Expr, ExprStep, KernelSpec
from iree_py.codegen.llvm.jit import run_kernels
from iree_py.ir.ops import KERNELS
from iree_py.ir.types import DType, TensorType
from tests.codegen.conftest import assert_close

RNG = np.random.default_rng(5)
REFERENCES = {"cumsum": KERNELS["CumSum"], "cumprod": KERNELS["CumProd"]}


def _t(a: np.ndarray) -> TensorType:
    return TensorType(DType.from_numpy(a.dtype), a.shape)


@pytest.mark.parametrize("kind", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_cumulative_kernels(kind: str, dtype: type) -> None:
    if np.dtype(dtype).kind == "f":
        x = RNG.uniform(0.5, 1.5, (3, 5, 4)).astype(dtype)
    else:
        x = RNG.integers(-40, 40, (3, 5, 4)).astype(dtype)  # products wrap around: exact either way
    cases = [{"axis": axis, "exclusive": exclusive, "reverse": reverse}
             for axis in range(3) for exclusive in (0, 1) for reverse in (0, 1)]
    specs = [KernelSpec(f"k{i}", kind, (_t(x),), (_t(x),), attrs) for i, attrs in enumerate(cases)]
    for spec, (got,) in zip(specs, run_kernels(specs, [[x]] * len(specs))):
        want = REFERENCES[kind]([x], spec.attrs)
        assert got.dtype == want.dtype
        if want.dtype.kind == "f":
            assert_close(got, want, rtol=1e-6, what=f"{kind} {spec.attrs}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{kind} {spec.attrs}")


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.uint64])
def test_bitwise_steps(dtype: type) -> None:
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, info.max, (4, 6), dtype=dtype, endpoint=True)
    b = RNG.integers(info.min, info.max, (6,), dtype=dtype, endpoint=True)
    specs, wants = [], []
    for i, (op, fn) in enumerate((("BitwiseAnd", np.bitwise_and), ("BitwiseOr", np.bitwise_or),
                                  ("BitwiseXor", np.bitwise_xor))):
        expr = Expr((ExprStep(op, (("in", 0), ("in", 1))),))
        specs.append(KernelSpec(f"b{i}", "elementwise", (_t(a), _t(b)), (_t(a),), {"expr": expr}))
        wants.append(fn(a, b))
    for spec, (got,), want in zip(specs, run_kernels(specs, [[a, b]] * len(specs)), wants):
        np.testing.assert_array_equal(got, want, err_msg=spec.attrs["expr"].steps[0].op)
