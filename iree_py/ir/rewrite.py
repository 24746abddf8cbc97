"""Helpers for passes that rewrite a graph: uses including fused chains, replacing a value."""
from __future__ import annotations

from iree_py.ir.graph import Graph, Node, Value


def all_steps(graph: Graph) -> list[Node]:
    """Every node and every fused step, in order."""
    return [step for node in graph.nodes for step in [node, *node.fused]]


def use_counts(graph: Graph) -> dict[int, int]:
    """id(value) -> number of reads by nodes and fused steps (graph outputs not counted)."""
    counts: dict[int, int] = {}
    for step in all_steps(graph):
        for v in step.inputs:
            if v is not None:
                counts[id(v)] = counts.get(id(v), 0) + 1
    return counts


def replace_all_uses(graph: Graph, old: Value, new: Value) -> None:
    """Every read of `old` (nodes, fused steps, graph outputs, symbol sources) reads `new` instead."""
    for step in all_steps(graph):
        if any(v is old for v in step.inputs):
            step.inputs = [new if v is old else v for v in step.inputs]
    graph.outputs = [new if v is old else v for v in graph.outputs]
    graph.replace_symbol_sources(old, new)
