"""Packed string tensors (docs/strings.md): N strings as one buffer of N+1 little-endian int64 byte
offsets followed by the UTF-8 bytes; element i is bytes[off[i]:off[i+1]], off[0] == 0 and off[N]
is the byte count. The compiler packs string constants with it, the bindings pack string inputs
(through iree_py/module/strings.py) and the text form prints string constants packed, in hex."""
from __future__ import annotations

import numpy as np


def utf8_bytes(x: object) -> bytes:
    """A string element as its UTF-8 bytes: str is encoded, bytes kept; anything else is a TypeError."""
    if isinstance(x, bytes):
        return x
    if isinstance(x, str):
        return x.encode("utf-8")
    raise TypeError(f"a string tensor element must be str or bytes, got {type(x).__name__}")


def pack_strings(array: np.ndarray) -> np.ndarray:
    """The packed buffer (uint8) of a str/bytes/object array, elements in row-major order."""
    data = [utf8_bytes(x) for x in np.asarray(array, dtype=object).reshape(-1)]
    offsets = np.zeros(len(data) + 1, dtype="<i8")
    np.cumsum([len(d) for d in data], out=offsets[1:])
    return np.frombuffer(offsets.tobytes() + b"".join(data), dtype=np.uint8).copy()


def unpack_strings(buffer: bytes | np.ndarray, count: int) -> list[bytes]:
    """The `count` elements of a packed buffer; ValueError if its offsets are malformed."""
    raw = bytes(buffer) if not isinstance(buffer, bytes) else buffer
    if len(raw) < (count + 1) * 8:
        raise ValueError(f"a packed string tensor of {count} elements needs at least {(count + 1) * 8} bytes, "
                         f"got {len(raw)}")
    offsets = np.frombuffer(raw, dtype="<i8", count=count + 1)
    base = (count + 1) * 8
    if offsets[0] != 0 or np.any(np.diff(offsets) < 0) or base + int(offsets[-1]) > len(raw):
        raise ValueError("malformed packed string tensor: offsets must start at 0, not decrease and stay "
                         "inside the buffer")
    return [raw[base + int(a):base + int(b)] for a, b in zip(offsets[:-1], offsets[1:])]
