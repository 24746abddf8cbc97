"""Data movement without arithmetic: Concat, Reshape, Transpose and Slice (docs/ir.md).

Shape rules take symbolic dims (an Expr) where the op allows them: Reshape checks the element count
(or, for a Squeeze of symbolic dims, that each dropped dim is 1) at run time; Slice clamps symbolic
bounds with min Exprs. The numpy references move the elements.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.ir.dim_checks import at_least, product, require_equal
from iree_py.ir.opdef import ANY_DTYPE, Kernel, OpDef
from iree_py.ir.symbols import Expr, call, dim
from iree_py.ir.types import Dim, TensorType


def _attr_dim(x: Any, what: str) -> Dim:
    """An attribute entry that is a size: an int (numpy ints too) or an Expr over symbols."""
    if isinstance(x, Expr):
        return dim(x)
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise ValueError(f"{what} entry {x!r} is not an int or a symbolic dim")
    return int(x)


def _concat(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    axis = attrs["axis"]
    first = inputs[0].shape
    if not 0 <= axis < len(first):
        raise ValueError(f"axis {axis} out of range for {inputs[0]}")
    total: Dim = 0
    for k, t in enumerate(inputs):
        s = t.shape
        if t.dtype != inputs[0].dtype or len(s) != len(first):
            raise ValueError(f"Concat operand {t} does not match {inputs[0]} outside axis {axis}")
        for i, (a, b) in enumerate(zip(s, first)):
            if i != axis:
                try:
                    require_equal(a, b, f"Concat operand {k} axis {i} matches operand 0")
                except ValueError:
                    raise ValueError(f"Concat operand {t} does not match {inputs[0]} outside axis {axis}") from None
        total = dim(Expr.of(total) + s[axis])
    return [TensorType(inputs[0].dtype, (*first[:axis], total, *first[axis + 1:]))]


def _dropped_dims(source: tuple[Dim, ...], shape: tuple[Dim, ...]) -> list[tuple[int, Dim]] | None:
    """(axis, dim) of each dim of `source` that `shape` leaves out, when `shape` is `source` with
    some dims dropped and others 1 inserted (a Squeeze, an Unsqueeze); None otherwise."""
    kept = [d for d in shape if d != 1]
    dropped, at = [], 0
    for axis, d in enumerate(source):
        if at < len(kept) and d == kept[at]:
            at += 1
        elif d != 1:
            dropped.append((axis, d))
    return dropped if at == len(kept) else None


def _reshape(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    shape = tuple(_attr_dim(d, "Reshape shape") for d in attrs["shape"])
    if any(isinstance(d, int) and d < 0 for d in shape):
        raise ValueError(f"Reshape shape {list(shape)} must be fully resolved")
    source = inputs[0].shape
    dropped = _dropped_dims(source, shape)
    try:
        if dropped is not None and all(not isinstance(d, int) for _, d in dropped):
            for axis, d in dropped:  # a Squeeze of dims not known to be 1: check each is 1 at run time
                require_equal(d, 1, f"dim {axis} of the input, which the reshape drops")
        else:
            require_equal(product(shape), inputs[0].element_count, "Reshape element count")
    except ValueError:
        raise ValueError(f"cannot reshape {inputs[0]} to {list(shape)}") from None
    return [TensorType(inputs[0].dtype, shape)]


def _transpose(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = inputs[0].shape
    perm = list(attrs["perm"])
    if sorted(perm) != list(range(len(x))):
        raise ValueError(f"perm {perm} is not a permutation of {len(x)} axes")
    return [TensorType(inputs[0].dtype, tuple(x[p] for p in perm))]


def slice_length(dim: int, start: int, end: int, step: int) -> int:
    """Elements a normalized slice start:end:step takes along an axis of size dim (docs/ir.md)."""
    if step > 0:
        if not 0 <= start <= end <= dim:
            raise ValueError(f"step {step} wants 0 <= start {start} <= end {end} <= dim {dim}")
        return -(-(end - start) // step)
    if step < 0:
        if not -1 <= end <= start < dim and not (start == end == -1):
            raise ValueError(f"step {step} wants -1 <= end {end} <= start {start} < dim {dim}")
        return -(-(start - end) // -step)
    raise ValueError("step 0 is not allowed")


def _slice(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = inputs[0].shape
    starts, ends, steps = (list(attrs[k]) for k in ("starts", "ends", "steps"))
    if not len(starts) == len(ends) == len(steps) == len(x):
        raise ValueError(f"Slice starts {starts}, ends {ends}, steps {steps} must each have one entry per axis of "
                         f"{inputs[0]}")
    shape = []
    for axis, (size, start, end, step) in enumerate(zip(x, starts, ends, steps)):
        try:
            shape.append(slice_dim(size, _attr_dim(start, "Slice start"), _attr_dim(end, "Slice end"), int(step)))
        except ValueError as e:
            raise ValueError(f"Slice axis {axis} of {inputs[0]}: {e}") from None
    return [TensorType(inputs[0].dtype, tuple(shape))]


def slice_dim(size: Dim, start: Dim, end: Dim, step: int) -> Dim:
    """slice_length for a dim or bounds that may be symbolic. A positive step clamps start and end to
    the axis (min Exprs); the bounds' order (and a negative step's start inside the axis) becomes a
    run-time check."""
    if all(isinstance(d, int) for d in (size, start, end)):
        return slice_length(size, start, end, step)
    if step > 0:
        if isinstance(start, int) and start < 0 or isinstance(end, int) and end < 0:
            raise ValueError(f"step {step} wants 0 <= start {start} <= end {end}")
        first = start if start == 0 else dim(call("min", start, size))
        last = dim(call("min", end, size))
        if isinstance(start, int) and isinstance(end, int):
            if start > end:
                raise ValueError(f"step {step} wants start {start} <= end {end}")
        else:  # clamping keeps int bounds in order, not symbolic ones
            at_least(last, first, f"slice end {end} >= start {start} on an axis of {size}")
        return dim(call("ceildiv", Expr.of(last) - first, step))
    if step < 0:
        if isinstance(end, int) and end < -1:
            raise ValueError(f"step {step} wants -1 <= end {end}")
        at_least(Expr.of(size) - 1, start, f"slice start {start} < axis size {size}")
        at_least(start, end, f"slice start {start} >= end {end}")
        return dim(call("ceildiv", Expr.of(start) - end, -step))
    raise ValueError("step 0 is not allowed")


def slice_(ins: list[np.ndarray], a: dict) -> np.ndarray:
    """Normalized Slice: indices start, start + step, ... short of end (end -1 with a negative step:
    through index 0)."""
    x = ins[0]
    for axis, (start, end, step) in enumerate(zip(a["starts"], a["ends"], a["steps"])):
        x = np.take(x, np.arange(start, end, step, dtype=np.int64), axis=axis)
    return x


OP_DEFS = [
    OpDef("Concat", ("axis",), 1, None, _concat, dtypes=ANY_DTYPE),
    OpDef("Reshape", ("shape",), 1, 1, _reshape, dtypes=ANY_DTYPE),
    OpDef("Transpose", ("perm",), 1, 1, _transpose, dtypes=ANY_DTYPE),
    OpDef("Slice", ("ends", "starts", "steps"), 1, 1, _slice, dtypes=ANY_DTYPE),
]

KERNELS: dict[str, Kernel] = {
    "Concat": lambda ins, a: np.concatenate(ins, axis=a["axis"]),
    "Reshape": lambda ins, a: ins[0].reshape(a["shape"]),
    "Transpose": lambda ins, a: np.transpose(ins[0], a["perm"]),
    "Slice": slice_,
}
