"""Parse `--input` values: `@x.npy`, `2x3xf32=@x.npy`, `2x3xf32=1,2,3,4,5,6`, `2x3xf32=0` (splat)."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from iree_py.errors import IreePyError
from iree_py.ir.types import DType


def parse_input(text: str) -> np.ndarray:
    if text.startswith("@"):
        return _load_npy(text[1:])
    if "=" not in text:
        raise IreePyError(f"--input={text}: expected @FILE.npy, SHAPExDTYPE=@FILE.npy or SHAPExDTYPE=v1,v2,...")
    spec, values = text.split("=", 1)
    *dims, dtype_name = spec.split("x")
    try:
        dtype = DType(dtype_name)
        shape = tuple(int(d) for d in dims)
    except ValueError:
        raise IreePyError(f"--input={text}: bad type {spec!r}; write it like 1x3x224x224xf32") from None
    if values.startswith("@"):
        array = _load_npy(values[1:])
        if tuple(array.shape) != shape or array.dtype != dtype.numpy:
            raise IreePyError(f"--input={text}: {values[1:]} holds {list(array.shape)} {array.dtype}, not {spec}")
        return array
    try:
        flat = np.array([float(v) for v in values.split(",") if v.strip()], dtype=dtype.numpy)
    except ValueError as e:
        raise IreePyError(f"--input={text}: {e}") from None
    count = int(np.prod(shape, dtype=np.int64))
    if flat.size == 1:
        return np.full(shape, flat[0], dtype=dtype.numpy)
    if flat.size != count:
        raise IreePyError(f"--input={text}: {spec} needs {count} values, got {flat.size}")
    return flat.reshape(shape)


def _load_npy(path: str) -> np.ndarray:
    if not Path(path).exists():
        raise IreePyError(f"input file {path} does not exist")
    try:
        with warnings.catch_warnings():  # numpy's notes on old headers would come before our error line
            warnings.simplefilter("ignore")
            array = np.load(path, allow_pickle=False)
    except Exception as e:  # numpy's header parser raises what it meets: ValueError, EOFError, SyntaxError, ...
        raise IreePyError(f"input file {path} is not a readable .npy file ({type(e).__name__}: {e})") from None
    if not isinstance(array, np.ndarray):  # an .npz archive
        raise IreePyError(f"input file {path} is an .npz archive; give each input as its own .npy file")
    return array
