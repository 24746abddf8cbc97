"""inject-fault (tests only): makes one named node's kernel wrong, to check that `iree-py debug`
names the node that diverges (iree_py/layer_debug/).

The node's first output becomes `x + 4` (floats: `1.5 * x + 1`; 4 steps is past the 1-step
tolerance for quantized values), computed by elementwise ops the
fusion folds into the node's own kernel, so the module carries one faulty kernel and
everything downstream inherits the error. Never part of the default pipeline: only
CompileOptions.inject_fault runs it."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iree_py.errors import CompileError
from iree_py.ir.build import NameTable, constant, make_node
from iree_py.ir.graph import Graph, Node, Value


@dataclass
class InjectFault:
    node_name: str
    name = "inject-fault"

    def run(self, graph: Graph) -> Graph:
        matches = [i for i, n in enumerate(graph.nodes) if n.name == self.node_name]
        if not matches:
            raise CompileError(f"inject_fault: the graph has no node named '{self.node_name}'")
        index = matches[0]
        node = graph.nodes[index]
        out = node.outputs[0]
        names = NameTable.of_graph(graph)
        dtype = out.type.dtype.numpy
        if not (np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.integer)):
            raise CompileError(f"inject_fault: node '{node.name}' ({node.op}) gives {out.type.dtype.value}; only "
                               f"numbers can be perturbed")
        raw = Value(names.fresh(f"{out.name}_unfaulted"), out.type, producer=node)
        node.outputs[0] = raw
        faulty: list[Node] = []
        if np.issubdtype(dtype, np.floating):
            scale = constant(names, f"{out.name}_fault_scale", np.full((), 1.5, dtype=dtype))
            faulty.append(make_node(names, "Mul", [raw, scale], name=node.name, out_hint=f"{out.name}_scaled"))
            raw = faulty[-1].outputs[0]
        shift = constant(names, f"{out.name}_fault", np.full((), 1 if np.issubdtype(dtype, np.floating) else 4, dtype=dtype))
        faulty.append(make_node(names, "Add", [raw, shift], name=node.name, out_name=out.name))
        faulty[-1].outputs = [out]  # the original result value keeps its readers
        out.producer = faulty[-1]
        graph.nodes[index + 1:index + 1] = faulty
        return graph
