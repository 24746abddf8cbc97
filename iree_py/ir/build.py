"""Small helpers to create values and nodes with inferred types and unique names."""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.ops.indexing import IndexOutOfRange
from iree_py.ir.ops import infer_types
from iree_py.ir.reference import KERNELS
from iree_py.ir.symbols import Expr
from iree_py.ir.types import DType, TensorType


class NameTable:
    """Hands out value names not used before: `hint`, then `hint_1`, `hint_2`, ..."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self.taken: set[str] = set(taken)

    @staticmethod
    def of_graph(graph: Graph) -> "NameTable":
        names = {v.name for v in graph.values()}
        for node in graph.nodes:
            for step in node.fused:
                names.update(v.name for v in [*step.inputs, *step.outputs] if v is not None)
        return NameTable(names)

    def fresh(self, hint: str) -> str:
        name, i = hint, 0
        while name in self.taken:
            i += 1
            name = f"{hint}_{i}"
        self.taken.add(name)
        return name


def constant(names: NameTable, hint: str, array: np.ndarray) -> Value:
    array = np.asarray(array)
    return Value(names.fresh(hint), TensorType(DType.from_numpy(array.dtype), tuple(int(d) for d in array.shape)),
                 const=array)


def make_node(names: NameTable, op: str, inputs: list[Value], attrs: dict[str, Any] | None = None,
              name: str = "", out_hint: str = "", out_name: str | None = None) -> Node:
    """A node with outputs typed by the op's shape rule; ValueError if the rule rejects it.
    The (first) result is named `out_name` exactly if given, else a fresh name from `out_hint`."""
    attrs = dict(attrs or {})
    try:
        types = infer_types(op, [v.type for v in inputs], attrs)
    except ValueError as e:
        raise ValueError(f"node '{name}' ({op}): {e}") from None
    node = Node(op, list(inputs), [], attrs, name)
    hint = out_hint or name or op.lower()
    node.outputs = [Value(out_name if (i == 0 and out_name is not None) else
                          names.fresh(hint if i == 0 else f"{hint}_{i}"), t, producer=node)
                    for i, t in enumerate(types)]
    return node


def has_symbolic_attrs(node: Node) -> bool:
    """Whether an attribute holds a dim known only at run time (an Expr, also inside a list)."""
    def symbolic(x: Any) -> bool:
        return isinstance(x, Expr) or (isinstance(x, (list, tuple)) and any(symbolic(e) for e in x))
    return any(symbolic(v) for v in node.attrs.values())


def fold_or_append(node: Node, nodes: list[Node]) -> Value:
    """The frontends' last step for a new node: when every input is a constant, its (first) result
    evaluated now by the reference kernel, as a constant; otherwise (also for constant indices
    outside their axis) the node appended to `nodes` and its first result."""
    result = node.outputs[0]
    if all(v.is_const for v in node.inputs) and not has_symbolic_attrs(node):
        try:
            array = KERNELS[node.op]([v.const for v in node.inputs], node.attrs)
        except IndexOutOfRange:  # left to run time, which fails the call if the node runs at all
            nodes.append(node)
            return result
        return Value(result.name, result.type, const=np.asarray(array, dtype=result.type.dtype.numpy))
    nodes.append(node)
    return result
