"""remove-reshape-noops: a Reshape to its input's own shape is removed (its readers read the input)."""
from __future__ import annotations

from dataclasses import dataclass

from iree_py.ir.graph import Graph
from iree_py.ir.rewrite import replace_all_uses


@dataclass
class RemoveReshapeNoops:
    name = "remove-reshape-noops"

    def run(self, graph: Graph) -> Graph:
        kept = []
        for node in graph.nodes:
            if node.op == "Reshape" and not node.fused and node.inputs[0].type == node.outputs[0].type:
                replace_all_uses(graph, node.outputs[0], node.inputs[0])
                continue
            kept.append(node)
        graph.nodes = kept
        return graph
