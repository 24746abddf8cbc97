"""ONNX If, Loop and Scan -> the IR's If and Loop (iree_py/ir/ops/control_flow.py).

Each body is imported into its own context whose lookups fall back to the enclosing one; an outer
value a body reads becomes a capture (a trailing node input and body input). Conditions and trip
counts become i64 scalars. Scan becomes a Loop over slices of its scan inputs: inputs scanned along
another axis are transposed first, reversed ones are reversed first, and the stacked outputs are
reversed / transposed back after. Symbolic shapes (docs/control_flow.md, "Symbolic shapes"): scan
outputs of a run-time trip count are counted in a fresh symbol, a carried value whose body result
differs in one symbolic dim is reshaped back (checked at run time), If branches of different shapes
give fresh symbols for the dims they disagree on (`result_shapes`).

ONNX Scan at opset 8 (batch axis 0, scan axis 1, optional sequence_lens) -> one IR Loop per batch element.

Each batch element b becomes an opset-9-style scan (the same body, converted once per element) of
its slices `init_i[b]` and `scan_j[b]`; the final states and scan outputs are stacked back along the
batch axis. A constant sequence_lens scans only `sequence_lens[b]` steps of element b; its scan
outputs are padded with zeros to the maximum sequence length (ONNX leaves those positions undefined;
onnxruntime writes zeros). Refused at compile time: a batch size known only at run time, a
sequence_lens read at run time, a length outside 1..max, and a reverse scan of a shortened sequence
(ONNX does not say where such a scan starts).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from iree_py.errors import CompileError
from iree_py.frontends.onnx.compose import Converter, reshape, shape_of, transpose
from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.ops import infer_types
from iree_py.ir.ops.control_flow import FAIL
from iree_py.ir.ops.sequences import join
from iree_py.ir.symbols import Expr
from iree_py.ir.types import DType, TensorType, is_sequence

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


NO_TRIP_LIMIT = np.iinfo(np.int64).max


def _scalar_i64(ctx: "OnnxContext", v: Value, what: str) -> Value:
    """A one-element condition or count as the i64[] the control-flow ops take."""
    if v.type.num_elements != 1:
        raise ctx.error(f"{what} must hold one element, got {v.type}")
    if v.type.dtype != DType.i64:
        v = ctx.emit("Cast", [v], {"to": DType.i64.value}, hint=f"{ctx.node_name}_{what.replace(' ', '_')}")
    return reshape(ctx, v, ())


def _declared_shape(vi: onnx.ValueInfoProto, default: tuple[int, ...]) -> tuple[int, ...]:
    dims = vi.type.tensor_type.shape.dim if vi.type.HasField("tensor_type") else []
    if vi.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims):
        return tuple(int(d.dim_value) for d in dims)
    return default


def _open_body(ctx: "OnnxContext", proto: onnx.GraphProto) -> "OnnxContext":
    from iree_py.frontends.onnx.importer import OnnxContext, constant_value, names_used
    child = OnnxContext(ctx.opset, ctx.source, ctx.names, names_used(proto))
    child.parent = ctx
    for t in proto.initializer:
        child.env[t.name] = constant_value(t, ctx.source)
    return child


def _convert_body(ctx: "OnnxContext", child: "OnnxContext", proto: onnx.GraphProto) -> list[Value]:
    """Convert the body's nodes; its outputs as values of `child` (possibly captures or constants)."""
    from iree_py.frontends.onnx.importer import convert_nodes
    convert_nodes(child, proto.node, prefix=f"{ctx.node_name}/{proto.name or 'body'}/")
    outputs = []
    for o in proto.output:
        value = child.lookup(o.name)
        if value is None:
            raise ctx.error(f"body '{proto.name}' output '{o.name}' is not computed by any node")
        outputs.append(value)
    child.node, child.node_name = ctx.node, ctx.node_name  # body-level emits below name the outer node
    return outputs


