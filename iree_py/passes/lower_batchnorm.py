"""lower-batchnorm: BatchNormalization -> Mul + Add with per-channel constants.

    y = x * a + b,  a = scale / sqrt(var + epsilon),  b = bias - mean * a
with a and b of shape [C, 1, ...] (one 1 per spatial axis) so they broadcast over [N, C, ...].
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iree_py.ir.build import NameTable, constant, make_node
from iree_py.ir.graph import Graph, Node


@dataclass
class LowerBatchNorm:
    name = "lower-batchnorm"

    def run(self, graph: Graph) -> Graph:
        names = NameTable.of_graph(graph)
        nodes: list[Node] = []
        for node in graph.nodes:
            if node.op != "BatchNormalization" or node.fused:
                nodes.append(node)
                continue
            nodes.extend(self.lower(node, names))
        graph.nodes = nodes
        return graph

    @staticmethod
    def lower(bn: Node, names: NameTable) -> list[Node]:
        x = bn.inputs[0]
        scale, bias, mean, var = (v.const.astype(np.float64) for v in bn.inputs[1:])
        a = scale / np.sqrt(var + bn.attrs["epsilon"])
        b = bias - mean * a
        shape = (-1,) + (1,) * (x.type.rank - 2)
        dtype = x.type.dtype.numpy
        out = bn.outputs[0]
        a_val = constant(names, f"{out.name}_scale", a.reshape(shape).astype(dtype))
        b_val = constant(names, f"{out.name}_shift", b.reshape(shape).astype(dtype))
        mul = make_node(names, "Mul", [x, a_val], name=bn.name, out_hint=f"{out.name}_scaled")
        add = make_node(names, "Add", [mul.outputs[0], b_val], name=bn.name, out_name=out.name)
        add.outputs = [out]  # keep the original result value (and its readers)
        out.producer = add
        return [mul, add]
