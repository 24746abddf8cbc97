"""fuse-elementwise: fold chains of elementwise consumers into their producer (one kernel each).

Roots: Conv, MatMul and the elementwise ops. A consumer C of the chain's current value v joins when
  - C is elementwise, reads v exactly once, and v has no other reader and is not a graph output
    (nor a value a symbol is read from: graph.symbol_sources);
  - C's result has v's shape (the running value is never broadcast to a bigger shape); its dtype
    may differ (Less -> Where, Cast) for an elementwise root;
  - for a Conv/MatMul root, C's result has v's type, every operand is f32 and C's other operand is
    a scalar, per-channel (Conv: [1,C,1,1]/[C,1,1]; MatMul: varies only along the last axis) or
    exactly the output's shape.
The root keeps op/inputs/attrs, `root.fused` gets the consumers in order, `root.outputs` becomes
the last consumer's outputs, and the root moves to the last consumer's position (every operand of
the chain is defined there). See docs/ir.md, "Fused nodes".
"""
from __future__ import annotations

from dataclasses import dataclass

from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.ops import ELEMENTWISE_OPS
from iree_py.ir.rewrite import use_counts
from iree_py.ir.types import DType

CONTRACTION_ROOTS = ("Conv", "MatMul")


def operand_kind(root_op: str, operand: Value, out: Value) -> str | None:
    """How an epilogue operand lines up with a Conv/MatMul output: scalar, channel, full or None."""
    shape, out_shape = tuple(operand.type.shape), tuple(out.type.shape)
    if operand.type.element_count == 1:
        return "scalar"
    if shape == out_shape:
        return "full"
    if len(shape) > len(out_shape):
        return None
    padded = (1,) * (len(out_shape) - len(shape)) + shape
    if root_op == "Conv":
        wanted = (1, out_shape[1]) + (1,) * (len(out_shape) - 2)
    else:
        wanted = (1,) * (len(out_shape) - 1) + (out_shape[-1],)
    return "channel" if padded == wanted else None


@dataclass
class FuseElementwise:
    name = "fuse-elementwise"

    def run(self, graph: Graph) -> Graph:
        counts = use_counts(graph)
        # graph outputs and the values symbols are read from must stay materialized
        outputs = {id(v) for v in graph.outputs} | {id(v) for v, _ in graph.symbol_sources.values()}
        reader = {id(v): n for n in graph.nodes for v in n.inputs if v is not None}
        slots: list[Node | None] = list(graph.nodes)
        position = {id(n): i for i, n in enumerate(graph.nodes)}
        taken: set[int] = set()  # consumers already fused into some root
        for i, root in enumerate(graph.nodes):
            if slots[i] is not root or (root.op not in CONTRACTION_ROOTS and root.op not in ELEMENTWISE_OPS):
                continue
            while True:
                v = root.outputs[0]
                consumer = reader.get(id(v))
                if consumer is None or id(consumer) in taken or \
                        not self.accepts(root, v, consumer, counts, outputs):
                    break
                taken.add(id(consumer))
                root.fused.append(consumer)
                root.outputs = list(consumer.outputs)
                for out in root.outputs:
                    out.producer = root
                j = position[id(consumer)]
                slots[position[id(root)]] = None
                slots[j] = root
                position[id(root)] = j
        graph.nodes = [n for n in slots if n is not None]
        return graph

    @staticmethod
    def accepts(root: Node, v: Value, consumer: Node, counts: dict[int, int], outputs: set[int]) -> bool:
        if consumer.op not in ELEMENTWISE_OPS or consumer.fused or consumer is root:
            return False
        if counts.get(id(v)) != 1 or id(v) in outputs:
            return False
        if sum(1 for x in consumer.inputs if x is v) != 1:
            return False
        if root.op not in CONTRACTION_ROOTS:  # the Expr computes each step in its own dtype
            return consumer.outputs[0].type.shape == v.type.shape
        if consumer.outputs[0].type != v.type:
            return False
        others = [x for x in consumer.inputs if x is not v]
        if any(x.type.dtype != DType.f32 for x in others) or v.type.dtype != DType.f32:
            return False  # epilogues compute in f32 only
        return all(operand_kind(root.op, x, v) is not None for x in others)
