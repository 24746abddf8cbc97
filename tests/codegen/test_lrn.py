"""LRN against a float64 numpy reference of the ONNX definition (even and odd sizes, any rank)
and against onnxruntime for the 4-D odd-size case it supports."""
from __future__ import annotations

import numpy as np

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm.jit import run_kernels
from tests.codegen.conftest import assert_close, f32, run_onnx_op


def _lrn(x: np.ndarray, size: int, alpha: float, beta: float, bias: float) -> np.ndarray:
    x64 = x.astype(np.float64)
    square_sum = np.zeros_like(x64)
    channels = x.shape[1]
    for c in range(channels):
        lo, hi = max(0, c - (size - 1) // 2), min(channels - 1, c + -(-(size - 1) // 2))
        square_sum[:, c] = (x64[:, lo:hi + 1] ** 2).sum(axis=1)
    return x64 / (bias + alpha / size * square_sum) ** beta


CASES = [((2, 7, 5, 6), 5, 1e-4, 0.75, 1.0), ((1, 4, 3, 3), 2, 0.5, 0.5, 2.0), ((1, 9, 17), 4, 1.0, 1.5, 0.5),
         ((2, 3, 1, 1), 1, 0.1, 0.75, 1.0), ((1, 16, 13, 13), 3, 2e-5, 0.75, 1.0)]


def test_lrn_matches_definition() -> None:
    rng = np.random.default_rng(0)
    xs = [(rng.standard_normal(c[0]) * 3).astype(np.float32) for c in CASES]
    specs = [KernelSpec(f"lrn{k}", "lrn", (f32(*shape),), (f32(*shape),),
                        {"size": size, "alpha": alpha, "beta": beta, "bias": bias})
             for k, (shape, size, alpha, beta, bias) in enumerate(CASES)]
    for x, case, (got,) in zip(xs, CASES, run_kernels(specs, [[x] for x in xs])):
        assert_close(got, _lrn(x, *case[1:]), 1e-5, str(case))


def test_lrn_matches_onnxruntime() -> None:
    x = (np.random.default_rng(1).standard_normal((1, 8, 6, 5)) * 4).astype(np.float32)
    attrs = {"size": 5, "alpha": 1e-2, "beta": 0.75, "bias": 2.0}
    want = run_onnx_op("LRN", {"x": x}, opset=13, **attrs)
    (got,), = run_kernels([KernelSpec("lrn", "lrn", (f32(*x.shape),), (f32(*x.shape),), attrs)], [[x]])
    assert_close(got, want, 1e-5, "LRN vs onnxruntime")
