"""fold-constants: a node whose inputs are all constants becomes a constant (numpy reference).

Covers arithmetic on constants as well as Reshape/Transpose/Concat of constants. Nodes with a
fused chain are left alone (fusion runs after folding), and so is a gather or scatter whose constant
indices lie outside their axis: it fails the call when it runs, as in onnxruntime (it may never run).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iree_py.ir.build import has_symbolic_attrs
from iree_py.ir.ops.control_flow import FAIL
from iree_py.ir.ops.state import STATE_OPS  # state ops act at run time, never folded
from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.ops.indexing import IndexOutOfRange
from iree_py.ir.reference import run_node
from iree_py.ir.rewrite import replace_all_uses


@dataclass
class FoldConstants:
    name = "fold-constants"
    max_elements: int = 1 << 26  # results larger than this (elements) are left to run time

    def foldable(self, node: Node) -> bool:
        if has_symbolic_attrs(node) or node.op == FAIL:
            return False  # dims known only at run time (DimValues); a failure when it runs
        return (not node.fused and node.op not in STATE_OPS and len(node.outputs) == 1 and all(v is not None and v.is_const for v in node.inputs)
                and node.outputs[0].type.is_static and node.outputs[0].type.num_elements <= self.max_elements)

    def run(self, graph: Graph) -> Graph:
        kept = []
        for node in graph.nodes:
            if not self.foldable(node):
                kept.append(node)
                continue
            out = node.outputs[0]
            try:
                array = run_node(node, lambda v: v.const)
            except IndexOutOfRange:
                kept.append(node)
                continue
            folded = Value(out.name, out.type, const=np.asarray(array, dtype=out.type.dtype.numpy))
            replace_all_uses(graph, out, folded)
        graph.nodes = kept
        return graph