def _close_body(proto: onnx.GraphProto, child: "OnnxContext", formals: list[Value], outputs: list[Value],
                captures: list[Value]) -> Graph:
    """The body graph with inputs [*formals, one per outer value in `captures`]."""
    inner_of = {id(outer): inner for outer, inner in child.captures}
    extra = [inner_of.get(id(outer)) or Value(outer.name, outer.type) for outer in captures]
    names = [o.name for o in proto.output] + [f"cond_{len(outputs)}"] * (len(outputs) - len(proto.output))
    body = Graph(proto.name or "body", [*formals, *extra], outputs, list(child.graph_nodes), names[:len(outputs)])
    body.symbol_sources = dict(child.symbol_sources)  # symbols the body reads from its own tensors
    return body


def _union_captures(*children: "OnnxContext") -> list[Value]:
    seen: dict[int, Value] = {}
    for child in children:
        for outer, _ in child.captures:
            seen.setdefault(id(outer), outer)
    return list(seen.values())


def _append(ctx: "OnnxContext", op: str, inputs: list[Value], attrs: dict[str, Any],
            names: list[str]) -> list[Value]:
    """A multi-result node appended as is (control flow is never folded at import)."""
    try:
        types = infer_types(op, [v.type for v in inputs], attrs)
    except ValueError as e:
        raise ctx.error(str(e)) from None
    node = Node(op, list(inputs), [], attrs, ctx.node_name)
    node.outputs = [Value(name or ctx.names.fresh(f"{ctx.node_name}_{i}"), t, producer=node)
                    for i, (name, t) in enumerate(zip(names, types))]
    ctx.graph_nodes.append(node)
    return node.outputs


def if_(ctx: "OnnxContext") -> list[Value]:
    cond = ctx.input(0)
    then_proto, else_proto = ctx.attr("then_branch"), ctx.attr("else_branch")
    if cond.is_const:  # decided at compile time: import the taken branch inline
        from iree_py.frontends.onnx.importer import convert_nodes
        taken = then_proto if bool(np.asarray(cond.const).reshape(-1)[0]) else else_proto
        node, name = ctx.node, ctx.node_name
        convert_nodes(ctx, taken.node, prefix=f"{name}/{taken.name or 'branch'}/")
        ctx.node, ctx.node_name = node, name
        return [ctx.lookup(o.name) for o in taken.output]
    cond = _scalar_i64(ctx, cond, "If condition")
    then_ctx, else_ctx = _open_body(ctx, then_proto), _open_body(ctx, else_proto)
    then_out, then_error = _try_body(ctx, then_ctx, then_proto)
    else_out, else_error = _try_body(ctx, else_ctx, else_proto)
    if then_error and else_error:
        raise then_error
    # A branch that cannot be imported may be one no input ever takes (silero-vad's 8 kHz branch
    # at a 16 kHz window size): as onnxruntime evaluates only the branch taken, it fails at run
    # time, with the import's message, when it is taken.
    if then_error:
        then_out = _failing_body(ctx, then_ctx, then_error, else_out)
    if else_error:
        else_out = _failing_body(ctx, else_ctx, else_error, then_out)
    if len(then_out) != len(else_out):
        raise ctx.error(f"then_branch returns {len(then_out)} values, else_branch {len(else_out)}")
    _join_sequences(ctx, then_ctx, else_ctx, then_out, else_out)
    _check_ranks_agree(ctx, then_out, else_out)
    captures = _union_captures(then_ctx, else_ctx)
    attrs = {"then_branch": _close_body(then_proto, then_ctx, [], then_out, captures),
             "else_branch": _close_body(else_proto, else_ctx, [], else_out, captures),
             "result_shapes": _result_shapes(ctx, then_out, else_out)}
    return _append(ctx, "If", [cond, *captures], attrs, list(ctx.node.output))


