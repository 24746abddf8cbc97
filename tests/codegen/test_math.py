"""exp / sigmoid / tanh and the other unary ops of math.py, through an elementwise kernel, against
float64 numpy, including large magnitudes, zeros and infinities."""
from __future__ import annotations

import numpy as np

from iree_py.codegen.kernel_spec import UNARY_OPS, Expr, ExprStep, KernelSpec
from iree_py.codegen.llvm.jit import run_kernels
from tests.codegen.conftest import f32

POINTS = np.concatenate([np.linspace(-120, 120, 4001), np.linspace(-4, 4, 4001),
                         [0.0, -0.0, 1e-30, -1e-30, 1e-5, -1e-5, np.inf, -np.inf]]).astype(np.float32)


def _unary_specs(ops: list[str], attrs: dict[str, tuple]) -> list[KernelSpec]:
    return [KernelSpec(f"u_{op}", "elementwise", (f32(POINTS.size),), (f32(POINTS.size),),
                       {"expr": Expr((ExprStep(op, (("in", 0),), attrs.get(op, ())),))}) for op in ops]


def _reference(op: str, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return {
            "Relu": lambda: np.maximum(x, 0), "LeakyRelu": lambda: np.where(x < 0, 0.1 * x, x),
            "Sigmoid": lambda: 1 / (1 + np.exp(-x)), "Tanh": lambda: np.tanh(x),
            "Clip": lambda: np.clip(x, -1.5, 2.0), "Neg": lambda: -x, "Exp": lambda: np.exp(x),
            "Sqrt": lambda: np.sqrt(x), "Abs": lambda: np.abs(x),
        }[op]()


def test_every_unary_op_matches_numpy() -> None:
    ops = sorted(UNARY_OPS)
    attrs = {"LeakyRelu": (("alpha", 0.1),), "Clip": (("min", -1.5), ("max", 2.0))}
    outs = run_kernels(_unary_specs(ops, attrs), [[POINTS]] * len(ops))
    x = POINTS.astype(np.float64)
    for op, (got,) in zip(ops, outs):
        want = _reference(op, x)
        with np.errstate(over="ignore"):
            want32 = want.astype(np.float32)
        normal = np.isfinite(want32) & (np.abs(want32) > 1e-30)
        rel = np.abs(got[normal] - want[normal]) / np.abs(want[normal])
        assert rel.max() <= 2e-6, f"{op}: relative error {rel.max()} at x={POINTS[normal][rel.argmax()]}"
        special = ~normal & ~np.isnan(want32)
        np.testing.assert_allclose(got[special], want32[special], atol=1e-30, err_msg=op)
        assert np.array_equal(np.isnan(got), np.isnan(want32)), f"{op}: NaN where numpy has none (or vice versa)"


def test_saturating_functions_hit_exact_limits() -> None:
    outs = run_kernels(_unary_specs(["Sigmoid", "Tanh", "Exp"], {}), [[POINTS]] * 3)
    sigmoid, tanh, exp = (o[0] for o in outs)
    big = POINTS > 30
    assert np.all(sigmoid[big] == 1.0) and np.all(sigmoid[POINTS < -104] == 0.0)
    assert np.all(tanh[big] == 1.0) and np.all(tanh[POINTS < -30] == -1.0)
    assert np.all(exp[POINTS > 89] == np.inf) and np.all(exp[POINTS < -104] == 0.0)
