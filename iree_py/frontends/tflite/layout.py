"""NHWC (TFLite) <-> NCHW (our Conv/pool ops) at the boundaries of the ops that need NCHW.

A conv or pool transposes its input to NCHW, computes, and transposes its result back to NHWC. The
context remembers, for each NHWC value made that way, the NCHW value it came from (`ctx.nchw`), so
the next conv/pool reads that NCHW value directly: in a chain conv -> relu -> depthwise -> add ...
no transposes remain between the ops (the unused NHWC transposes are dropped by dead-code
elimination). Elementwise ops and concatenation whose non-constant operands all have an NCHW twin
are computed in NCHW too (constants are transposed at compile time).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iree_py.ir.graph import Value

if TYPE_CHECKING:
    from iree_py.frontends.tflite.importer import TfliteContext

TO_NCHW = [0, 3, 1, 2]
TO_NHWC = [0, 2, 3, 1]
NCHW_AXIS_OF_NHWC = [0, 2, 3, 1]    # NHWC axis a is NCHW axis NCHW_AXIS_OF_NHWC[a]


def to_nchw(ctx: "TfliteContext", v: Value) -> Value:
    twin = ctx.nchw.get(id(v))
    if twin is not None:
        return twin
    if v.type.rank != 4:
        raise ctx.error(f"expected a rank-4 NHWC tensor, got '{v.name}' {v.type}")
    if v.is_const:
        return ctx.const(np.ascontiguousarray(v.const.transpose(TO_NCHW)), f"{v.name}_nchw")
    twin = ctx.emit("Transpose", [v], {"perm": TO_NCHW})
    ctx.nchw[id(v)] = twin
    return twin


def from_nchw(ctx: "TfliteContext", y: Value, out: int = 0) -> Value:
    """The NHWC result (named like operator output `out`) of an NCHW value."""
    result = ctx.emit("Transpose", [y], {"perm": TO_NHWC}, out=out)
    ctx.nchw[id(result)] = y
    return result


def const_to_nchw(array: np.ndarray) -> np.ndarray | None:
    """A constant operand broadcasting against NHWC, as one broadcasting against NCHW (rank <= 4)."""
    if array.ndim > 4:
        return None
    full = array.reshape((1,) * (4 - array.ndim) + array.shape)
    return np.ascontiguousarray(full.transpose(TO_NCHW))


def nchw_operands(ctx: "TfliteContext", values: list[Value]) -> list[Value] | None:
    """The operands in NCHW if every computed one has an NCHW twin (else None: compute in NHWC)."""
    computed = [v for v in values if not v.is_const]
    if not computed or any(id(v) not in ctx.nchw for v in computed):
        return None
    result = []
    for v in values:
        if not v.is_const:
            result.append(ctx.nchw[id(v)])
            continue
        array = const_to_nchw(v.const)
        if array is None:
            return None
        result.append(ctx.const(array, f"{v.name}_nchw"))
    return result