def _check_ranks_agree(ctx: "OnnxContext", then_out: list[Value], else_out: list[Value]) -> None:
    """Every value has one rank in iree-py; TorchScript's rank-polymorphic Ifs (a Squeeze only
    when a dim is 1) need the dims that decide the condition fixed."""
    for k, (a, b) in enumerate(zip(then_out, else_out)):
        if is_sequence(a.type) or is_sequence(b.type) or a.type.rank == b.type.rank:
            continue
        symbols = sorted({s for t in (a.type, b.type) for d in t.shape if isinstance(d, Expr) for s in d.symbols})
        fix = (f"; its condition depends on the dims {', '.join(symbols)}: give them values (compile --dim "
               f"NAME=VALUE, or dims= in iree_py.compile) so it is decided at compile time") if symbols else ""
        raise ctx.error(f"result {k} has rank {a.type.rank} ({a.type}) in then_branch and {b.type.rank} ({b.type}) "
                        f"in else_branch: iree-py gives each value one rank{fix}")


def _try_body(ctx: "OnnxContext", child: "OnnxContext", proto: onnx.GraphProto) -> tuple[list[Value], CompileError | None]:
    try:
        return _convert_body(ctx, child, proto), None
    except CompileError as err:
        return [], err


def _failing_body(ctx: "OnnxContext", child: "OnnxContext", error: CompileError, like: list[Value]) -> list[Value]:
    """The branch as one Fail node with results typed like the other branch's (`like`)."""
    if any(is_sequence(v.type) for v in like):
        raise error
    child.graph_nodes.clear()
    child.captures.clear()
    child.symbol_sources.clear()
    child.node, child.node_name = ctx.node, ctx.node_name
    message = f"node '{ctx.node_name}' (op If) took a branch iree-py could not compile: {error}"
    results = [[v.type.dtype.value, list(v.type.shape)] for v in like]
    return _append(child, FAIL, [], {"message": message, "results": results}, [""] * len(like))


def _join_sequences(ctx: "OnnxContext", then_ctx: "OnnxContext", else_ctx: "OnnxContext",
                    then_out: list[Value], else_out: list[Value]) -> None:
    """Sequence results whose branches give different sequence types (element rank, optional or
    not) are retyped in both branches to the type holding both (ops_sequence.join)."""
    from iree_py.frontends.onnx.sequences import retype
    for k, (a, b) in enumerate(zip(then_out, else_out)):
        if is_sequence(a.type) != is_sequence(b.type):
            raise ctx.error(f"result {k}: one branch gives {a.type}, the other {b.type}")
        if not is_sequence(a.type) or a.type == b.type:
            continue
        try:
            joined = join(a.type, b.type, f"result {k}")
        except ValueError as e:
            raise ctx.error(str(e)) from None
        then_out[k] = retype(then_ctx, a, joined, f"{ctx.node_name}_then_{k}")
        else_out[k] = retype(else_ctx, b, joined, f"{ctx.node_name}_else_{k}")


def _result_shapes(ctx: "OnnxContext", then_out: list[Value], else_out: list[Value]) -> list[tuple] | None:
    """None when both branches give the same types; else each result's shape, with a fresh symbol
    (set at run time by the branch taken) for every dim where the branches differ."""
    from iree_py.frontends.onnx.symbolic import _fresh_symbol
    if [v.type for v in then_out] == [v.type for v in else_out]:
        return None
    shapes = []
    for k, (a, b) in enumerate(zip(then_out, else_out)):
        if is_sequence(a.type):
            shapes.append(None)  # same sequence type in both (_join_sequences)
            continue
        shape = []
        for axis, (x, y) in enumerate(zip(a.type.shape, b.type.shape)):
            if x == y:
                shape.append(x)
                continue
            shape.append(Expr.of(_fresh_symbol(ctx, f"{ctx.node_name}_{k}_d{axis}")))
        shapes.append(tuple(shape))
    return shapes


