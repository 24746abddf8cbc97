"""String inputs of a call (docs/strings.md): a numpy array of str, bytes or objects (str/bytes
elements) packed into the one buffer the C runtime takes (iree_py/module/strings.py). The packed
input keeps the array's logical shape, so the devices pass it like any other array."""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.module.strings import pack_strings


class PackedStrings:
    """A string tensor ready for a call: `shape` is the tensor's, the bytes are the packed buffer."""

    def __init__(self, array: np.ndarray) -> None:
        self.shape: tuple[int, ...] = tuple(array.shape)
        self.buffer: np.ndarray = pack_strings(array)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return self.buffer.nbytes

    @property
    def ctypes(self) -> Any:
        return self.buffer.ctypes

    def tobytes(self) -> bytes:
        return self.buffer.tobytes()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.buffer if dtype is None else self.buffer.astype(dtype)


def is_string_array(a: np.ndarray) -> bool:
    return a.dtype.kind in "OUS"
