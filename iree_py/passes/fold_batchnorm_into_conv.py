"""fold-batchnorm-into-conv: Conv -> BatchNormalization becomes one Conv with scaled weights.

Applies when the Conv's result is read only by the BatchNormalization (and is not a graph output)
and the weights, bias and BN parameters are constants:
    s = scale / sqrt(var + epsilon);  W' = W * s[m];  b' = (b - mean) * s + bias
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iree_py.ir.build import NameTable, constant
from iree_py.ir.graph import Graph, Node
from iree_py.ir.rewrite import use_counts


@dataclass
class FoldBatchNormIntoConv:
    name = "fold-batchnorm-into-conv"

    def run(self, graph: Graph) -> Graph:
        names = NameTable.of_graph(graph)
        counts = use_counts(graph)
        outputs = {id(v) for v in graph.outputs}
        producers = {id(n.outputs[0]): n for n in graph.nodes}
        removed: set[int] = set()
        for bn in graph.nodes:
            if bn.op != "BatchNormalization" or bn.fused:
                continue
            conv = producers.get(id(bn.inputs[0]))
            if conv is None or conv.op != "Conv" or conv.fused or id(conv) in removed:
                continue
            if counts.get(id(conv.outputs[0])) != 1 or id(conv.outputs[0]) in outputs:
                continue
            if not all(v.is_const for v in [*conv.inputs[1:], *bn.inputs[1:]]):
                continue
            self.fold(conv, bn, names)
            removed.add(id(conv))
        graph.nodes = [n for n in graph.nodes if id(n) not in removed]
        return graph

    @staticmethod
    def fold(conv: Node, bn: Node, names: NameTable) -> None:
        """Turn `bn` into the folded Conv (in place, so it keeps its position and result)."""
        scale, bias, mean, var = (v.const.astype(np.float64) for v in bn.inputs[1:])
        w = conv.inputs[1].const.astype(np.float64)
        b = conv.inputs[2].const.astype(np.float64) if len(conv.inputs) == 3 else np.zeros(w.shape[0])
        s = scale / np.sqrt(var + bn.attrs["epsilon"])
        dtype = conv.inputs[1].const.dtype
        new_w = constant(names, f"{conv.inputs[1].name}_bn", (w * s.reshape(-1, 1, 1, 1)).astype(dtype))
        new_b = constant(names, f"{bn.outputs[0].name}_bias", ((b - mean) * s + bias).astype(dtype))
        bn.op, bn.attrs = "Conv", dict(conv.attrs)
        bn.inputs = [conv.inputs[0], new_w, new_b]
        bn.name = conv.name or bn.name