def loop(ctx: "OnnxContext") -> list[Value]:
    node = ctx.node
    proto: onnx.GraphProto = ctx.attr("body")
    carried_init = [ctx.input(i) for i in range(2, len(node.input))]
    n = len(carried_init)
    if len(proto.input) != 2 + n:
        raise ctx.error(f"body takes {len(proto.input)} inputs, expected 2 + {n} carried")
    scans = len(proto.output) - 1 - n
    if scans < 0:
        raise ctx.error(f"body returns {len(proto.output)} values, expected at least 1 + {n}")
    trip = _scalar_i64(ctx, ctx.input(0), "trip count") if ctx.has_input(0) else \
        ctx.const(np.array(NO_TRIP_LIMIT, np.int64), f"{ctx.node_name}_no_trip_limit")
    cond = _scalar_i64(ctx, ctx.input(1), "condition") if ctx.has_input(1) else \
        ctx.const(np.array(1, np.int64), f"{ctx.node_name}_always")
    trips: int | Expr = -1
    if scans:
        if not trip.is_const:  # run-time trip count: the scan outputs' length is a symbol (see _iterations)
            trips = _iterations(ctx)
        elif int(trip.const) == NO_TRIP_LIMIT:
            raise ctx.error("scan outputs of a Loop with no trip count (only a condition) are not supported: "
                            "their storage is sized from the trip count before the loop runs")
        else:
            trips = int(trip.const) if not cond.is_const or int(cond.const) else 0

    types = [v.type for v in carried_init]
    child, iteration, carried, outputs = _loop_body(ctx, proto, types)
    for _ in range(2 * n):  # a carried sequence changes element rank or becomes optional: import again
        widened = _widen_carried(ctx, types, outputs[1:1 + n])
        if widened == types:
            break
        types = widened
        child, iteration, carried, outputs = _loop_body(ctx, proto, types)
    carried_init = [_retype_init(ctx, v, t) for v, t in zip(carried_init, types)]
    outputs[0] = _scalar_i64(child, outputs[0], "body condition")
    for k, v in enumerate(carried):
        outputs[1 + k] = _as_carried(child, outputs[1 + k], v.type, proto.output[1 + k].name)
    for k in range(1 + n, len(outputs)):  # a scan slice declared static: held to it (checked at run time)
        if is_sequence(outputs[k].type):
            raise ctx.error(f"scan output '{proto.output[k].name}' is a {outputs[k].type}; scan outputs are tensors")
        declared = _declared_shape(proto.output[k], ())
        if declared or not outputs[k].type.shape:
            slice_type = TensorType(outputs[k].type.dtype, declared)
            outputs[k] = _as_carried(child, outputs[k], slice_type, proto.output[k].name)
    captures = _union_captures(child)
    body = _close_body(proto, child, [iteration, *carried], outputs, captures)
    attrs = {"body": body, "carried": n, "scan_inputs": 0, "scan_outputs": scans, "trips": trips}
    return _append(ctx, "Loop", [trip, cond, *carried_init, *captures], attrs, list(node.output))


def _loop_body(ctx: "OnnxContext", proto: onnx.GraphProto, types: list) -> tuple:
    """Import a Loop body with carried values of `types`: (context, iteration, carried, outputs)."""
    node = ctx.node
    child = _open_body(ctx, proto)
    iteration = Value(ctx.names.fresh(proto.input[0].name or "iteration"), TensorType(DType.i64, ()))
    carried = [Value(ctx.names.fresh(vi.name or f"carried_{i}"), t) for i, (vi, t) in enumerate(zip(proto.input[2:], types))]
    child.node, child.node_name = node, ctx.node_name
    child.env[proto.input[0].name] = reshape(child, iteration, _declared_shape(proto.input[0], ()))
    # The condition a body reads is always true: iteration i runs only when it was.
    child.env[proto.input[1].name] = child.const(np.ones(_declared_shape(proto.input[1], ()), np.bool_),
                                                 f"{ctx.node_name}_cond_in")
    for vi, v in zip(proto.input[2:], carried):
        child.env[vi.name] = v
    return child, iteration, carried, _convert_body(ctx, child, proto)


def _widen_carried(ctx: "OnnxContext", types: list, results: list[Value]) -> list:
    """Carried sequence types joined with the body's results for them (ops_sequence.join)."""
    widened = []
    for k, (t, v) in enumerate(zip(types, results)):
        if is_sequence(t) != is_sequence(v.type):
            raise ctx.error(f"carried value {k} is {t} but the body returns {v.type}")
        if is_sequence(t) and t != v.type:
            try:
                t = join(t, v.type, f"carried value {k}")
            except ValueError as e:
                raise ctx.error(str(e)) from None
        widened.append(t)
    return widened


