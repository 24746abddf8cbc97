"""Lower If and Loop nodes to VM branches, in place in the enclosing function.

If:    c = load cond; cond_br c, then, else
       then: <then body>; copy its results into the node's results; br end
       else: <else body>; copy ...; end:
Loop:  copy the initial carried values into the node's carried results (the body reads and the
       loop leaves its state there); i = 0; trips = load trip count; c = load cond
       top:  cond_br (i < trips) & (c != 0), body, done
       body: store i in the iteration slot; view slice i of each scan input
             <body>; c = load the body's condition
             copy carried results back (through a temporary when a result is another carried
             input: a swap must not read a value it just overwrote); copy scan slice i out
             i += 1; br top
       done: (with scan outputs) check i == trips
Every body runs in the node's region of the arena (memory_plan.Region).
"""
from __future__ import annotations

from iree_py.ir.graph import Graph, Node, Value
from iree_py.vm.lowering import Lowerer
from iree_py.vm.memory_plan import MemoryPlanResult

# `check` code when a Loop with scan outputs stops before its planned trip count.
LOOP_ENDED_EARLY = 0x10F1


def emit_control_flow(lowerer: Lowerer, node: Node, plan: MemoryPlanResult) -> None:
    if node.op == "If":
        _emit_if(lowerer, node, plan)
    elif node.op == "Loop":
        _emit_loop(lowerer, node, plan)
    else:
        raise AssertionError(f"{node.op} is not a control-flow op")


def _load_scalar(lowerer: Lowerer, v: Value, plan: MemoryPlanResult) -> int:
    register = lowerer.new_int()
    lowerer.code.emit("buffer_load_i64", register, lowerer.ref_of(v, plan), lowerer.int_reg(0))
    return register


def _same_bytes(a: Value, a_plan: MemoryPlanResult, b: Value, b_plan: MemoryPlanResult) -> bool:
    (ra, oa), (rb, ob) = a_plan.locate(a), b_plan.locate(b)
    return ra is rb and oa == ob


def _emit_if(lowerer: Lowerer, node: Node, plan: MemoryPlanResult) -> None:
    code = lowerer.code
    region = plan.regions[id(node)]
    # Views of outer values are made before the branch, so both branches (and code after) see them.
    captures = [lowerer.ref_of(v, plan) for v in node.inputs[1:]]
    results = [lowerer.ref_of(v, plan) for v in node.outputs]
    cond = _load_scalar(lowerer, node.inputs[0], plan)
    then_label, else_label, end = code.label("then"), code.label("else"), code.label("end_if")
    code.emit("cond_br", cond, then_label, else_label)
    branches: list[tuple[Graph, MemoryPlanResult]] = [(node.attrs["then_branch"], region.bodies[0]),
                                                      (node.attrs["else_branch"], region.bodies[1])]
    for (body, body_plan), label in zip(branches, (then_label, else_label)):
        code.bind(label)
        with lowerer.scope():
            for v, register in zip(body.inputs, captures):
                lowerer.bind(v, register)
            lowerer.emit_graph(body, body_plan)
            for dst, v in zip(results, body.outputs):
                code.emit("buffer_copy", dst, lowerer.ref_of(v, body_plan))
        code.emit("br", end)
    code.bind(end)


