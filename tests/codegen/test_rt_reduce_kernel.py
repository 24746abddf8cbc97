"""The reduce_rt kernel (codegen/llvm/reduce.py, build_runtime_axes) on the host: every kind over run-time
axis masks, input dims symbolic too, against numpy in float64 (rtol 1e-5, atol 1e-6); a mask
that disagrees with the output's element count makes it write nothing."""
from __future__ import annotations

import numpy as np
import pytest

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm.jit import run_kernel, run_kernels
from iree_py.ir.ops.reduce import RT_REDUCE_KINDS, rt_reduce_reference
from iree_py.ir.symbols import Expr
from iree_py.ir.types import DType, TensorType

N = Expr.of("n")
OUT = [Expr.of(f"o{i}") for i in range(3)]


def spec(kind: str, keepdims: int) -> KernelSpec:
    x = TensorType(DType.f32, (N, 3, 4))
    y = TensorType(DType.f32, tuple(OUT) if keepdims else tuple(OUT[:2]))
    return KernelSpec(f"rt_{kind}_{keepdims}", "reduce_rt", (x, TensorType(DType.i64, (3,))), (y,),
                      {"kind": kind, "keepdims": keepdims})


def out_symbols(x: np.ndarray, mask: list[int], keepdims: int) -> dict[str, int]:
    dims = [1 if m else d for d, m in zip(x.shape, mask)] if keepdims else [d for d, m in zip(x.shape, mask) if not m]
    return {"n": x.shape[0], **{f"o{i}": d for i, d in enumerate(dims)}}


@pytest.mark.parametrize("keepdims", [0, 1])
def test_every_kind_matches_numpy(keepdims: int) -> None:
    rng = np.random.default_rng(5)
    specs = [spec(kind, keepdims) for kind in RT_REDUCE_KINDS]
    masks = [[0, 1, 0], [1, 0, 0], [0, 0, 1]] if not keepdims else [[1, 0, 1], [0, 1, 1], [0, 1, 0]]
    for n in (1, 3):
        x = (np.abs(rng.standard_normal((n, 3, 4))) + 0.25).astype(np.float32)
        for mask in masks:
            if not keepdims and sum(mask) != 1:
                continue
            symbols = out_symbols(x, mask, keepdims)
            inputs = [[x, np.array(mask, np.int64)] for _ in specs]
            for s, (actual,) in zip(specs, run_kernels(specs, inputs, symbols=symbols)):
                expected = rt_reduce_reference([x.astype(np.float64), np.array(mask)], s.attrs)
                np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6, err_msg=f"{s.name} mask {mask}")


def test_empty_input_dim_gives_start_values() -> None:
    x = np.zeros((0, 3, 4), np.float32)
    for kind, start in (("sum", 0.0), ("max", -np.inf), ("prod", 1.0)):
        (y,) = run_kernel(spec(kind, 1), [x, np.array([1, 0, 0], np.int64)], symbols=out_symbols(x, [1, 0, 0], 1))
        np.testing.assert_array_equal(y, np.full((1, 3, 4), start, np.float32))


def test_a_mask_that_disagrees_with_the_output_writes_nothing() -> None:
    x = np.ones((2, 3, 4), np.float32)
    symbols = out_symbols(x, [0, 1, 0], 0)  # output 2 x 4 ...
    (y,) = run_kernel(spec("sum", 0), [x, np.array([0, 0, 1], np.int64)], symbols=symbols)  # ... mask says 2 x 3
    assert np.isnan(y).all()
