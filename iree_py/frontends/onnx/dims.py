"""Dims as the ONNX converters see them: ints for static dims, `Expr`s for symbolic ones
(docs/dynamic_shapes.md). Converters read shapes with `dims_of` and pass target shapes through
`dim_list`, so one code path serves static and symbolic inputs and static ones stay plain ints."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

import numpy as np

from iree_py.ir.graph import Value
from iree_py.ir.symbols import Expr, dim
from iree_py.ir.types import Dim

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


def as_dim(d: "int | Expr") -> Dim:
    """A canonical dim: an int (numpy ints too) or an Expr with symbols (constant Exprs become ints)."""
    return dim(d) if isinstance(d, Expr) else int(d)


def dims_of(v: Value) -> tuple[Dim, ...]:
    return tuple(as_dim(d) for d in v.type.shape)


def dim_list(shape: Iterable["int | Expr"]) -> list[Dim]:
    return [as_dim(d) for d in shape]


def filled(ctx: "OnnxContext", shape: Iterable["int | Expr"], value: np.generic, hint: str) -> Value:
    """A tensor of `shape` full of `value`: a constant when static, else an Expand of the scalar
    (computed at run time, as a symbolic shape needs)."""
    dims = dim_list(shape)
    if all(isinstance(d, int) for d in dims):
        return ctx.const(np.full(tuple(dims), value), hint)
    return ctx.emit("Expand", [ctx.const(np.array(value), f"{hint}_value")], {"shape": dims}, hint=hint)
