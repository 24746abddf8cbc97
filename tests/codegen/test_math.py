"""exp / sigmoid / tanh and the other unary and binary ops of math.py, through an elementwise
kernel, against float64 numpy, including large magnitudes, zeros, tiny values and infinities."""
from __future__ import annotations

import math

import numpy as np
import pytest

from iree_py.codegen.kernel_spec import UNARY_OPS, Expr, ExprStep, KernelSpec
from iree_py.codegen.llvm.jit import run_kernels
from iree_py.ir import rational_math
from tests.codegen.conftest import f32, run_onnx_op

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


ORIGINAL_OPS = ["Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "Neg", "Exp", "Sqrt", "Abs"]


def test_every_unary_op_matches_numpy() -> None:
    ops = ORIGINAL_OPS
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


# ------------------------------------------------------------------ the ops added for issue 4
WIDE = np.concatenate([np.linspace(-120, 120, 2001), np.linspace(-4, 4, 2001), np.linspace(-1, 1, 801),
                       np.geomspace(1e-30, 1e30, 301), -np.geomspace(1e-30, 1e30, 301),
                       [0.0, -0.0, 1e-38, -1e-38, 2.5, -2.5, 0.5, -0.5, 1.5, 8388607.5, -8388609.0,
                        np.inf, -np.inf, np.nan]]).astype(np.float32)
TRIG_RANGE = np.concatenate([np.linspace(-1000, 1000, 4001), np.linspace(-7, 7, 2001),
                             [0.0, -0.0, 1e-30, -1e-30, 1e-5, -1e-5, np.inf, -np.inf, np.nan]]).astype(np.float32)
UNIT_RANGE = np.concatenate([np.linspace(-1.2, 1.2, 2401), [0.0, -0.0, 1e-30, -1e-30, 1.0, -1.0,
                                                            0.99999994, -0.99999994, np.nan]]).astype(np.float32)
ACOSH_RANGE = np.concatenate([np.linspace(0.5, 10, 2001), 1.0 + np.geomspace(1e-7, 1e30, 301),
                              [1.0, np.inf, np.nan]]).astype(np.float32)
ERF = np.vectorize(math.erf, otypes=[np.float64])
ERFC = np.vectorize(math.erfc, otypes=[np.float64])
SELU_ALPHA, SELU_GAMMA = 1.6732632423543772, 1.0507009873554805


def _softplus(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


# op -> (attrs, points, float64 reference, relative tolerance, floor of the error scale): the error
# |got - want| / max(|want|, floor) must stay within the tolerance (a floor of 1: absolute error).
NEW_UNARY = {
    "Log": ((), WIDE, np.log, 2e-6, 0.0),
    "Reciprocal": ((), WIDE, lambda x: 1 / x, 2e-7, 0.0),
    "Floor": ((), WIDE, np.floor, 0.0, 0.0),
    "Ceil": ((), WIDE, np.ceil, 0.0, 0.0),
    "Round": ((), WIDE, np.round, 0.0, 0.0),
    "Sign": ((), WIDE, np.sign, 0.0, 0.0),
    "Erf": ((), WIDE, ERF, 2e-6, 1e-6),
    "Softplus": ((), WIDE, _softplus, 2e-6, 0.0),
    "Softsign": ((), WIDE, lambda x: x / (1 + np.abs(x)), 2e-7, 0.0),
    "HardSigmoid": ((("alpha", 0.3), ("beta", 0.4)), WIDE, lambda x: np.clip(0.3 * x + 0.4, 0, 1), 2e-7, 1.0),
    "HardSwish": ((), WIDE, lambda x: x * np.clip(x / 6 + 0.5, 0, 1), 2e-7, 1.0),
    "Elu": ((("alpha", 0.7),), WIDE, lambda x: np.where(x < 0, 0.7 * np.expm1(x), x), 2e-6, 0.0),
    "Selu": ((("alpha", SELU_ALPHA), ("gamma", SELU_GAMMA)), WIDE,
             lambda x: SELU_GAMMA * np.where(x < 0, SELU_ALPHA * np.expm1(x), x), 2e-6, 0.0),
    "Celu": ((("alpha", 1.5),), WIDE, lambda x: np.maximum(0, x) + np.minimum(0, 1.5 * np.expm1(x / 1.5)), 2e-6, 0.0),
    "ThresholdedRelu": ((("alpha", 0.5),), WIDE, lambda x: np.where(x > 0.5, x, 0.0), 0.0, 0.0),
    "Mish": ((), WIDE, lambda x: x * np.tanh(_softplus(x)), 4e-6, 1e-30),
    "Gelu": ((), WIDE, lambda x: 0.5 * x * ERFC(-x / math.sqrt(2)), 4e-6, 0.1),  # |x| > 1: absolute 4e-7
    "GeluTanh": ((), WIDE, lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
                 4e-6, 0.1),
    "Sin": ((), TRIG_RANGE, np.sin, 2e-6, 1e-6),
    "Cos": ((), TRIG_RANGE, np.cos, 2e-6, 1e-6),
    "Tan": ((), TRIG_RANGE, np.tan, 4e-6, 1e-6),
    "Atan": ((), WIDE, np.arctan, 2e-6, 0.0),
    "Asin": ((), UNIT_RANGE, np.arcsin, 2e-6, 0.0),
    "Acos": ((), UNIT_RANGE, np.arccos, 2e-6, 1e-7),
    "Sinh": ((), WIDE, np.sinh, 4e-6, 0.0),
    "Cosh": ((), WIDE, np.cosh, 4e-6, 0.0),
    "Asinh": ((), WIDE, np.arcsinh, 2e-6, 0.0),
    "Acosh": ((), ACOSH_RANGE, np.arccosh, 2e-6, 0.0),
    "Atanh": ((), UNIT_RANGE, np.arctanh, 2e-6, 0.0),
}


def _check(op: str, x: np.ndarray, got: np.ndarray, want: np.ndarray, rtol: float, floor: float) -> None:
    with np.errstate(over="ignore", invalid="ignore"):
        want32 = want.astype(np.float32)
    finite = np.isfinite(want32)
    scale = np.maximum(np.abs(want[finite]), max(floor, 1e-37))
    err = np.abs(got[finite].astype(np.float64) - want[finite]) / scale
    worst = int(err.argmax()) if err.size else 0
    assert err.size == 0 or err.max() <= rtol, f"{op}: error {err.max():.3g} at x={x[finite][worst]!r} " \
        f"(got {got[finite][worst]!r}, want {want[finite][worst]!r})"
    assert np.array_equal(got[~finite], want32[~finite], equal_nan=True), \
        f"{op}: at x={x[~finite]} got {got[~finite]}, want {want32[~finite]}"


@pytest.mark.parametrize("op", sorted(NEW_UNARY))
def test_new_unary_op_matches_numpy(op: str) -> None:
    attrs, points, reference, rtol, floor = NEW_UNARY[op]
    spec = KernelSpec(f"u_{op}", "elementwise", (f32(points.size),), (f32(points.size),),
                      {"expr": Expr((ExprStep(op, (("in", 0),), attrs),))})
    (got,), = run_kernels([spec], [[points]])
    with np.errstate(all="ignore"):
        want = reference(points.astype(np.float64))
    _check(op, points, got, want, rtol, floor)


# ------------------------------------------------------------------ onnxruntime's sigmoid and tanh
RATIONAL = {"RationalSigmoid": ("Sigmoid", rational_math.rational_sigmoid),
            "RationalTanh": ("Tanh", rational_math.rational_tanh)}
RATIONAL_POINTS = np.concatenate([
    WIDE, np.linspace(-20, 20, 400001), np.random.default_rng(1).normal(0, 3, 200000),
    np.random.default_rng(2).normal(0, 0.01, 50000), [9.0, -9.0, 18.0, -18.0, 8.999999, 17.999998]]).astype(np.float32)


@pytest.mark.parametrize("op", sorted(RATIONAL))
def test_rational_op_is_onnxruntimes_bit_for_bit(op: str) -> None:
    """RationalSigmoid / RationalTanh give onnxruntime's Sigmoid / Tanh exactly (this host: x86-64 with
    FMA, where onnxruntime runs MLAS's LogisticKernelFma3 / TanhKernelFma3), NaN and infinities too;
    the numpy twin in ir/rational_math.py agrees to within one ulp (double rounding)."""
    onnx_op, twin = RATIONAL[op]
    spec = KernelSpec(f"u_{op}", "elementwise", (f32(RATIONAL_POINTS.size),), (f32(RATIONAL_POINTS.size),),
                      {"expr": Expr((ExprStep(op, (("in", 0),)),))})
    (got,), = run_kernels([spec], [[RATIONAL_POINTS]])
    want = run_onnx_op(onnx_op, {"x": RATIONAL_POINTS})
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    bad = np.flatnonzero(~same)
    assert bad.size == 0, f"{op}: {bad.size} values differ from onnxruntime, first at x={RATIONAL_POINTS[bad[0]]!r}: " \
        f"{got[bad[0]]!r} vs {want[bad[0]]!r}"
    numpy = twin(RATIONAL_POINTS)
    finite = np.isfinite(numpy)
    assert np.array_equal(np.isnan(numpy), np.isnan(got))
    ulps = np.abs(numpy[finite].view(np.int32).astype(np.int64) - got[finite].view(np.int32).astype(np.int64))
    assert ulps.max() <= 1 and np.count_nonzero(ulps) <= 10, f"{op}: numpy twin {ulps.max()} ulps off"


def test_every_unary_op_is_tested() -> None:
    assert set(UNARY_OPS) == set(ORIGINAL_OPS) | set(NEW_UNARY) | set(RATIONAL)


def _pairs() -> tuple[np.ndarray, np.ndarray]:
    base = np.array([0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5, 7.25, -7.25, 1e-20,
                     100.0, -100.0, np.inf, -np.inf, np.nan], np.float32)
    x, y = np.meshgrid(base, base)
    extra = np.random.default_rng(0).standard_normal((2, 4000)).astype(np.float32) * 8
    return np.concatenate([x.ravel(), extra[0]]), np.concatenate([y.ravel(), extra[1]])


NEW_BINARY = {
    "Pow": (np.power, 1e-5),  # exp(y log x): the error of y*log(x) grows with the result's exponent
    "Min": (np.minimum, 0.0),
    "Max": (np.maximum, 0.0),
    "PRelu": (lambda x, s: np.where(x < 0, x * s, x), 0.0),
    "Mod": (np.fmod, 1e-6),
}


@pytest.mark.parametrize("op", sorted(NEW_BINARY))
def test_new_binary_op_matches_numpy(op: str) -> None:
    x, y = _pairs()
    spec = KernelSpec(f"b_{op}", "elementwise", (f32(x.size), f32(y.size)), (f32(x.size),),
                      {"expr": Expr((ExprStep(op, (("in", 0), ("in", 1))),))})
    (got,), = run_kernels([spec], [[x, y]])
    reference, rtol = NEW_BINARY[op]
    with np.errstate(all="ignore"):
        want = reference(x, y).astype(np.float64) if op != "Pow" else np.power(x.astype(np.float64), y.astype(np.float64))
    if op == "Mod":  # x - trunc(x/y)*y is exact only while the quotient fits the mantissa
        with np.errstate(all="ignore"):
            keep = ~(np.abs(x / y) > 2 ** 22) | ~np.isfinite(x) | ~np.isfinite(y)
        x, y, got, want = x[keep], y[keep], got[keep], want[keep]
    if op in ("Min", "Max"):  # NaN handling of Min/Max is not specified: compare where both are numbers
        keep = ~np.isnan(x) & ~np.isnan(y)
        x, y, got, want = x[keep], y[keep], got[keep], want[keep]
    floor = 1.0 if op == "Mod" else 0.0  # x - q*y rounds q*y: absolute error, not relative to a tiny result
    _check(op, np.stack([x, y], 1), got, want, rtol, floor)
