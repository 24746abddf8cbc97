"""Pack a list of arrays (or None) into the packed sequence layout a module's sequence and optional
inputs take, and unpack its outputs (docs/sequences.md; the layout is in iree_py/ir/types.py)."""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.errors import IreePyError
from iree_py.ir.types import SEQ_HEADER_BYTES, SEQ_MAX_RANK, SEQ_NONE, SEQ_RECORD_BYTES, SEQ_RECORD_WORDS, DType
from iree_py.module.model import TensorSig


def pack(sig: TensorSig, value: Any, where: str) -> np.ndarray:
    """The u8 buffer for `value`: a list/tuple of arrays (sequence), None (an absent optional), or
    an array (optional tensor)."""
    assert sig.element_dtype is not None
    dtype = sig.element_dtype.numpy
    if value is None:
        if sig.kind == "sequence":
            raise IreePyError(f"{where} is a sequence; got None (only an optional may be absent)")
        return np.array([SEQ_NONE], np.int64).view(np.uint8)
    if sig.kind == "optional_tensor":
        if isinstance(value, (list, tuple)):
            raise IreePyError(f"{where} is an optional tensor; got a {type(value).__name__}")
        elements = [value]
    elif not isinstance(value, (list, tuple)):
        raise IreePyError(f"{where} is a {sig.kind.replace('_', ' ')}: give a list of arrays (or None when optional), "
                          f"got {type(value).__name__}")
    else:
        elements = list(value)
    arrays = []
    for j, e in enumerate(elements):
        a = np.asarray(e)
        if a.dtype != dtype:
            raise IreePyError(f"{where} element {j} has dtype {a.dtype}; expected {dtype}")
        if sig.element_rank >= 0 and a.ndim != sig.element_rank:
            raise IreePyError(f"{where} element {j} has rank {a.ndim}; expected {sig.element_rank}")
        if a.ndim > SEQ_MAX_RANK:
            raise IreePyError(f"{where} element {j} has rank {a.ndim}; sequences hold ranks up to {SEQ_MAX_RANK}")
        arrays.append(a if a.flags.c_contiguous else a.copy(order="C"))  # (ascontiguousarray makes 0-d arrays 1-d)
    header = np.zeros(1 + len(arrays) * SEQ_RECORD_WORDS, np.int64)
    header[0] = len(arrays)
    cursor = SEQ_HEADER_BYTES + len(arrays) * SEQ_RECORD_BYTES
    for j, a in enumerate(arrays):
        record = header[1 + j * SEQ_RECORD_WORDS:1 + (j + 1) * SEQ_RECORD_WORDS]
        record[0], record[1], record[2] = cursor, a.nbytes, a.ndim
        record[3:3 + a.ndim] = a.shape
        cursor += a.nbytes
    return np.concatenate([header.view(np.uint8), *(a.reshape(-1).view(np.uint8) for a in arrays)])


def unpack(sig: TensorSig, data: np.ndarray, where: str) -> Any:
    """A list of arrays, None, or (optional tensor) an array, from an output buffer."""
    assert sig.element_dtype is not None
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    words = lambda start, n: np.frombuffer(raw, np.int64, n, start)  # noqa: E731
    if raw.size < SEQ_HEADER_BYTES:
        raise IreePyError(f"{where}: a {raw.size}-byte output is not a packed sequence")
    count = int(words(0, 1)[0])
    if count == SEQ_NONE and sig.kind != "sequence":
        return None
    if count < 0 or SEQ_HEADER_BYTES + count * SEQ_RECORD_BYTES > raw.size:
        raise IreePyError(f"{where}: output header says {count} elements in {raw.size} bytes")
    dtype = sig.element_dtype.numpy
    result = []
    for j in range(count):
        record = words(SEQ_HEADER_BYTES + j * SEQ_RECORD_BYTES, SEQ_RECORD_WORDS)
        offset, nbytes, rank = (int(x) for x in record[:3])
        shape = tuple(int(d) for d in record[3:3 + rank])
        if not 0 <= offset <= offset + nbytes <= raw.size or nbytes != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
            raise IreePyError(f"{where}: output element {j} record is inconsistent")
        result.append(np.frombuffer(raw, dtype, nbytes // dtype.itemsize, offset).reshape(shape).copy())
    if sig.kind == "optional_tensor":
        return result[0]
    return result


def is_packed(sig: TensorSig) -> bool:
    return sig.kind != "tensor"


__all__ = ["pack", "unpack", "is_packed", "DType"]
