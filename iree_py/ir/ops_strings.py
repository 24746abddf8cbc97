"""StringEqual: ONNX Equal on string tensors (docs/strings.md). ops.py's table takes
STRING_OP_DEFS, reference.py takes STRING_KERNELS."""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.ir.opdef import OpDef
from iree_py.ir.strings import utf8_bytes
from iree_py.ir.ops_logic import broadcast_shape
from iree_py.ir.types import DType, TensorType

STRING_DTYPES = frozenset({DType.string})


def _string_equal(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    a, b = inputs
    if a.dtype != DType.string or b.dtype != DType.string:
        raise ValueError(f"StringEqual takes two string operands, got {a} and {b}")
    return [TensorType(DType.bool, broadcast_shape(a, b))]


def string_equal(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """Element-wise byte equality with numpy broadcasting (str and bytes elements compare by UTF-8)."""
    a, b = (np.vectorize(utf8_bytes, otypes=[object])(np.asarray(x, dtype=object)) for x in ins)
    a, b = np.broadcast_arrays(a, b)
    return np.array([x == y for x, y in zip(a.reshape(-1), b.reshape(-1))], dtype=bool).reshape(a.shape)


STRING_OP_DEFS = [OpDef("StringEqual", (), 2, 2, _string_equal, dtypes=STRING_DTYPES)]
STRING_KERNELS = {"StringEqual": string_equal}
