"""The numpy reference: `evaluate(graph, inputs)` runs a graph node by node with each op's numpy
kernel (iree_py/ir/ops/, the KERNELS of each op family), and `run_node` runs one node with its fused
chain (constant folding uses it).

Used by constant folding and as the reference in tests. Written for clarity, not speed.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.ops import KERNELS
from iree_py.ir.reference_symbolic import evaluate_symbolic, has_symbols


def run_node(node: Node, lookup: Callable[[Value], np.ndarray]) -> np.ndarray:
    """One node's result, with its fused chain applied; `lookup` gives any other value's array."""
    result = KERNELS[node.op]([lookup(v) for v in node.inputs], node.attrs)
    if not node.fused:
        return result
    from iree_py.ir.fused import root_result
    chain = {id(root_result(node)): result}
    for step in node.fused:
        args = [chain[id(v)] if id(v) in chain else lookup(v) for v in step.inputs]
        chain[id(step.outputs[0])] = KERNELS[step.op](args, step.attrs)
    return chain[id(node.fused[-1].outputs[0])]


def evaluate(graph: Graph, inputs: dict[str, np.ndarray] | list[np.ndarray]) -> list[np.ndarray]:
    """Run the graph with numpy; inputs by name or in order. Returns outputs in order.
    A graph with symbolic dims runs on any sizes: see reference_symbolic.py."""
    if isinstance(inputs, dict):
        inputs = [inputs[v.name] for v in graph.inputs]
    if has_symbols(graph):
        return evaluate_symbolic(graph, inputs, run_node)
    env: dict[int, np.ndarray] = {}
    for v, array in zip(graph.inputs, inputs, strict=True):
        env[id(v)] = np.asarray(array, dtype=v.type.dtype.numpy).reshape(v.type.shape)

    def lookup(v: Value) -> np.ndarray:
        return v.const if v.is_const else env[id(v)]

    for node in graph.nodes:
        result = run_node(node, lookup)
        if not isinstance(result, list):
            env[id(node.outputs[0])] = result
            continue
        for out, array in zip(node.outputs, result, strict=True):  # control flow: one array per result
            env[id(out)] = array
    return [lookup(v) for v in graph.outputs]
