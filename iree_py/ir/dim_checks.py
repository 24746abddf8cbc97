"""Dim comparisons for shape rules on symbolic dims, and the run-time checks they leave behind.

A shape rule that must compare two dims calls `require_equal` or `broadcast_dim`. When the answer
is known at compile time they return (or raise ValueError, as rules always did); when it depends on
symbols they record a `DimCheck` in the active collector and return the dim the rule should use:

    with collect_checks() as checks:
        types = infer_types(op, input_types, attrs)
    # checks: [DimCheck(((n, m), (n, 1), (m, 1)), "Add operands axis 0"), ...]

The lowering re-runs each node's rule this way and emits one VM `check` per DimCheck; the numpy
reference evaluates them on concrete sizes. With no active collector nothing is recorded.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Iterator, Sequence

from iree_py.ir.symbols import Expr, bounds, call, dim, dim_text, evaluate

Dim = int | Expr
VALUE_MARK = "\x1f"  # in a check message: "a run-time value goes here" (the VM's check_dims)


@dataclass(frozen=True)
class DimCheck:
    """Passes when any alternative (lhs == rhs) holds."""

    alternatives: tuple[tuple[Dim, Dim], ...]
    what: str

    def holds(self, values: dict[str, int]) -> bool:
        return any(evaluate(a, values) == evaluate(b, values) for a, b in self.alternatives)

    def __str__(self) -> str:
        return f"{self.what}: {self.condition}"

    @property
    def condition(self) -> str:
        return " or ".join(f"{a} == {b}" for a, b in self.alternatives)

    @property
    def shown_dims(self) -> tuple[Expr, ...]:
        """The symbolic dims the check compares, each once: the values a failure reports."""
        return tuple(dict.fromkeys(d for pair in self.alternatives for d in pair if isinstance(d, Expr)))

    def message(self, where: str, values: dict[str, int] | None = None) -> str:
        """What a failure says: `where` (the node and op), what was checked, the compared dims with
        their run-time values, and the condition. Without `values`, each value is VALUE_MARK, where
        the VM's check_dims writes it at run time (flatbuffers/isa.toml)."""
        shown = ", ".join(f"{d} = {VALUE_MARK if values is None else evaluate(d, values)}"
                          for d in self.shown_dims)
        return f"{where}: {self.what}: {shown} (needs {self.condition})"


_COLLECTOR: contextvars.ContextVar[list[DimCheck] | None] = contextvars.ContextVar("dim_checks", default=None)


@contextlib.contextmanager
def collect_checks() -> Iterator[list[DimCheck]]:
    """Collect the DimChecks recorded by shape rules run inside the `with` block."""
    checks: list[DimCheck] = []
    token = _COLLECTOR.set(checks)
    try:
        yield checks
    finally:
        _COLLECTOR.reset(token)


def record(check: DimCheck) -> None:
    """Add `check` to the active collector (if any), once."""
    checks = _COLLECTOR.get()
    if checks is not None and check not in checks:
        checks.append(check)


def _known_unequal(a: Dim, b: Dim) -> bool:
    """True when a == b can never hold: both constants that differ, or a constant difference."""
    difference = dim(Expr.of(a) - b)
    return isinstance(difference, int) and difference != 0


def require_equal(a: Dim, b: Dim, what: str) -> Dim:
    """`a` and `b` must be equal: returns the dim (an int when either side is one), raises
    ValueError when they differ at compile time, records a check when symbols decide."""
    a, b = dim(a), dim(b)
    if a == b:
        return a
    if _known_unequal(a, b):
        raise ValueError(f"{what}: {dim_text(a)} != {dim_text(b)}")
    record(DimCheck(((a, b),), what))
    return b if isinstance(b, int) else a


def broadcast_dim(a: Dim, b: Dim, what: str) -> Dim:
    """numpy broadcasting of one axis: equal dims, or one of them 1. Symbolic cases record a
    check; two different symbolic dims give max(a, b) (note: the result of 0 with 1 at run time
    is then 1, where numpy gives 0)."""
    a, b = dim(a), dim(b)
    if a == b:
        return a
    if a == 1:
        return b
    if b == 1:
        return a
    if isinstance(a, int) and isinstance(b, int):
        raise ValueError(f"{what}: {a} and {b} do not broadcast")
    if isinstance(a, int) or isinstance(b, int):  # k (not 1) with a symbolic s: s is k or 1
        k, s = (a, b) if isinstance(a, int) else (b, a)
        if _known_unequal(s, k) and _known_unequal(s, 1):
            raise ValueError(f"{what}: {dim_text(a)} and {dim_text(b)} do not broadcast")
        record(DimCheck(((s, k), (s, 1)), what))
        return k
    record(DimCheck(((a, b), (a, 1), (b, 1)), what))
    return dim(call("max", a, b))


def broadcast_shapes(shapes: Sequence[Sequence[Dim]], what: str) -> tuple[Dim, ...]:
    """numpy.broadcast_shapes on symbolic dims (right-aligned); `what` names the operands."""
    rank = max((len(s) for s in shapes), default=0)
    result: list[Dim] = [1] * rank
    for shape in shapes:
        padded = (1,) * (rank - len(shape)) + tuple(shape)
        for axis, d in enumerate(padded):
            result[axis] = broadcast_dim(result[axis], d, f"{what} axis {axis}")
    return tuple(result)


def require_one_or(d: Dim, want: Dim, what: str) -> None:
    """`d` broadcasts to `want` without changing it: d == want or d == 1 (Expand's input dims)."""
    d, want = dim(d), dim(want)
    if d == want or d == 1:
        return
    if _known_unequal(d, want) and _known_unequal(d, 1):
        raise ValueError(f"{what}: {dim_text(d)} is neither 1 nor {dim_text(want)}")
    record(DimCheck(((d, want), (d, 1)), what))


def same_dims(a: Sequence[Dim], b: Sequence[Dim], what: str) -> tuple[Dim, ...]:
    """Two shapes that must be equal (rank at compile time, each axis by require_equal)."""
    if len(a) != len(b):
        raise ValueError(f"{what}: ranks differ ({len(a)} and {len(b)})")
    return tuple(require_equal(x, y, f"{what} axis {i}") for i, (x, y) in enumerate(zip(a, b)))


def product(dims: Sequence[Dim]) -> Dim:
    """The product of dims: an int when all are ints, else an Expr."""
    total: Expr | int = 1
    for d in dims:
        total = d * total if isinstance(d, Expr) else total * d
    return dim(total)


_SYMBOL_RANGE = (0, 1 << 62)  # every symbol is a size: never negative


def at_least(a: Dim, lower: Dim, what: str) -> None:
    """a >= lower: nothing when it holds for all sizes (symbols >= 0), ValueError when it never
    does, else a run-time check max(a, lower) == a."""
    a, lower = dim(a), dim(lower)
    difference = Expr.of(a) - lower
    try:
        lo, hi = bounds(difference, {s: _SYMBOL_RANGE for s in difference.symbols})
    except ValueError:  # a divisor that may be <= 0: leave it to run time
        lo, hi = -1, 0
    if lo >= 0:
        return
    if hi < 0:
        raise ValueError(f"{what}: {dim_text(a)} < {dim_text(lower)}")
    record(DimCheck(((dim(call("max", a, lower)), a),), what))
