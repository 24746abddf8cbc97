"""Checks that a graph is well formed; every message names the node at fault.

- every value is defined (graph input, constant, or an earlier node's result) before it is used,
  and no name is defined twice;
- every node is a normalized op (iree_py/ir/ops/) whose result types match its shape rule;
- fused chains are elementwise and linked (each step reads the previous step's result);
- the graph's outputs are defined and match output_names in number.
With `final=True` also: every computed tensor is float32 ("unsupported dtype" otherwise).
"""
from __future__ import annotations

from iree_py.errors import CompileError
from iree_py.ir.fused import chain_values
from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.ops import ELEMENTWISE_OPS, OPS, infer_types
from iree_py.ir.ops.control_flow import bodies
from iree_py.ir.types import DType


def _where(node: Node) -> str:
    return f"node '{node.name}' ({node.op})"


class _Checker:
    def __init__(self, graph: Graph, final: bool) -> None:
        self.graph = graph
        self.final = final
        self.defined: set[int] = set()
        self.names: dict[str, int] = {}

    def define(self, v: Value, where: str) -> None:
        other = self.names.get(v.name)
        if other is not None and other != id(v):
            raise CompileError(f"{where}: value name %{v.name} is defined twice")
        self.names[v.name] = id(v)
        self.defined.add(id(v))

    def check_inputs(self, node: Node, extra: set[int] = frozenset()) -> None:
        for i, v in enumerate(node.inputs):
            if v is None:
                raise CompileError(f"{_where(node)}: input {i} is missing")
            if v.is_const:
                if v.const.shape != tuple(v.type.shape) or v.const.dtype != v.type.dtype.numpy:
                    raise CompileError(f"{_where(node)}: constant %{v.name} holds "
                                       f"{v.const.dtype}{list(v.const.shape)}, type says {v.type}")
                self.define(v, _where(node))
            elif id(v) not in self.defined and id(v) not in extra:
                raise CompileError(f"{_where(node)}: input %{v.name} is used before it is defined")

    def check_types(self, node: Node, outputs: list[Value]) -> None:
        if node.op not in OPS:
            raise CompileError(f"{_where(node)}: not a normalized op")
        try:
            expected = infer_types(node.op, [v.type for v in node.inputs], node.attrs)
        except ValueError as e:
            raise CompileError(f"{_where(node)}: {e}") from None
        got = [v.type for v in outputs]
        if got != expected:
            raise CompileError(f"{_where(node)}: result types {[str(t) for t in got]} but the op gives "
                               f"{[str(t) for t in expected]}")
        dtypes = OPS[node.op].dtypes
        if self.final and node.inputs and node.inputs[0].type.dtype not in dtypes:
            data = node.inputs[0]
            supported = ", ".join(d.value for d in DType if d in dtypes)
            raise CompileError(f"{_where(node)}: unsupported dtype {data.type.dtype.value} of %{data.name} "
                               f"({node.op} computes in {supported})")

    def check_node(self, node: Node) -> None:
        self.check_inputs(node)
        for body in bodies(node):
            _Checker(body, self.final).run()
        if not node.fused:
            self.check_types(node, node.outputs)
        else:
            self.check_fused(node)
        for v in node.outputs:
            self.define(v, _where(node))

    def check_fused(self, root: Node) -> None:
        try:
            chain = chain_values(root)
        except ValueError as e:
            raise CompileError(str(e)) from None
        self.check_types(root, [chain[0]])
        for running, step in zip(chain, root.fused):
            if step.op not in ELEMENTWISE_OPS:
                raise CompileError(f"{_where(step)}: fused into {_where(root)} but not elementwise")
            if not any(v is running for v in step.inputs):
                raise CompileError(f"{_where(step)}: fused into {_where(root)} but does not read %{running.name}")
            self.check_inputs(step, {id(running)})
            self.check_types(step, step.outputs)
            self.define(running, _where(step))
        if root.outputs != root.fused[-1].outputs:
            raise CompileError(f"{_where(root)}: outputs should be the last fused node's outputs")

    def run(self) -> None:
        for v in self.graph.inputs:
            if v.is_const:
                raise CompileError(f"graph input %{v.name} must not be a constant")
            self.define(v, "graph inputs")
        for node in self.graph.nodes:
            self.check_node(node)
        for v in self.graph.outputs:
            if not v.is_const and id(v) not in self.defined:
                raise CompileError(f"graph output %{v.name} is not defined")
        if len(self.graph.output_names) != len(self.graph.outputs):
            raise CompileError(f"graph has {len(self.graph.outputs)} outputs but "
                               f"{len(self.graph.output_names)} output names")


def verify(graph: Graph, final: bool = False) -> None:
    """Raise CompileError if the graph is not well formed (see module docstring)."""
    _Checker(graph, final).run()
