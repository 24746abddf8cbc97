"""eliminate-dead-code: remove nodes whose results nobody reads (constants go with them: a
constant exists only as long as some node or graph output refers to it). Nodes that write module
state (StateWrite, StateInit) are always live, and so are the values a data-dependent symbol is
read from (graph.symbol_sources)."""
from __future__ import annotations

from dataclasses import dataclass

from iree_py.ir.graph import Graph
from iree_py.ir.ops.state import SIDE_EFFECT_OPS


@dataclass
class EliminateDeadCode:
    name = "eliminate-dead-code"

    def run(self, graph: Graph) -> Graph:
        live = {id(v) for v in graph.outputs}
        live.update(id(v) for v, _ in graph.symbol_sources.values())  # read at run time for a dim
        kept = []
        for node in reversed(graph.nodes):
            if not any(id(v) in live for v in node.outputs) and node.op not in SIDE_EFFECT_OPS:
                continue
            kept.append(node)
            for step in [node, *node.fused]:
                live.update(id(v) for v in step.inputs if v is not None)
        graph.nodes = kept[::-1]
        return graph
