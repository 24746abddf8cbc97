"""TFLite WHILE and IF -> the IR's Loop and If (iree_py/ir/ops/control_flow.py).

TFLite subgraphs are closed functions: a body's values all come from its inputs and constants.
IF(cond, args...): then/else subgraphs over args become the If's branches (args are its captures).
WHILE(vars...): cond(vars) is imported inline for the first test; the Loop body is body(vars)
followed by cond(new vars), whose result is the Loop's condition for the next iteration. Shapes
must stay static (dynamic shapes: issue 3).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.tflite.schema.IfOptions import IfOptionsT
from iree_py.frontends.tflite.schema.WhileOptions import WhileOptionsT
from iree_py.ir.build import NameTable, fold_or_append, make_node
from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.ops import infer_types
from iree_py.ir.types import DType, TensorType

if TYPE_CHECKING:
    from iree_py.frontends.tflite.importer import TfliteContext

NO_TRIP_LIMIT = np.iinfo(np.int64).max


def _subgraph(ctx: "TfliteContext", index: int, args: list[Value], what: str) -> tuple[list[Node], list[Value]]:
    """Convert subgraph `index` with its inputs bound to `args`: its nodes and its outputs."""
    from iree_py.frontends.tflite.importer import TfliteContext, convert_operators
    subgraphs = ctx.model.subgraphs or []
    if not 0 <= index < len(subgraphs) or index == ctx.subgraph_index:
        raise ctx.error(f"{what} subgraph index {index} is out of range or this subgraph ({len(subgraphs)} subgraphs)")
    sub = TfliteContext(ctx.model, ctx.source, index, names=ctx.names)
    sub.load_constants()
    formal = [int(i) for i in (sub.subgraph.inputs if sub.subgraph.inputs is not None else [])]
    if len(formal) != len(args):
        raise ctx.error(f"{what} subgraph {index} takes {len(formal)} inputs, the operator passes {len(args)}")
    for i, (tensor, value) in enumerate(zip(formal, args)):
        declared = sub.tensor_type(tensor, f"{what} subgraph input")
        if declared.dtype != value.type.dtype or (declared.shape and declared.shape != value.type.shape):
            raise ctx.error(f"{what} subgraph {index} input {i} is {declared}, the operator passes {value.type}")
        sub.env[tensor] = value
    convert_operators(sub)
    outputs = []
    for tensor in (int(i) for i in (sub.subgraph.outputs if sub.subgraph.outputs is not None else [])):
        if tensor not in sub.env:
            raise ctx.error(f"{what} subgraph {index} output tensor {tensor} is not computed by any operator")
        outputs.append(sub.env[tensor])
    return sub.graph_nodes, outputs


def _condition(names: NameTable, v: Value, nodes: list[Node], node_name: str) -> Value:
    """A one-element bool (or number) as the i64[] the control-flow ops test."""
    if v.type.num_elements != 1:
        raise ValueError(f"condition must hold one element, got {v.type}")
    if v.type.dtype != DType.i64:
        v = fold_or_append(make_node(names, "Cast", [v], {"to": DType.i64.value}, node_name,
                                     out_hint=f"{node_name}_condition"), nodes)
    if v.type.shape != ():
        v = fold_or_append(make_node(names, "Reshape", [v], {"shape": []}, node_name,
                                     out_hint=f"{node_name}_condition"), nodes)
    return v


def _formals(ctx: "TfliteContext", values: list[Value], hint: str) -> list[Value]:
    return [Value(ctx.names.fresh(f"{hint}_{i}"), v.type) for i, v in enumerate(values)]


def _append(ctx: "TfliteContext", op: str, inputs: list[Value], attrs: dict) -> list[Value]:
    try:
        types = infer_types(op, [v.type for v in inputs], attrs)
    except ValueError as e:
        raise ctx.error(str(e)) from None
    node_name = f"{ctx.op_name.lower()}_{ctx.op_index}"
    node = Node(op, list(inputs), [], attrs, node_name)
    node.outputs = [Value(ctx.names.fresh(ctx.tensor_names[ctx._index(i, outputs=True)]), t, producer=node)
                    for i, t in enumerate(types)]
    ctx.graph_nodes.append(node)
    return node.outputs


def if_(ctx: "TfliteContext") -> list[Value]:
    opts = ctx.options(IfOptionsT)
    args = [ctx.input(i) for i in range(1, ctx.num_inputs())]
    node_name = f"{ctx.op_name.lower()}_{ctx.op_index}"
    try:
        cond = _condition(ctx.names, ctx.input(0), ctx.graph_nodes, node_name)
    except ValueError as e:
        raise ctx.error(str(e)) from None
    branches = {}
    for key, index in (("then_branch", opts.thenSubgraphIndex), ("else_branch", opts.elseSubgraphIndex)):
        formals = _formals(ctx, args, f"{node_name}_{key}_arg")
        nodes, outputs = _subgraph(ctx, index, formals, key.replace("_branch", ""))
        branches[key] = Graph(key, formals, outputs, nodes, [v.name for v in outputs])
    return _append(ctx, "If", [cond, *args], {**branches, "result_shapes": None})


def while_(ctx: "TfliteContext") -> list[Value]:
    opts = ctx.options(WhileOptionsT)
    init = [ctx.input(i) for i in range(ctx.num_inputs())]
    node_name = f"{ctx.op_name.lower()}_{ctx.op_index}"
    first_nodes, first = _subgraph(ctx, opts.condSubgraphIndex, init, "cond")
    ctx.graph_nodes.extend(first_nodes)
    iteration = Value(ctx.names.fresh(f"{node_name}_iteration"), TensorType(DType.i64, ()))
    carried = _formals(ctx, init, f"{node_name}_var")
    body_nodes, new_vars = _subgraph(ctx, opts.bodySubgraphIndex, carried, "body")
    if len(new_vars) != len(init):
        raise ctx.error(f"body subgraph {opts.bodySubgraphIndex} returns {len(new_vars)} values for {len(init)} "
                        "loop variables")
    cond_nodes, again = _subgraph(ctx, opts.condSubgraphIndex, new_vars, "cond")
    body_nodes += cond_nodes
    if len(first) != 1:
        raise ctx.error(f"cond subgraph {opts.condSubgraphIndex} returns {len(first)} values, expected 1")
    try:
        start = _condition(ctx.names, first[0], ctx.graph_nodes, node_name)
        again_i64 = _condition(ctx.names, again[0], body_nodes, node_name)
    except ValueError as e:
        raise ctx.error(str(e)) from None
    body = Graph("while_body", [iteration, *carried], [again_i64, *new_vars], body_nodes,
                 ["cond", *(v.name for v in new_vars)])
    trip = ctx.const(np.array(NO_TRIP_LIMIT, np.int64), f"{node_name}_no_trip_limit")
    attrs = {"body": body, "carried": len(init), "scan_inputs": 0, "scan_outputs": 0, "trips": -1}
    return _append(ctx, "Loop", [trip, start, *init], attrs)
