"""TFLite resource variables -> module state: VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, CALL_ONCE.

Each variable (VAR_HANDLE's container + shared_name) becomes a state slot (iree_py/ir/ops/state.py).
In the main subgraph:
- the first READ_VARIABLE of a variable before any ASSIGN is a StateRead (its value at the start of
  the call); a READ after an ASSIGN in the same call is the assigned value itself;
- the last ASSIGN_VARIABLE of a variable becomes its StateWrite (earlier ones are dropped).
CALL_ONCE imports its init subgraph here: every ASSIGN there must store a constant (TF's exporter
writes constant initial values), which becomes a StateInit. A variable's type is that of the values
assigned to it, or READ_VARIABLE's declared output: all must agree (resource tensors have no shape).
`order_state_nodes` (called by the importer at the end) puts StateInit, then StateRead first and
StateWrite last, the order lowering relies on (docs/state.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from iree_py.frontends.tflite.schema.BuiltinOperator import BuiltinOperator as B
from iree_py.frontends.tflite.schema.CallOnceOptions import CallOnceOptionsT
from iree_py.frontends.tflite.schema.VarHandleOptions import VarHandleOptionsT
from iree_py.ir.build import make_node
from iree_py.ir.graph import Node, Value
from iree_py.ir.types import TensorType

if TYPE_CHECKING:
    from iree_py.frontends.tflite.importer import TfliteContext


@dataclass
class Variable:
    slot: int
    name: str
    type: TensorType | None = None


@dataclass
class _ModelState:
    """Shared by the main subgraph's context and the init subgraphs' contexts."""

    variables: dict[tuple[str, str], Variable] = field(default_factory=dict)
    inits: dict[int, Node] = field(default_factory=dict)     # slot -> its StateInit
    called: set[int] = field(default_factory=set)            # init subgraphs already imported


@dataclass
class _SubgraphState:
    model: _ModelState
    is_init: bool
    handles: dict[int, Variable] = field(default_factory=dict)   # resource tensor index -> variable
    current: dict[int, Value] = field(default_factory=dict)      # slot -> its value in this call so far
    writes: dict[int, Node] = field(default_factory=dict)        # slot -> its (last) StateWrite


def _state(ctx: "TfliteContext") -> _SubgraphState:
    """The context's state bookkeeping, made on first use (only stateful models need it)."""
    state = getattr(ctx, "resource_state", None)
    if state is None:
        state = _SubgraphState(_ModelState(), is_init=False)
        ctx.resource_state = state  # type: ignore[attr-defined]
    return state


def _text(s: object) -> str:
    return s.decode("utf-8", "replace") if isinstance(s, (bytes, bytearray)) else str(s or "")


def _variable_of(ctx: "TfliteContext", i: int) -> Variable:
    index = ctx._index(i)
    variable = _state(ctx).handles.get(index)
    if variable is None:
        raise ctx.error(f"input {i} (tensor {index}) is not a resource made by VAR_HANDLE in this subgraph")
    return variable


def _settle_type(ctx: "TfliteContext", variable: Variable, ttype: TensorType, what: str) -> None:
    if not ttype.is_static:
        raise ctx.error(f"variable '{variable.name}': {what} has a dynamic shape {ttype}")
    if variable.type is None:
        variable.type = ttype
    elif variable.type != ttype:
        raise ctx.error(f"variable '{variable.name}' is {variable.type}, but {what} is {ttype}")


def var_handle(ctx: "TfliteContext") -> list[Value]:
    opts = ctx.options(VarHandleOptionsT)
    out = ctx._index(0, outputs=True)
    key = (_text(opts.container), _text(opts.sharedName) or ctx.tensor_names[out])
    model = _state(ctx).model
    if key not in model.variables:
        model.variables[key] = Variable(len(model.variables), key[1] if not key[0] else f"{key[0]}/{key[1]}")
    _state(ctx).handles[out] = model.variables[key]
    return []  # the resource tensor is no Value: READ/ASSIGN look it up in `handles`


def read_variable(ctx: "TfliteContext") -> list[Value]:
    variable = _variable_of(ctx, 0)
    state = _state(ctx)
    _settle_type(ctx, variable, ctx.tensor_type(ctx._index(0, outputs=True), "output"), "READ_VARIABLE's output")
    if variable.slot in state.current:
        return [state.current[variable.slot]]
    if state.is_init:
        raise ctx.error(f"the init subgraph reads variable '{variable.name}' before assigning it")
    assert variable.type is not None
    attrs = {"slot": variable.slot, "var": variable.name, "shape": list(variable.type.shape),
             "dtype": variable.type.dtype.value}
    node = make_node(ctx.names, "StateRead", [], attrs, f"{ctx.op_name.lower()}_{ctx.op_index}",
                     out_name=ctx.tensor_names[ctx._index(0, outputs=True)])
    ctx.graph_nodes.append(node)
    state.current[variable.slot] = node.outputs[0]
    return [node.outputs[0]]