def _retype_init(ctx: "OnnxContext", v: Value, t) -> Value:
    from iree_py.frontends.onnx.sequences import retype
    return retype(ctx, v, t, f"{ctx.node_name}_{v.name}_init") if is_sequence(t) else v


def _iterations(ctx: "OnnxContext") -> Expr:
    """The symbol for the number of iterations a Loop with a run-time trip count runs: its scan
    outputs' leading dim. The lowering allocates them for the trip count before the loop and sets
    the symbol to the iterations actually run after it (vm/control_flow.py)."""
    from iree_py.frontends.onnx.symbolic import _fresh_symbol
    name = _fresh_symbol(ctx, f"{ctx.node_name}_iterations")
    return Expr.of(name)


def _as_carried(ctx: "OnnxContext", v: Value, carried: TensorType, name: str) -> Value:
    """A carried result whose shape is only known at run time to be the carried value's (one dim
    differs, and symbolically): a Reshape to the carried type, whose element count is checked at
    run time. Any other change of type is refused by the Loop's shape rule. A sequence result is
    retyped to the carried (joined) sequence type."""
    if is_sequence(carried) and is_sequence(v.type):
        from iree_py.frontends.onnx.sequences import retype
        return retype(ctx, v, carried, f"{name}_carried")
    if is_sequence(carried) or is_sequence(v.type) or v.type == carried or v.type.dtype != carried.dtype or len(v.type.shape) != len(carried.shape):
        return v
    differ = [a for a, (x, y) in enumerate(zip(v.type.shape, carried.shape)) if x != y]
    if len(differ) != 1:
        raise ctx.error(f"body output '{name}' is {v.type} but its carried value is {carried}: a carried value "
                        f"must keep its shape")
    return reshape(ctx, v, carried.shape)


def _axes(ctx: "OnnxContext", name: str, count: int, ranks: list[int]) -> list[int]:
    values = ctx.attr(name) or [0] * count
    if len(values) != count:
        raise ctx.error(f"{name} has {len(values)} entries, expected {count}")
    result = []
    for axis, rank in zip(values, ranks):
        if not -rank <= axis < rank:
            raise ctx.bad_attr(name, values, f"axis out of range for rank {rank}")
        result.append(axis % rank)
    return result


def _reverse_axis0(ctx: "OnnxContext", v: Value, out: int | None = None) -> Value:
    shape = shape_of(v)
    attrs = {"starts": [shape[0] - 1, *([0] * (len(shape) - 1))], "ends": [-1, *shape[1:]],
             "steps": [-1, *([1] * (len(shape) - 1))]}
    return ctx.emit("Slice", [v], attrs, out=out)


def _scan_loop(ctx: "OnnxContext", proto: onnx.GraphProto, states: list[Value], prepared: list[Value], trips: object,
               scan_inputs: int, prefix: str, state_names: list[str]) -> tuple[list[Value], int]:
    """A Loop running the Scan body `proto` over the axis-0 slices of `prepared` (the scan inputs,
    already moved and reversed), carrying `states`: its results (the final states, named
    `state_names`, then the stacked scan outputs) and the number of scan outputs. Scan (opset 9+)
    and each batch element of a Scan-8 share it."""
    n = len(states)
    child = _open_body(ctx, proto)
    iteration = Value(ctx.names.fresh(f"{prefix}_iteration"), TensorType(DType.i64, ()))
    formals = [Value(ctx.names.fresh(vi.name or f"state_{i}"), v.type) for i, (vi, v) in enumerate(zip(proto.input, states))]
    formals += [Value(ctx.names.fresh(vi.name or f"slice_{i}"), TensorType(v.type.dtype, v.type.shape[1:]))
                for i, (vi, v) in enumerate(zip(proto.input[n:], prepared))]
    for vi, v in zip(proto.input, formals):
        child.env[vi.name] = v
    outputs = _convert_body(ctx, child, proto)
    k = len(outputs) - n
    captures = _union_captures(child)
    always = child.const(np.array(1, np.int64), f"{prefix}_always")
    body = _close_body(proto, child, [iteration, *formals], [always, *outputs], captures)
    attrs = {"body": body, "carried": n, "scan_inputs": scan_inputs, "scan_outputs": k, "trips": trips}
    # A symbolic length: no tensor holds it; the lowering bounds the loop by the scan inputs' length.
    trip = ctx.const(np.array(trips if isinstance(trips, int) else NO_TRIP_LIMIT, np.int64), f"{prefix}_trips")
    return _append(ctx, "Loop", [trip, always, *states, *prepared, *captures], attrs, [*state_names, *([""] * k)]), k


