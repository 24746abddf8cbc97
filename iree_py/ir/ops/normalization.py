"""BatchNormalization (inference: per-channel scale, bias, mean, var), LRN and the softmax family
(Softmax, LogSoftmax, Hardmax over one axis): shape rules and numpy references."""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.ir.dim_checks import require_equal
from iree_py.ir.opdef import Kernel, OpDef
from iree_py.ir.ops.elementwise import _same
from iree_py.ir.types import DType, TensorType


def _batchnorm(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = inputs[0].shape
    if len(x) < 2:
        raise ValueError(f"BatchNormalization wants rank >= 2, got {inputs[0]}")
    for t in inputs[1:]:
        if t.rank != 1:
            raise ValueError(f"BatchNormalization parameter {t} should be [{x[1]}]")
        require_equal(t.shape[0], x[1], f"BatchNormalization parameter {t} length == channels")
    return [inputs[0]]


def _softmax(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    if not 0 <= attrs["axis"] < inputs[0].rank:
        raise ValueError(f"axis {attrs['axis']} out of range for {inputs[0]}")
    return [inputs[0]]


# --- numpy reference -------------------------------------------------------------------------------

def batch_norm(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x, scale, bias, mean, var = ins
    shape = (1, -1) + (1,) * (x.ndim - 2)
    f = [a.astype(np.float64).reshape(shape) for a in (scale, bias, mean, var)]
    y = (x - f[2]) / np.sqrt(f[3] + attrs["epsilon"]) * f[0] + f[1]
    return y.astype(x.dtype)


def lrn(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x = ins[0].astype(np.float64)
    size = attrs["size"]
    c = x.shape[1]
    sq = x * x
    total = np.zeros_like(x)
    lo, hi = (size - 1) // 2, size // 2  # ONNX: floor((size-1)/2) before, ceil((size-1)/2) after
    for ch in range(c):
        total[:, ch] = sq[:, max(0, ch - lo):min(c, ch + hi + 1)].sum(axis=1)
    y = x / (attrs["bias"] + attrs["alpha"] / size * total) ** attrs["beta"]
    return y.astype(ins[0].dtype)


def softmax(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x = ins[0].astype(np.float64)
    e = np.exp(x - x.max(axis=attrs["axis"], keepdims=True))
    return (e / e.sum(axis=attrs["axis"], keepdims=True)).astype(ins[0].dtype)


def log_softmax(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x = ins[0].astype(np.float64)
    shifted = x - x.max(axis=attrs["axis"], keepdims=True)
    return (shifted - np.log(np.exp(shifted).sum(axis=attrs["axis"], keepdims=True))).astype(ins[0].dtype)


def hardmax(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """1 at the first maximum along the axis, 0 elsewhere."""
    x, axis = ins[0], attrs["axis"]
    first = np.expand_dims(np.argmax(x, axis=axis), axis)
    return (np.arange(x.shape[axis]).reshape([-1 if i == axis else 1 for i in range(x.ndim)]) == first).astype(x.dtype)


OP_DEFS = [
    OpDef("BatchNormalization", ("epsilon",), 5, 5, _batchnorm),
    OpDef("LRN", ("alpha", "beta", "bias", "size"), 1, 1, _same),
    OpDef("Softmax", ("axis",), 1, 1, _softmax, dtypes=frozenset({DType.f32, DType.f64})),  # f64: static only
    OpDef("LogSoftmax", ("axis",), 1, 1, _softmax, dtypes=frozenset({DType.f32, DType.f64})),
    OpDef("Hardmax", ("axis",), 1, 1, _softmax),
]

KERNELS: dict[str, Kernel] = {
    "BatchNormalization": batch_norm,
    "LRN": lrn,
    "Softmax": softmax,
    "LogSoftmax": log_softmax,
    "Hardmax": hardmax,
}
