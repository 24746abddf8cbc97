"""onnxruntime's sigmoid and tanh: the rational approximations of Eigen that MLAS computes
(mlas/lib/logistic.cpp, tanh.cpp; on x86-64 with FMA, LogisticKernelFma3 / TanhKernelFma3).

The IR ops RationalSigmoid and RationalTanh (docs/ir.md) are these functions; ONNX Sigmoid and Tanh
import as them, so a model matches onnxruntime bit for bit, which matters where a float result is
quantized again (DynamicQuantizeLinear rounds x / scale: one ulp can move a value by a whole step,
and the next layer's dynamic scale with it). The kernels (codegen/llvm/math_core.py) take the
coefficients from here and evaluate every Horner step as one fma; the numpy twins below do the
same in float64 and round once to float32 per step, which equals the fma except where float64
rounding lands exactly on a float32 tie (none of the 655,426 points of tests/codegen/test_math.py).

x is clamped to [-RANGE, RANGE]; p holds the odd numerator's and q the even denominator's
coefficients in x**2, highest power first: sigmoid = max(x * p(x2) / q(x2) + 0.5, 0),
tanh = x * p(x2) / q(x2).
"""
from __future__ import annotations

import numpy as np

SIGMOID_RANGE = 18.0
SIGMOID_P = (4.37031012579801e-11, 1.15627324459942e-07, 6.08574864600143e-05, 8.51377133304701e-03,
             2.48287947061529e-01)
SIGMOID_Q = (6.10247389755681e-13, 5.76102136993427e-09, 6.29106785017040e-06, 1.70198817374094e-03,
             1.16817656904453e-01, 9.93151921023180e-01)
TANH_RANGE = 9.0
TANH_P = (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08,
          1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03)
TANH_Q = (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03)


def _poly_fma(x2: np.ndarray, coeffs: tuple[float, ...]) -> np.ndarray:
    acc = np.full_like(x2, np.float32(coeffs[0]))
    for c in coeffs[1:]:
        acc = (x2.astype(np.float64) * acc + np.float64(np.float32(c))).astype(np.float32)
    return acc


def _clamped(x: np.ndarray, bound: float) -> np.ndarray:
    """x within [-bound, bound]; NaN stays NaN (the comparisons are false for it)."""
    x = np.asarray(x, np.float32)
    lo, hi = np.float32(-bound), np.float32(bound)
    return np.where(x < lo, lo, np.where(x > hi, hi, x)).astype(np.float32)


def rational_sigmoid(x: np.ndarray) -> np.ndarray:
    v = _clamped(x, SIGMOID_RANGE)
    v2 = v * v
    with np.errstate(invalid="ignore"):
        r = (v * _poly_fma(v2, SIGMOID_P)) / _poly_fma(v2, SIGMOID_Q) + np.float32(0.5)
        return np.where(r < 0, np.float32(0), r).astype(np.float32)


def rational_tanh(x: np.ndarray) -> np.ndarray:
    v = _clamped(x, TANH_RANGE)
    v2 = v * v
    with np.errstate(invalid="ignore"):
        return ((v * _poly_fma(v2, TANH_P)) / _poly_fma(v2, TANH_Q)).astype(np.float32)
