"""Symbolic dims: canonical forms, folding, evaluation, bounds, and VM code that computes the
same values as `evaluate` (run by the C runtime)."""
from __future__ import annotations

import itertools
from typing import Callable

import numpy as np
import pytest

import iree_py
from iree_py.ir.symbols import Expr, call, bounds, evaluate, Emitter
from iree_py.ir.types import DType
from iree_py.module.model import Function, MemoryPlan, Module, TensorSig
from iree_py.module.writer import write_module
from iree_py.vm.encoder import BytecodeBuilder

N, S = Expr.of("N"), Expr.of("S")


def test_equal_computations_have_one_canonical_form():
    assert (N + 1) * 2 - 2 == N * 2 == 2 * N
    assert N * S + S * N == 2 * (S * N)
    assert (N + S) * (N - S) == N * N - S * S
    assert call("max", N, S) == call("max", S, N)
    assert str((N + 3) * S - S * 3) == "N*S"


def test_constants_fold_and_exact_divisions_simplify():
    assert call("floordiv", 7, 2) == Expr.of(3)
    assert call("ceildiv", 7, 2) == Expr.of(4)
    assert call("floordiv", -7, 2) == Expr.of(-4)
    assert call("floordiv", 4 * N + 8, 4) == N + 2
    assert call("min", N, N) == N
    assert call("floordiv", N, 1) == N
    assert (N - N).constant == 0 and N.constant is None


def test_evaluate_and_bounds():
    e = call("ceildiv", N - 3 + 2, 2) * S + call("max", S, 4)
    values = {"N": 9, "S": 3}
    assert evaluate(e, values) == 4 * 3 + 4
    lo, hi = bounds(e, {"N": (3, 9), "S": (1, 5)})
    samples = [evaluate(e, {"N": n, "S": s}) for n in range(3, 10) for s in range(1, 6)]
    assert lo <= min(samples) and max(samples) <= hi
    assert bounds(N * S, {"N": (1, 8), "S": (2, 3)}) == (2, 24)
    with pytest.raises(KeyError, match="symbol S has no value"):
        evaluate(N + S, {"N": 1})


EXPRESSIONS = [
    N * S + 3,
    call("floordiv", N - 7, 3) + call("ceildiv", N, 4) * S,
    call("floordiv", S - N, 2) - call("ceildiv", -N - 1, 3),
    call("max", N * 2, S + 5) - call("min", N, S),
    (N + S) * (N - S) * 2,
]


def run_expressions(exprs: list[Expr], n: int, s: int,
                    nonnegative: Callable[[str], bool] = lambda _: False) -> list[int]:
    """main(x: i64[2] = [N, S]) -> y: i64[len(exprs)]: each expression computed by VM code."""
    code = BytecodeBuilder()
    count = [3]  # registers 0, 1: N and S; 2: scratch

    def new_reg() -> int:
        count[0] += 1
        return count[0] - 1
    consts: dict[int, int] = {}

    def const_reg(v: int) -> int:
        if v not in consts:
            consts[v] = new_reg()
            code.emit("const_i64", consts[v], v)
        return consts[v]
    code.emit("buffer_arena", 1, 0, 8 * len(exprs))
    for i in range(2):
        code.emit("const_i64", 2, 8 * i)
        code.emit("buffer_load_i64", i, 0, 2)
    emitter = Emitter(code.emit, {"N": 0, "S": 1}.__getitem__, const_reg, new_reg, nonnegative)
    for i, e in enumerate(exprs):
        result = emitter.emit(e)
        code.emit("const_i64", 2, 8 * i)
        code.emit("buffer_store_i64", 1, 2, result)
    code.emit("ret", [1])
    fn = Function("main", [TensorSig("x", DType.i64, (2,))], [TensorSig("y", DType.i64, (len(exprs),))],
                  count[0] + 1, 2, code.finish())
    module = iree_py.load(write_module(Module("sym", [fn], memory_plan=MemoryPlan(max(64, 8 * len(exprs))))))
    return module.main(np.array([n, s], np.int64)).tolist()


@pytest.mark.parametrize("n,s", list(itertools.product([-5, 0, 1, 7, 12], [-3, 1, 4, 9])))
def test_vm_code_computes_what_evaluate_does(n, s):
    assert run_expressions(EXPRESSIONS, n, s) == [evaluate(e, {"N": n, "S": s}) for e in EXPRESSIONS]


# divisions whose operands are proven nonnegative (N >= 0) or positive take the short forms
DIVISIONS = [
    call("floordiv", N + 2, 3),            # nonnegative / constant: one div
    call("ceildiv", N, 4),                 # (N + 3) / 4
    call("floordiv", N - 7, 3),            # any sign / positive: q - (r < 0)
    call("ceildiv", N - 7, 3),             # q + (r > 0)
    call("floordiv", S, call("max", N, 1)),  # divisor max(N, 1) >= 1
    call("ceildiv", S - N, call("max", N + 1, 2)),
    call("floordiv", S * N - 5, 7) - call("ceildiv", 2 * N + 1, 5),
]


@pytest.mark.parametrize("n,s", list(itertools.product([0, 1, 6, 7, 12], [-9, -3, 0, 1, 4, 9])))
def test_short_divisions_compute_what_evaluate_does(n, s):
    got = run_expressions(DIVISIONS + EXPRESSIONS, n, s, nonnegative={"N"}.__contains__)
    assert got == [evaluate(e, {"N": n, "S": s}) for e in DIVISIONS + EXPRESSIONS]


def count_ops(e: Expr, nonnegative: Callable[[str], bool]) -> list[str]:
    ops: list[str] = []
    emitter = Emitter(lambda op, *args: ops.append(op), {"N": 0, "S": 1}.__getitem__, lambda v: 100 + v,
                      lambda: 200 + len(ops), nonnegative)
    emitter.emit(e)
    return ops


def test_proven_signs_shorten_division():
    nonneg = {"N"}.__contains__
    assert count_ops(call("floordiv", N + 2, 3), nonneg) == ["add_i64", "div_i64"]
    assert count_ops(call("ceildiv", N, 4), nonneg) == ["add_i64", "div_i64"]
    assert count_ops(call("floordiv", N - 7, 3), nonneg) == ["add_i64", "div_i64", "rem_i64", "cmp_lt_i64",
                                                            "sub_i64"]
    assert len(count_ops(call("floordiv", N + 2, 3), lambda _: False)) == 5  # N may be negative: q - (r < 0)
    assert len(count_ops(call("floordiv", S, N), nonneg)) == 8  # N may be 0: not proven positive


def test_shared_subexpressions_are_emitted_once():
    ops = []
    emitter = Emitter(lambda op, *args: ops.append(op), {"N": 0, "S": 1}.__getitem__, lambda v: 100 + v,
                      lambda: 200 + len(ops))
    emitter.emit(N * S + 1)
    first = len(ops)
    emitter.emit(S * N + 1)
    assert len(ops) == first
