"""Helpers for nodes carrying a fused elementwise chain (see docs/ir.md, "Fused nodes").

After fuse-elementwise, a root node R keeps its op, inputs and attributes; `R.fused` lists the
elementwise nodes applied to its result in order, and `R.outputs` is the last fused node's outputs.
The root's own result (the first link of the chain) is no longer any node's output: it is the
input of `R.fused[0]` whose `producer` is R.
"""
from __future__ import annotations

from iree_py.ir.graph import Node, Value


def root_result(node: Node) -> Value:
    """The value the root op itself computes (before its fused chain)."""
    if not node.fused:
        return node.outputs[0]
    for v in node.fused[0].inputs:
        if v is not None and v.producer is node:
            return v
    raise ValueError(f"node '{node.name}' ({node.op}): no input of its first fused node "
                     f"'{node.fused[0].name}' is produced by the root")


def chain_values(node: Node) -> list[Value]:
    """The running value before each fused step: [root result, fused[0] result, ...]."""
    values = [root_result(node)]
    for step in node.fused[:-1]:
        values.append(step.outputs[0])
    return values
