"""The numpy reference on graphs with symbolic dims: one graph, any input sizes.

Symbols get their values from the input arrays' shapes (an input dim `seq` binds seq; a dim like
`seq + 1` whose only symbol appears nowhere else is solved for it) and from graph.symbol_sources
(element `index` of a value, read as soon as the value is known). Before each node runs, its shape
rule's run-time checks (iree_py/ir/dim_checks.py) are evaluated, and the Expr entries of its
attributes become ints; after it runs, its result shapes must equal its types' evaluated dims.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import numpy as np

from iree_py.ir.dim_checks import collect_checks
from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.ops import infer_types
from iree_py.ir.symbols import Expr, evaluate
from iree_py.ir.types import TensorType

RunNode = Callable[[Node, Callable[[Value], np.ndarray]], Any]


def has_symbols(graph: Graph) -> bool:
    if graph.symbol_sources:
        return True
    return any(not v.type.is_static for v in graph.values()) or \
        any(not v.type.is_static for node in graph.nodes for step in node.fused for v in step.outputs)


def evaluate_attrs(attrs: dict[str, Any], values: dict[str, int]) -> dict[str, Any]:
    """The attributes with every Expr (also inside lists and tuples) replaced by its value."""
    def value(x: Any) -> Any:
        if isinstance(x, Expr):
            return evaluate(x, values)
        if isinstance(x, (list, tuple)):
            return type(x)(value(e) for e in x)
        return x
    return {k: value(v) for k, v in attrs.items()}


def concrete_shape(t: TensorType, values: dict[str, int]) -> tuple[int, ...]:
    return tuple(d if isinstance(d, int) else evaluate(d, values) for d in t.shape)


def _solve_linear(d: Expr, size: int) -> tuple[str, int] | None:
    """(s, value) when d is c*s + k for one symbol s and size = c*s + k has an integer solution."""
    constant, symbol, coefficient = 0, None, 0
    for monomial, c in d.terms:
        if monomial == ():
            constant = c
        elif len(monomial) == 1 and isinstance(monomial[0], str) and symbol is None:
            symbol, coefficient = monomial[0], c
        else:
            return None
    if symbol is None or (size - constant) % coefficient:
        return None
    return symbol, (size - constant) // coefficient


def bind_input_symbols(graph: Graph, arrays: list[np.ndarray]) -> dict[str, int]:
    """Symbol values from the inputs' shapes; ValueError naming the input when they disagree."""
    values: dict[str, int] = {}
    derived: list[tuple[Value, int, Expr, int]] = []
    for v, array in zip(graph.inputs, arrays, strict=True):
        if array.ndim != v.type.rank:
            raise ValueError(f"input %{v.name}: rank {array.ndim} given, type is {v.type}")
        for axis, (d, size) in enumerate(zip(v.type.shape, array.shape)):
            if isinstance(d, int):
                if d != size:
                    raise ValueError(f"input %{v.name} dim {axis} is {size}, type is {v.type}")
            elif d.symbol is not None:
                name = d.symbol
                if values.setdefault(name, size) != size:
                    raise ValueError(f"input %{v.name} dim {axis} ({name}) is {size} but another input "
                                     f"gives {name} = {values[name]}")
            else:
                derived.append((v, axis, d, size))
    for v, axis, d, size in derived:  # dims like `seq + 1`: solve when their symbol is still free
        if d.symbols <= set(values):
            continue
        solved = _solve_linear(d, size)
        if solved is None:
            raise ValueError(f"input %{v.name} dim {axis} ({d}) = {size}: cannot tell the value of {sorted(d.symbols)}")
        values[solved[0]] = solved[1]
    for v, axis, d, size in derived:
        if evaluate(d, values) != size:
            raise ValueError(f"input %{v.name} dim {axis} ({d}) is {size}, but the symbols give {evaluate(d, values)}")
    return values


def _read_sources(graph: Graph, known: Callable[[Value], np.ndarray | None], values: dict[str, int]) -> None:
    for symbol, (v, index) in graph.symbol_sources.items():
        if symbol in values:
            continue
        array = known(v)
        if array is not None:
            values[symbol] = int(np.asarray(array).reshape(-1)[index])


def _check(node: Node, values: dict[str, int]) -> None:
    """Evaluate the run-time dim checks of `node` and its fused steps."""
    for step in [node, *node.fused]:
        with collect_checks() as checks:
            infer_types(step.op, [v.type for v in step.inputs], step.attrs)
        for check in checks:
            if not check.holds(values):
                raise ValueError(f"model check failed: {check.message(f'node {step.name!r} (op {step.op})', values)}")


@contextlib.contextmanager
def _concrete_attrs(node: Node, values: dict[str, int]) -> Iterator[None]:
    """Within the block, `node` and its fused steps carry evaluated attributes (the nodes
    themselves, not copies: a fused chain is linked through `producer is root`)."""
    steps = [node, *node.fused]
    saved = [step.attrs for step in steps]
    try:
        for step in steps:
            step.attrs = evaluate_attrs(step.attrs, values)
        yield
    finally:
        for step, attrs in zip(steps, saved):
            step.attrs = attrs


def evaluate_symbolic(graph: Graph, arrays: list[np.ndarray], run_node: RunNode) -> list[np.ndarray]:
    arrays = [np.asarray(a, dtype=v.type.dtype.numpy) for v, a in zip(graph.inputs, arrays, strict=True)]
    values = bind_input_symbols(graph, arrays)
    env: dict[int, np.ndarray] = {id(v): a for v, a in zip(graph.inputs, arrays)}

    def known(v: Value) -> np.ndarray | None:
        return v.const if v.is_const else env.get(id(v))

    def lookup(v: Value) -> np.ndarray:
        return v.const if v.is_const else env[id(v)]

    _read_sources(graph, known, values)
    for node in graph.nodes:
        _check(node, values)
        with _concrete_attrs(node, values):
            result = run_node(node, lookup)
        results = result if isinstance(result, list) else [result]
        for out, array in zip(node.outputs, results, strict=True):
            array = np.asarray(array)
            want = concrete_shape(out.type, values)
            if array.shape != want:
                raise ValueError(f"node '{node.name}' ({node.op}): result %{out.name} has shape {array.shape}, "
                                 f"its type {out.type} gives {want}")
            env[id(out)] = array
        _read_sources(graph, known, values)
    return [lookup(v) for v in graph.outputs]
