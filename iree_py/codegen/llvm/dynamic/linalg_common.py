"""Helpers the dynamic matmul and reduce kernels share: an element count as a float, a dim's value
when it is known. Dims that must agree (`Agreements`), products of dims and column loops live in
codegen/llvm/dims.py and common.py (one builder per kernel family takes int or Expr dims); they are
re-exported here for the dynamic/ builders not yet merged into theirs.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.llvm.common import F32, I32, for_columns, vector_end  # noqa: F401 (re-exported)
from iree_py.codegen.llvm.dims import Agreements, product  # noqa: F401 (re-exported)
from iree_py.targets import Target
from iree_py.ir.symbols import dim
from iree_py.ir.types import Dim


def count_to_f32(b: ir.IRBuilder, count: ir.Value, target: Target) -> ir.Value:
    """An i64 element count (>= 0) as a float. 32-bit targets convert from i32: an i64 conversion
    would need a compiler builtin there."""
    if target.pointer_bits >= 64:
        return b.uitofp(count, F32)
    return b.uitofp(b.trunc(count, I32), F32)


def static_value(d: Dim) -> int | None:
    d = dim(d)
    return d if isinstance(d, int) else None