def scan(ctx: "OnnxContext") -> list[Value]:
    if ctx.opset < 9:
        raise ctx.error("Scan before opset 9 (batch axis and sequence_lens) is not supported")
    node = ctx.node
    proto: onnx.GraphProto = ctx.attr("body")
    m = int(ctx.attr("num_scan_inputs"))
    values = ctx.inputs()
    n = len(values) - m
    if n < 0 or len(proto.input) != n + m:
        raise ctx.error(f"body takes {len(proto.input)} inputs for {n} states and {m} scan inputs")
    states, scanned = values[:n], values[n:]
    in_axes = _axes(ctx, "scan_input_axes", m, [len(v.type.shape) for v in scanned])
    in_dirs = ctx.attr("scan_input_directions") or [0] * m
    prepared = []
    for v, axis, direction in zip(scanned, in_axes, in_dirs):
        rank = len(v.type.shape)
        v = transpose(ctx, v, [axis, *(a for a in range(rank) if a != axis)])
        prepared.append(_reverse_axis0(ctx, v) if direction else v)
    lengths = {shape_of(v)[0] for v in prepared}
    if len(lengths) > 1:
        raise ctx.error(f"scan inputs have different lengths {sorted(lengths)}")
    trips = lengths.pop() if lengths else 0
    results, k = _scan_loop(ctx, proto, states, prepared, trips, m, ctx.node_name, list(node.output[:n]))
    out_axes = _axes(ctx, "scan_output_axes", k, [len(v.type.shape) for v in results[n:]])
    out_dirs = ctx.attr("scan_output_directions") or [0] * k
    finals = list(results[:n])
    for v, axis, direction in zip(results[n:], out_axes, out_dirs):
        if direction:
            v = _reverse_axis0(ctx, v)
        rank = len(v.type.shape)
        finals.append(transpose(ctx, v, [*range(1, axis + 1), 0, *range(axis + 1, rank)]))
    return finals


# --- Scan at opset 8 -------------------------------------------------------------------------------

def _element(ctx: "OnnxContext", v: Value, b: int, length: object, hint: str) -> Value:
    """`v[b, :length]` (or `v[b]` for a state, length None) without its batch axis."""
    shape = shape_of(v)
    ends = [b + 1, *shape[1:]]
    if length is not None:
        ends[1] = length
    attrs = {"starts": [b, *([0] * (len(shape) - 1))], "ends": ends, "steps": [1] * len(shape)}
    sliced = ctx.emit("Slice", [v], attrs, hint=hint)
    return reshape(ctx, sliced, tuple(shape_of(sliced)[1:]))


def _scan_element(ctx: "OnnxContext", proto: onnx.GraphProto, states: list[Value], scanned: list[Value],
                  directions: list[int], b: int) -> list[Value]:
    """One batch element's scan as a Loop: its final states, then its scan outputs (length first)."""
    n = len(states)
    prepared = [_reverse_axis0(ctx, v) if d else v for v, d in zip(scanned, directions)]
    trips = shape_of(prepared[0])[0] if prepared else 0
    return _scan_loop(ctx, proto, states, prepared, trips, len(prepared), f"{ctx.node_name}_b{b}", [""] * n)[0]