def _emit_loop(lowerer: Lowerer, node: Node, plan: MemoryPlanResult) -> None:
    code = lowerer.code
    region = plan.regions[id(node)]
    body: Graph = node.attrs["body"]
    body_plan = region.bodies[0]
    n, s = node.attrs["carried"], node.attrs["scan_inputs"]
    init, scanned, captured = node.inputs[2:2 + n], node.inputs[2 + n:2 + n + s], node.inputs[2 + n + s:]
    state = [lowerer.ref_of(v, plan) for v in node.outputs[:n]]
    scan_results = [lowerer.ref_of(v, plan) for v in node.outputs[n:]]
    scanned_refs = [lowerer.ref_of(v, plan) for v in scanned]
    captures = [lowerer.ref_of(v, plan) for v in captured]
    for dst, v in zip(state, init):
        code.emit("buffer_copy", dst, lowerer.ref_of(v, plan))

    # Scratch: the iteration number, then one temporary per carried value.
    scratch = plan.base + region.storage.offset + region.scratch_offset
    iteration_slot = lowerer.new_ref()
    code.emit("buffer_arena", iteration_slot, scratch, 8)
    offset = scratch + region.scratch_slots[0]
    temps = []
    for size, v in zip(region.scratch_slots[1:], node.outputs[:n]):
        temps.append(lowerer.new_ref())
        code.emit("buffer_arena", temps[-1], offset, v.type.num_bytes)
        offset += size

    zero, one = lowerer.int_reg(0), lowerer.int_reg(1)
    i, trips, cond = lowerer.new_int(), _load_scalar(lowerer, node.inputs[0], plan), \
        _load_scalar(lowerer, node.inputs[1], plan)
    more, go = lowerer.new_int(), lowerer.new_int()
    code.emit("const_i64", i, 0)
    top, body_label, done = code.label("loop"), code.label("loop_body"), code.label("loop_done")
    code.bind(top)
    code.emit("cmp_lt_i64", more, i, trips)
    code.emit("cmp_ne_i64", go, cond, zero)
    code.emit("and_i64", go, go, more)
    code.emit("cond_br", go, body_label, done)
    code.bind(body_label)
    with lowerer.scope():
        code.emit("buffer_store_i64", iteration_slot, zero, i)
        slices = []
        for ref, v in zip(scanned_refs, scanned):
            slices.append(_slice_view(lowerer, ref, i, v.type.num_bytes // max(1, v.type.shape[0])))
        for v, register in zip(body.inputs, [iteration_slot, *state, *slices, *captures]):
            lowerer.bind(v, register)
        lowerer.emit_graph(body, body_plan)
        code.emit("buffer_load_i64", cond, lowerer.ref_of(body.outputs[0], body_plan), zero)
        _copy_carried(lowerer, body, body_plan, state, temps, n)
        for dst, v in zip(scan_results, body.outputs[1 + n:]):
            code.emit("buffer_copy", _slice_view(lowerer, dst, i, v.type.num_bytes), lowerer.ref_of(v, body_plan))
    code.emit("add_i64", i, i, one)
    code.emit("br", top)
    code.bind(done)
    if scan_results:
        ok = lowerer.new_int()
        code.emit("cmp_eq_i64", ok, i, lowerer.int_reg(node.attrs["trips"]))
        code.emit("check", ok, LOOP_ENDED_EARLY)


def _slice_view(lowerer: Lowerer, buffer: int, i: int, stride: int) -> int:
    """A view of bytes [i * stride, (i + 1) * stride) of ref register `buffer`."""
    offset, view = lowerer.new_int(), lowerer.new_ref()
    lowerer.code.emit("mul_i64", offset, i, lowerer.int_reg(stride))
    lowerer.code.emit("buffer_subview", view, buffer, offset, lowerer.int_reg(stride))
    return view


def _copy_carried(lowerer: Lowerer, body: Graph, body_plan: MemoryPlanResult, state: list[int],
                  temps: list[int], n: int) -> None:
    code = lowerer.code
    carried_inputs = body.inputs[1:1 + n]
    results = body.outputs[1:1 + n]
    through_temp = []
    direct = []
    for k, v in enumerate(results):
        root, _ = body_plan.locate(v)
        if _same_bytes(v, body_plan, carried_inputs[k], body_plan):
            continue  # passed through unchanged: already in place
        if any(root is c for c in carried_inputs):
            through_temp.append(k)
        else:
            direct.append(k)
    for k in through_temp:
        code.emit("buffer_copy", temps[k], lowerer.ref_of(results[k], body_plan))
    for k in direct:
        code.emit("buffer_copy", state[k], lowerer.ref_of(results[k], body_plan))
    for k in through_temp:
        code.emit("buffer_copy", state[k], temps[k])
