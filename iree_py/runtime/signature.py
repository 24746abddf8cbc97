"""Check call arguments against a function's signature, with messages that say what was expected."""
from __future__ import annotations

import numpy as np

from iree_py.errors import IreePyError
from iree_py.module.model import Function, TensorSig


def describe(sig: TensorSig) -> str:
    return f"'{sig.name}' {list(sig.shape)} {sig.dtype.value}"


def check_inputs(fn: Function, args: tuple) -> list[np.ndarray]:
    if len(args) != len(fn.inputs):
        expected = ", ".join(describe(s) for s in fn.inputs)
        raise IreePyError(f"{fn.name}: expected {len(fn.inputs)} inputs ({expected}), got {len(args)}")
    arrays = []
    for i, (arg, sig) in enumerate(zip(args, fn.inputs)):
        a = np.asarray(arg)
        if a.dtype != sig.dtype.numpy and sig.quantization is not None:
            scale, zero_point = sig.quantization
            raise IreePyError(f"{fn.name}: input {i} {describe(sig)} is quantized (scale {scale:.9g}, zero point "
                              f"{zero_point}) and was given dtype {a.dtype}; expected {sig.dtype.numpy}: quantize "
                              f"with np.clip(np.round(x / {scale:.9g}) + {zero_point}, ...).astype(np.{sig.dtype.numpy})")
        if a.dtype != sig.dtype.numpy:
            raise IreePyError(f"{fn.name}: input {i} {describe(sig)} was given dtype {a.dtype}; "
                              f"expected {sig.dtype.numpy} (convert with .astype(np.{sig.dtype.numpy}))")
        if tuple(a.shape) != tuple(sig.shape):
            raise IreePyError(f"{fn.name}: input {i} {describe(sig)} was given shape {list(a.shape)}")
        arrays.append(a if a.flags.c_contiguous else a.copy(order="C"))  # ascontiguousarray makes 0-d arrays 1-d
    return arrays
