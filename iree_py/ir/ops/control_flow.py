"""The control-flow ops If and Loop, whose bodies are nested graphs (regions).

Bodies are closed: every outer value a body reads is passed to the node as a trailing input (a
capture) and arrives as the matching trailing body input, so passes and the memory planner treat a
body as an ordinary graph. Conditions are i64 scalars (the frontends Cast ONNX's bool to i64) so
the VM reads them with `buffer_load_i64`. docs/control_flow.md has the lowering.

If:   inputs  [cond, *captures]
      attrs   then_branch, else_branch: Graph with inputs = captures, outputs = the node's outputs
              result_shapes: None (both branches give the same types), or the results' shapes when
                the branches' differ: a dim where they differ is a symbol of its own, which the
                branch that runs sets (vm/control_flow.py)
Loop: inputs  [trip_count, cond, *carried, *scan_inputs, *captures]   (trip_count, cond: i64[])
      attrs   body: Graph with
                inputs  [iteration (i64[]), *carried, *scan_input slices, *captures]
                outputs [cond (i64[]), *carried, *scan_output slices]
              carried, scan_inputs, scan_outputs: counts
              trips: the iteration count scan outputs are sized for (-1: the loop has none); an
                Expr: a Scan's symbolic length, or a symbol of its own that the loop sets to the
                iterations it ran (a run-time trip count: vm/control_flow.py)
      outputs [*carried (final values), *scan_outputs ([trips, *slice shape])]
      Iteration i runs while i < trip_count and cond != 0; scan input j's slice i is
      scan_inputs[j][i] (axis 0). A loop with scan outputs must run exactly `trips` times (unless
      `trips` is the loop's own symbol): the VM checks it after the loop.

The references (numpy) run the bodies with `evaluate` (iree_py/ir/reference.py) and return the list
of the node's results (control-flow nodes are the IR's multi-result nodes).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.ir.graph import Graph, Node
from iree_py.ir.opdef import Kernel, OpDef
from iree_py.ir.symbols import Expr
from iree_py.ir.types import DType, TensorType, is_sequence


CONDITION = TensorType(DType.i64, ())


BODY_ATTRS = {"If": ("then_branch", "else_branch"), "Loop": ("body",)}


def bodies(node: Node) -> list[Graph]:
    """The nested graphs of a control-flow node, in lowering order; [] for any other node."""
    return [node.attrs[name] for name in BODY_ATTRS.get(node.op, ())]


def _types(values: list) -> list[TensorType]:
    return [v.type for v in values]


def _check_inputs(what: str, graph: Graph, expected: list[TensorType]) -> None:
    got = _types(graph.inputs)
    if got != expected:
        raise ValueError(f"{what} takes {[str(t) for t in got]} but is given {[str(t) for t in expected]}")


def _if(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    if inputs[0] != CONDITION:
        raise ValueError(f"If condition must be {CONDITION}, got {inputs[0]}")
    then_graph, else_graph = attrs["then_branch"], attrs["else_branch"]
    _check_inputs("then_branch", then_graph, inputs[1:])
    _check_inputs("else_branch", else_graph, inputs[1:])
    then_types, else_types = _types(then_graph.outputs), _types(else_graph.outputs)
    if attrs["result_shapes"] is not None:
        return _if_results(then_types, else_types, attrs["result_shapes"])
    if then_types != else_types:
        raise ValueError(f"branches give different types: then {[str(t) for t in then_types]}, "
                         f"else {[str(t) for t in else_types]} (branches whose shapes differ need dynamic shapes)")
    return then_types


def branch_symbols(result: TensorType, then_type: TensorType, else_type: TensorType) -> list[tuple[int, str]]:
    """(axis, symbol) of each dim of an If result that its branches set (the branches' dims differ)."""
    if is_sequence(result):
        return []
    return [(axis, next(iter(Expr.of(d).symbols))) for axis, (d, a, b) in
            enumerate(zip(result.shape, then_type.shape, else_type.shape)) if a != b]


def _if_results(then_types: list[TensorType], else_types: list[TensorType],
                shapes: list[tuple]) -> list[TensorType]:
    """Branches of different shapes: each dim where they differ is a symbol of its own (set by the
    branch that runs); dtypes and ranks must agree."""
    if not len(then_types) == len(else_types) == len(shapes):
        raise ValueError(f"If has {len(shapes)} result shapes for {len(then_types)} / {len(else_types)} branch results")
    results = []
    for k, (a, b, shape) in enumerate(zip(then_types, else_types, shapes)):
        if is_sequence(a) or is_sequence(b):
            if a != b or shape is not None:
                raise ValueError(f"If result {k}: branches give {a} and {b}; sequence results must agree")
            results.append(a)
            continue
        if a.dtype != b.dtype or len(a.shape) != len(b.shape) or len(shape) != len(a.shape):
            raise ValueError(f"If result {k}: branches give {a} and {b}; they must agree in element type and rank")
        result = TensorType(a.dtype, tuple(shape))
        for axis, (d, x, y) in enumerate(zip(result.shape, a.shape, b.shape)):
            if x == y and d != x:
                raise ValueError(f"If result {k} dim {axis} is {d} but both branches give {x}")
            if x != y and (isinstance(d, int) or len(Expr.of(d).symbols) != 1 or Expr.of(d) != Expr.of(
                    next(iter(Expr.of(d).symbols)))):
                raise ValueError(f"If result {k} dim {axis}: branches give {x} and {y}, so it must be a symbol "
                                 f"of its own, got {d}")
        results.append(result)
    return results


def _loop(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    body: Graph = attrs["body"]
    carried, scan_in, scan_out, trips = attrs["carried"], attrs["scan_inputs"], attrs["scan_outputs"], attrs["trips"]
    if inputs[0] != CONDITION or inputs[1] != CONDITION:
        raise ValueError(f"Loop trip count and condition must be {CONDITION}, got {inputs[0]} and {inputs[1]}")
    if min(carried, scan_in, scan_out) < 0 or len(inputs) < 2 + carried + scan_in:
        raise ValueError(f"Loop has {len(inputs)} inputs, too few for {carried} carried and {scan_in} scan inputs")
    carried_types = inputs[2:2 + carried]
    sliced = []
    for t in inputs[2 + carried:2 + carried + scan_in]:
        if is_sequence(t) or len(t.shape) < 1:
            raise ValueError(f"Loop scan input {t} has no axis to scan")
        sliced.append(TensorType(t.dtype, t.shape[1:]))
    captures = inputs[2 + carried + scan_in:]
    _check_inputs("Loop body", body, [CONDITION, *carried_types, *sliced, *captures])
    outs = _types(body.outputs)
    if len(outs) != 1 + carried + scan_out or outs[0] != CONDITION:
        raise ValueError(f"Loop body must return [{CONDITION}, {carried} carried, {scan_out} scan outputs], "
                         f"got {[str(t) for t in outs]}")
    if outs[1:1 + carried] != carried_types:
        raise ValueError(f"Loop body changes the carried types {[str(t) for t in carried_types]} to "
                         f"{[str(t) for t in outs[1:1 + carried]]} (needs dynamic shapes)")
    if scan_out and isinstance(trips, int) and trips < 0:
        raise ValueError("Loop scan outputs need a trip count known at compile time")
    return [*carried_types, *(TensorType(t.dtype, (trips, *t.shape)) for t in outs[1 + carried:])]


FAIL = "Fail"


def _fail(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    """Fail: stops the call with `message` when it runs; `results` ([dtype, shape] each) are the
    types it stands in for (an If branch that cannot be imported, taken only at run time)."""
    return [TensorType(DType(dtype), tuple(shape)) for dtype, shape in attrs["results"]]


# --- numpy reference -------------------------------------------------------------------------------

def if_(inputs: list[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
    from iree_py.ir.reference import evaluate
    branch = attrs["then_branch"] if int(inputs[0]) != 0 else attrs["else_branch"]
    return evaluate(branch, inputs[1:])


def loop(inputs: list[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
    from iree_py.ir.reference import evaluate
    carried_n, scan_in_n, scan_out_n = attrs["carried"], attrs["scan_inputs"], attrs["scan_outputs"]
    trip_count, cond = int(inputs[0]), int(inputs[1])
    carried = list(inputs[2:2 + carried_n])
    scan_inputs = inputs[2 + carried_n:2 + carried_n + scan_in_n]
    captures = inputs[2 + carried_n + scan_in_n:]
    stacked: list[list[np.ndarray]] = [[] for _ in range(scan_out_n)]
    if scan_inputs:  # trips may be symbolic (a Scan over a symbolic length): the inputs bound the loop
        trip_count = min(trip_count, len(scan_inputs[0]))
    i = 0
    while i < trip_count and cond != 0:
        results = evaluate(attrs["body"], [np.array(i, np.int64), *carried, *(x[i] for x in scan_inputs), *captures])
        cond = int(results[0])
        carried = results[1:1 + carried_n]
        for out, value in zip(stacked, results[1 + carried_n:]):
            out.append(value)
        i += 1
    if scan_out_n and isinstance(attrs["trips"], int) and i != attrs["trips"]:
        raise ValueError(f"Loop ran {i} times but its scan outputs are sized for {attrs['trips']}")
    body_outputs = attrs["body"].outputs[1 + carried_n:]
    scans = [np.stack(out) if out else np.zeros((0, *v.type.shape), v.type.dtype.numpy)
             for out, v in zip(stacked, body_outputs)]
    return [*carried, *scans]


def fail(inputs: list[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
    raise ValueError(f"model check failed: {attrs['message']}")


OP_DEFS = [
    OpDef("If", ("else_branch", "result_shapes", "then_branch"), 1, None, _if, dtypes=frozenset({DType.i64})),
    OpDef(FAIL, ("message", "results"), 0, 0, _fail, dtypes=frozenset(DType)),
    OpDef("Loop", ("body", "carried", "scan_inputs", "scan_outputs", "trips"), 2, None, _loop,
          dtypes=frozenset({DType.i64})),
]
CONTROL_FLOW_OPS = frozenset(d.name for d in OP_DEFS)

KERNELS: dict[str, Kernel] = {"If": if_, "Loop": loop, "Fail": fail}
