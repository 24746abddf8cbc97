"""The OpDef record every op table entry is, and the shape helpers that area files share
(window arithmetic, the pooling rule). Imports nothing from the op tables, so ops.py and the
per-area files (ops_logic.py, ops_quant.py, ...) can all import from here."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from iree_py.ir.types import DType, TensorType

ShapeRule = Callable[[list[TensorType], dict[str, Any]], list[TensorType]]

ANY_DTYPE = frozenset(DType)  # data movement: kernels copy elements of any size

ShapeRule = Callable[[list[TensorType], dict[str, Any]], list[TensorType]]



@dataclass(frozen=True)
class OpDef:
    name: str
    attrs: tuple[str, ...]         # exactly the attributes a node of this op carries
    min_inputs: int
    max_inputs: int | None         # None: any number
    rule: ShapeRule
    elementwise: bool = False
    # The element types the op's kernels compute in. The final verifier checks the first input (the
    # op's data operand) against it; shape rules check any other operand (indices, conditions).
    dtypes: frozenset[DType] = frozenset({DType.f32})


def static_shape(t: TensorType) -> tuple[int, ...]:
    if not t.is_static:
        raise ValueError(f"shape {t} is not static")
    return tuple(int(d) for d in t.shape)


def pool_output_size(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int,
                     dilation: int, ceil_mode: int) -> int:
    """Output length of a pooling/conv window along one axis (ONNX rule; ceil_mode drops a
    last window that would start inside the end padding)."""
    span = dilation * (kernel - 1) + 1
    room = size + pad_begin + pad_end - span
    if room < 0:
        raise ValueError(f"window {span} larger than padded input {size + pad_begin + pad_end}")
    if not ceil_mode:
        return room // stride + 1
    out = math.ceil(room / stride) + 1
    if (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def pool_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = static_shape(inputs[0])
    if len(x) != 4:
        raise ValueError(f"pooling wants rank 4 input, got {inputs[0]}")
    (kh, kw), (sh, sw), (pt, pl, pb, pr) = attrs["kernel"], attrs["strides"], attrs["pads"]
    dh, dw = attrs.get("dilations", [1, 1])
    oh = pool_output_size(x[2], kh, sh, pt, pb, dh, attrs["ceil_mode"])
    ow = pool_output_size(x[3], kw, sw, pl, pr, dw, attrs["ceil_mode"])
    return [TensorType(inputs[0].dtype, (x[0], x[1], oh, ow))]
