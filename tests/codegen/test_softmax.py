"""The softmax kernel against numpy on every axis, with vector tails and huge logits."""
from __future__ import annotations

import numpy as np

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm.jit import run_kernels
from tests.codegen.conftest import assert_close, f32


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_every_axis() -> None:
    rng = np.random.default_rng(0)
    specs, inputs, wants = [], [], []
    for shape in [(3, 5, 19), (2, 33, 8), (1, 1000), (4,), (2, 3, 1)]:
        x = (rng.standard_normal(shape) * 10).astype(np.float32)
        for axis in range(len(shape)):
            specs.append(KernelSpec(f"sm_{len(specs)}", "softmax", (f32(*shape),), (f32(*shape),), {"axis": axis}))
            inputs.append([x])
            wants.append(_softmax(x, axis))
    for spec, (got,), want in zip(specs, run_kernels(specs, inputs), wants):
        assert_close(got, want, 1e-5, f"{spec.name} {spec.inputs[0]} axis {spec.attrs['axis']}")
        np.testing.assert_allclose(got.sum(axis=spec.attrs["axis"]), 1.0, rtol=1e-5)


def test_softmax_large_logits_stay_finite() -> None:
    x = np.array([[1e4, 1e4 - 1, -1e4, 3e38], [-3e38, 0.0, 88.0, 89.0]], dtype=np.float32)
    spec = KernelSpec("sm_big", "softmax", (f32(2, 4),), (f32(2, 4),), {"axis": 1})
    (got,), = run_kernels([spec], [[x]])
    assert np.all(np.isfinite(got))
    assert_close(got, _softmax(x, 1), 1e-5, "large logits")