def assign_variable(ctx: "TfliteContext") -> list[Value]:
    variable = _variable_of(ctx, 0)
    value = ctx.input(1)
    state = _state(ctx)
    _settle_type(ctx, variable, value.type, f"the value assigned ('{value.name}')")
    name = f"{ctx.op_name.lower()}_{ctx.op_index}"
    attrs = {"slot": variable.slot, "var": variable.name}
    state.current[variable.slot] = value
    if state.is_init:
        if not value.is_const:
            raise ctx.error(f"the init subgraph assigns variable '{variable.name}' a value computed at run time "
                            f"('{value.name}'); only initial values known at compile time are supported")
        state.model.inits[variable.slot] = make_node(ctx.names, "StateInit", [value], attrs, name,
                                                     out_hint=f"{variable.name}_init")
        return []
    previous = state.writes.pop(variable.slot, None)
    if previous is not None:
        ctx.graph_nodes.remove(previous)
    state.writes[variable.slot] = make_node(ctx.names, "StateWrite", [value], attrs, name,
                                            out_hint=f"{variable.name}_write")
    ctx.graph_nodes.append(state.writes[variable.slot])
    return []


def call_once(ctx: "TfliteContext") -> list[Value]:
    from iree_py.frontends.tflite.importer import TfliteContext
    from iree_py.frontends.tflite.ops import CONVERTERS
    from iree_py.frontends.tflite import reader

    index = int(ctx.options(CallOnceOptionsT).initSubgraphIndex)
    subgraphs = ctx.model.subgraphs or []
    if not 0 <= index < len(subgraphs) or index == ctx.subgraph_index:
        raise ctx.error(f"init subgraph index {index} is out of range or this subgraph "
                        f"({len(subgraphs)} subgraphs)")
    state = _state(ctx)
    if state.is_init:
        raise ctx.error("CALL_ONCE inside an init subgraph is not supported")
    if index in state.model.called:
        return []
    state.model.called.add(index)
    init = TfliteContext(ctx.model, ctx.source, index)
    init.names = ctx.names  # one name space: the init's constants land in the main graph
    init.tensor_names = [ctx.names.fresh(f"init{index}_{n}") for n in init.tensor_names]
    init.resource_state = _SubgraphState(state.model, is_init=True)  # type: ignore[attr-defined]
    init.load_constants()
    if init.subgraph.inputs is not None and len(init.subgraph.inputs):
        raise ctx.error(f"init subgraph {index} has inputs; CALL_ONCE subgraphs take none")
    for op_index, op in enumerate(init.subgraph.operators or []):
        init.op, init.op_index = op, op_index
        init.op_name = reader.operator_name(ctx.model, op.opcodeIndex)
        convert = CONVERTERS.get(reader.operator_code(ctx.model, op.opcodeIndex))
        if convert is None:
            raise init.error("op not supported by iree-py")
        for i, value in enumerate(convert(init)):
            init.env[init._index(i, outputs=True)] = value
    if init.graph_nodes:
        node = init.graph_nodes[0]
        raise ctx.error(f"init subgraph {index} computes '{node.outputs[0].name}' ({node.op}) at run time; "
                        "only initial values known at compile time are supported")
    return []


def order_state_nodes(nodes: list[Node]) -> None:
    """StateInit nodes first, then StateRead, then the rest in order, StateWrite last (in place)."""
    rank = {"StateInit": 0, "StateRead": 1, "StateWrite": 3}
    nodes.sort(key=lambda n: rank.get(n.op, 2))  # stable: each group keeps its order


def finish_state(ctx: "TfliteContext") -> None:
    """The importer's last step: add the init subgraphs' StateInit nodes and order the state ops."""
    state = getattr(ctx, "resource_state", None)
    if state is None:
        return
    ctx.graph_nodes.extend(state.model.inits[slot] for slot in sorted(state.model.inits))
    order_state_nodes(ctx.graph_nodes)


TFLITE_STATE_CONVERTERS = {
    B.VAR_HANDLE: var_handle,
    B.READ_VARIABLE: read_variable,
    B.ASSIGN_VARIABLE: assign_variable,
    B.CALL_ONCE: call_once,
}