def _lengths(ctx: "OnnxContext", batch: int, max_len: object, directions: list[int]) -> list[object]:
    if not ctx.has_input(0):
        return [max_len] * batch
    lens_value = ctx.input(0)
    if not lens_value.is_const:
        raise ctx.error("sequence_lens computed at run time is not supported (give it as a constant or initializer)")
    lens = np.asarray(lens_value.const).reshape(-1).astype(np.int64)
    if lens.size != batch:
        raise ctx.error(f"sequence_lens has {lens.size} entries but the batch size is {batch}")
    if not isinstance(max_len, int):
        if not lens.size:
            return []
        raise ctx.error("sequence_lens with a scan length known only at run time is not supported")
    for b, length in enumerate(lens):
        if not 1 <= length <= max_len:
            raise ctx.error(f"sequence_lens[{b}] = {length} is outside 1..{max_len} (the maximum sequence length)")
        if length < max_len and any(directions):
            raise ctx.error(f"sequence_lens[{b}] = {length} is shorter than the maximum {max_len} with a reverse "
                            f"direction: where such a scan starts is not defined")
    return [int(x) for x in lens]


def _pad(ctx: "OnnxContext", v: Value, max_len: object) -> Value:
    shape = shape_of(v)
    if shape[0] == max_len:
        return v
    zeros = ctx.const(np.zeros((int(max_len) - int(shape[0]), *shape[1:]), v.type.dtype.numpy),
                      f"{ctx.node_name}_pad")
    return ctx.emit("Concat", [v, zeros], {"axis": 0})


def scan8(ctx: "OnnxContext") -> list[Value]:
    if ctx.opset >= 9:
        return scan(ctx)
    node = ctx.node
    proto: onnx.GraphProto = ctx.attr("body")
    m = int(ctx.attr("num_scan_inputs"))
    values = [ctx.input(i) if ctx.has_input(i) else None for i in range(1, len(node.input))]
    if any(v is None for v in values):
        raise ctx.error("an initial state or scan input is missing (empty input name)")
    n = len(values) - m
    if n < 0 or len(proto.input) != n + m:
        raise ctx.error(f"body takes {len(proto.input)} inputs for {n} states and {m} scan inputs")
    if m == 0:
        raise ctx.error("Scan-8 with no scan inputs is not supported (its batch size is undefined)")
    states, scanned = values[:n], values[n:]
    directions = [int(d) for d in (ctx.attr("directions") or [0] * m)]
    if len(directions) != m:
        raise ctx.bad_attr("directions", directions, f"expected {m} entries")
    for v in [*states, *scanned]:
        if v.type.rank < 1 or not isinstance(shape_of(v)[0], int):
            raise ctx.error(f"input '{v.name}' {v.type}: Scan-8 needs a batch axis 0 of a size known at compile time")
    for v in scanned:
        if v.type.rank < 2:
            raise ctx.error(f"scan input '{v.name}' {v.type} has no sequence axis 1")
    batches = {shape_of(v)[0] for v in [*states, *scanned]}
    if len(batches) > 1:
        raise ctx.error(f"initial states and scan inputs have different batch sizes {sorted(batches)}")
    seqs = {shape_of(v)[1] for v in scanned}
    if len(seqs) > 1:
        raise ctx.error(f"scan inputs have different maximum sequence lengths {sorted(map(str, seqs))}")
    batch, max_len = batches.pop(), seqs.pop()
    lengths = _lengths(ctx, batch, max_len, directions)
    if batch == 0:
        raise ctx.error("Scan-8 with batch size 0 is not supported")

    per_batch: list[list[Value]] = []
    for b in range(batch):
        elem_states = [_element(ctx, v, b, None, f"{ctx.node_name}_b{b}_state") for v in states]
        elem_scans = [_element(ctx, v, b, lengths[b], f"{ctx.node_name}_b{b}_scan") for v in scanned]
        results = _scan_element(ctx, proto, elem_states, elem_scans, directions, b)
        per_batch.append([*results[:n], *(_pad(ctx, v, max_len) for v in results[n:])])

    finals = []
    for i in range(len(per_batch[0])):
        parts = [reshape(ctx, r[i], (1, *shape_of(r[i]))) for r in per_batch]
        stacked = parts[0] if len(parts) == 1 else ctx.emit("Concat", parts, {"axis": 0})
        finals.append(stacked)
    return finals


CONVERTERS: dict[str, Converter] = {"If": if_, "Loop": loop, "Scan": scan8}  # scan8: opset 8, else scan
