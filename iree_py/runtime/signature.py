"""Check call arguments against a function's signature, with messages that say what was expected."""
from __future__ import annotations

import numpy as np

from iree_py.errors import IreePyError
from iree_py.ir.types import DType
from iree_py.module import sequence_layout
from iree_py.module.model import DYNAMIC_DIM, Function, TensorSig
from iree_py.runtime.strings import PackedStrings, is_string_array


def shape_text(sig: TensorSig) -> str:
    """[2, 3] or, with dynamic dims, [batch, 3] (a dim without a name shows as ?)."""
    dims = [(sig.dim_name(axis) or "?") if d == DYNAMIC_DIM else str(d) for axis, d in enumerate(sig.shape)]
    return f"[{', '.join(dims)}]"


def type_text(sig: TensorSig) -> str:
    """[batch, 3] f32, or a sequence's own type (not the u8 buffer that carries it)."""
    return sig.packed_type_text or f"{shape_text(sig)} {sig.dtype.value}"


def describe(sig: TensorSig) -> str:
    return f"'{sig.name}' {type_text(sig)}"


def shape_matches(sig: TensorSig, shape: tuple[int, ...]) -> bool:
    """Rank and every static dim; a dynamic dim takes any size (same-named dims are the runtime's check)."""
    return len(shape) == len(sig.shape) and all(d == DYNAMIC_DIM or d == s for d, s in zip(sig.shape, shape))


def shape_mismatch(sig: TensorSig, shape: tuple[int, ...]) -> str:
    """What is wrong with `shape` for `sig`: the rank, or the first static dim that differs."""
    if len(shape) != len(sig.shape):
        return f"rank {len(shape)}, expected rank {len(sig.shape)}"
    for axis, (d, s) in enumerate(zip(sig.shape, shape)):
        if d != DYNAMIC_DIM and d != s:
            return f"dim {axis} is {s}, expected {d}"
    return ""


def check_inputs(fn: Function, args: tuple) -> list[np.ndarray | PackedStrings]:
    """The buffers a call passes the runtime: arrays checked against the signature, string tensors
    and sequences packed."""
    if len(args) != len(fn.inputs):
        expected = ", ".join(describe(s) for s in fn.inputs)
        raise IreePyError(f"{fn.name}: expected {len(fn.inputs)} inputs ({expected}), got {len(args)}")
    arrays = []
    for i, (arg, sig) in enumerate(zip(args, fn.inputs)):
        if sequence_layout.is_packed(sig):  # a list of arrays, or None: packed (docs/sequences.md)
            arrays.append(sequence_layout.pack(sig, arg, f"{fn.name}: input '{sig.name}'"))
            continue
        a = np.asarray(arg)
        if sig.dtype == DType.string:
            arrays.append(_string_input(fn, i, sig, a))
            continue
        if a.dtype != sig.dtype.numpy and sig.quantization is not None:
            scale, zero_point = sig.quantization
            raise IreePyError(f"{fn.name}: input {i} {describe(sig)} is quantized (scale {scale:.9g}, zero point "
                              f"{zero_point}) and was given dtype {a.dtype}; expected {sig.dtype.numpy}: quantize "
                              f"with np.clip(np.round(x / {scale:.9g}) + {zero_point}, ...).astype(np.{sig.dtype.numpy})")
        if a.dtype != sig.dtype.numpy:
            raise IreePyError(f"{fn.name}: input {i} {describe(sig)} was given dtype {a.dtype}; "
                              f"expected {sig.dtype.numpy} (convert with .astype(np.{sig.dtype.numpy}))")
        _check_shape(fn, i, sig, a)
        arrays.append(a if a.flags.c_contiguous else a.copy(order="C"))  # ascontiguousarray makes 0-d arrays 1-d
    return arrays


def plain_inputs(fn: Function) -> list[tuple[np.dtype, tuple[int, ...], tuple[int, ...] | None]] | None:
    """Per input its numpy dtype, its shape, and (for a dynamic one) the axes whose size is fixed,
    when every input is a plain tensor (not a string tensor, not a sequence); None otherwise. A
    C-contiguous array of that dtype whose shape matches is what check_inputs would pass on
    unchanged (same-named dynamic dims are the runtime's check)."""
    if any(sig.dtype == DType.string or sequence_layout.is_packed(sig) for sig in fn.inputs):
        return None
    return [(sig.dtype.numpy, tuple(sig.shape),
             tuple(a for a, d in enumerate(sig.shape) if d != DYNAMIC_DIM) if sig.is_dynamic else None)
            for sig in fn.inputs]


def _check_shape(fn: Function, i: int, sig: TensorSig, a: np.ndarray) -> None:
    if not shape_matches(sig, tuple(a.shape)):
        raise IreePyError(f"{fn.name}: input {i} {describe(sig)} was given shape {list(a.shape)}: "
                          f"{shape_mismatch(sig, tuple(a.shape))}")


def _string_input(fn: Function, i: int, sig: TensorSig, a: np.ndarray) -> PackedStrings:
    """A string input: str/bytes/object arrays, packed (docs/strings.md)."""
    if not is_string_array(a):
        raise IreePyError(f"{fn.name}: input {i} {describe(sig)} was given dtype {a.dtype}; expected an array of "
                          f"str, bytes or objects holding them")
    _check_shape(fn, i, sig, a)
    try:
        return PackedStrings(a)
    except TypeError as e:
        raise IreePyError(f"{fn.name}: input {i} {describe(sig)}: {e}") from None
