"""The OpDef record every op catalog entry is (iree_py/ir/ops/), the dtype sets its `dtypes` field
takes, the type of a numpy reference kernel, and the shape helpers several op families share
(window arithmetic, the pooling rule). Imports nothing from the catalog, so every family file in
iree_py/ir/ops/ can import from here."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from iree_py.ir.dim_checks import at_least
from iree_py.ir.narrow_types import NARROW_DTYPES
from iree_py.ir.symbols import call, dim
from iree_py.ir.types import Dim, DType, TensorType

ShapeRule = Callable[[list[TensorType], dict[str, Any]], list[TensorType]]
Kernel = Callable[[list[np.ndarray], dict[str, Any]], np.ndarray]  # a numpy reference: input arrays, attrs

# data movement: kernels copy elements of any fixed size (not strings: their elements vary in size)
ANY_DTYPE = frozenset(DType) - {DType.string}
FLOAT_DTYPES = frozenset(d for d in DType if d.numpy.kind == "f") - NARROW_DTYPES  # bf16, f8: storage only
# Ops whose kernels approximate in single precision (exp, log, trig, ...) take no f64: an f64
# result computed in f32 would overflow early and lose digits.
SINGLE_HALF_DTYPES = frozenset({DType.f32, DType.f16})
INT_DTYPES = frozenset(d for d in DType if d.numpy.kind in "iu")
UNSIGNED_DTYPES = frozenset(d for d in DType if d.numpy.kind == "u")
NUMERIC_DTYPES = FLOAT_DTYPES | INT_DTYPES
BOOL_DTYPES = frozenset({DType.bool})


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


class SymbolicShapeError(ValueError):
    """A shape rule without symbolic support got a symbolic input (infer_types names the op)."""


def static_shape(t: TensorType) -> tuple[int, ...]:
    if not t.is_static:
        raise SymbolicShapeError(f"shape {t} is not static (this op's shape rule needs static dims)")
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


def pool_output_dim(size: Dim, kernel: int, stride: int, pad_begin: int, pad_end: int,
                    dilation: int, ceil_mode: int) -> Dim:
    """pool_output_size for a dim that may be symbolic: the same int for an int size, else an Expr,
    with a run-time check that the window fits the padded input. ceil_mode's "drop a last window
    that starts inside the end padding" depends only on the static pads, stride and span."""
    if isinstance(size, int):
        return pool_output_size(size, kernel, stride, pad_begin, pad_end, dilation, ceil_mode)
    span = dilation * (kernel - 1) + 1
    padded = size + pad_begin + pad_end
    at_least(padded, span, f"window {span} fits the padded input {padded}")
    room = padded - span
    if not ceil_mode:
        return dim(call("floordiv", room, stride) + 1)
    # out = ceildiv(room, stride) + 1 windows, less one when the last starts at or after
    # size + pad_begin, i.e. when out > ceildiv(size + pad_begin, stride) (the most windows that
    # start inside): that is decided by pad_end - span + stride alone.
    if pad_end >= span:
        return dim(call("ceildiv", room, stride))
    if pad_end - span + stride >= 0:
        return dim(call("ceildiv", size + pad_begin, stride))
    return dim(call("ceildiv", room, stride) + 1)


def pool_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = inputs[0].shape
    if len(x) != 4:
        raise ValueError(f"pooling wants rank 4 input, got {inputs[0]}")
    (kh, kw), (sh, sw), (pt, pl, pb, pr) = attrs["kernel"], attrs["strides"], attrs["pads"]
    dh, dw = attrs.get("dilations", [1, 1])
    oh = pool_output_dim(x[2], kh, sh, pt, pb, dh, attrs["ceil_mode"])
    ow = pool_output_dim(x[3], kw, sw, pl, pr, dw, attrs["ceil_mode"])
    return [TensorType(inputs[0].dtype, (x[0], x[1], oh, ow))]
