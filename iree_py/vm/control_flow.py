"""Lower If and Loop nodes to VM branches, in place in the enclosing function.

If:    c = load cond; cond_br c, then, else
       then: <then body>; copy its results into the node's results; br end
       else: <else body>; copy ...; end:
Loop:  copy the initial carried values into the node's carried results (the body reads and the
       loop leaves its state there); i = 0; trips = load trip count; c = load cond
       top:  cond_br (i < trips) & (c != 0), body, done
       body: store i in the iteration slot; view slice i of each scan input
             <body>; c = load the body's condition
             copy scan slice i out (first: a scan output may be a carried input); copy carried
             results back (through a temporary when a result is another carried input: a swap must
             not read a value it just overwrote)
             i += 1; br top
       done: (with scan outputs) check i == trips
Every body runs in the node's region of the arena (memory_plan.Region).

Symbolic shapes: a body's pool storages are allocated and freed inside the body, each time it
runs (its results after they are copied out). A Loop whose `trips` is a symbol no earlier code
defines (ONNX Loop scan outputs with a run-time trip count) allocates its scan outputs from the
pool for max(trip count, 0) iterations before the loop, and sets the symbol to the iterations
actually run after it: the outputs are views of that length (a condition may stop it early).
"""
from __future__ import annotations

from iree_py.errors import CompileError
from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.ops.control_flow import branch_symbols
from iree_py.ir.symbols import Expr
from iree_py.ir.types import TensorType, is_sequence
from iree_py.vm.lowering import Lowerer
from iree_py.vm.memory_plan import MemoryPlanResult
from iree_py.vm.sequences import copy_block, move_into, produced_in

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
    branches: list[tuple[Graph, MemoryPlanResult]] = [(node.attrs["then_branch"], region.bodies[0]),
                                                      (node.attrs["else_branch"], region.bodies[1])]
    set_dims = _branch_set_dims(lowerer, node, plan)  # results the branch taken sizes and allocates
    lowerer.allocate(node, plan)
    sequences = {k: lowerer.new_ref() for k, v in enumerate(node.outputs) if is_sequence(v.type)}
    results = [None if k in set_dims or k in sequences else lowerer.ref_of(v, plan) for k, v in enumerate(node.outputs)]
    cond = _load_scalar(lowerer, node.inputs[0], plan)
    then_label, else_label, end = code.label("then"), code.label("else"), code.label("end_if")
    code.emit("cond_br", cond, then_label, else_label)
    for (body, body_plan), label in zip(branches, (then_label, else_label)):
        code.bind(label)
        with lowerer.scope():
            for v, register in zip(body.inputs, captures):
                lowerer.bind(v, register)
            _emit_body(lowerer, body, body_plan)
            moved: set[int] = set()
            for k, (dst, v) in enumerate(zip(results, body.outputs)):
                if k in sequences:  # the branch's block becomes the result's (a copy if not the branch's own)
                    owned = produced_in(body, v) and id(v) not in moved
                    move_into(lowerer, sequences[k], lowerer.ref_of(v, body_plan), owned)
                    moved.add(id(v))
                    continue
                if dst is None:
                    dst = _set_result(lowerer, node.outputs[k], v, set_dims[k], plan)
                code.emit("buffer_copy", dst, lowerer.ref_of(v, body_plan))
            _free_results(lowerer, body, body_plan)
        code.emit("br", end)
    code.bind(end)
    for k, register in sequences.items():
        lowerer.seq_refs[id(node.outputs[k])] = register


def _branch_set_dims(lowerer: Lowerer, node: Node, plan: MemoryPlanResult) -> dict[int, list[tuple[int, str]]]:
    """Result index -> (axis, symbol) of the dims the branch taken sets (If with result_shapes).
    Each symbol gets a register now, each such result a pool block register (assigned in the branches)."""
    shapes = node.attrs["result_shapes"]
    if shapes is None:
        return {}
    then_graph, else_graph = node.attrs["then_branch"], node.attrs["else_branch"]
    found: dict[int, list[tuple[int, str]]] = {}
    for k, v in enumerate(node.outputs):
        dims = branch_symbols(v.type, then_graph.outputs[k].type, else_graph.outputs[k].type)
        if not dims:
            continue
        storage = plan.storage(v)
        if storage is None or not storage.pool:
            raise AssertionError(f"If result {v.name} ({v.type}) set by its branches must be a pool storage")
        found[k] = dims
        for _, name in dims:
            lowerer.symbol_regs[name] = lowerer.new_int()
        lowerer.pool_refs[id(storage)] = lowerer.new_ref()
    return found


def _set_result(lowerer: Lowerer, result: Value, branch_value: Value, dims: list[tuple[int, str]],
                plan: MemoryPlanResult) -> int:
    """In a branch: set the result's symbols from the branch's dims and allocate the result."""
    for axis, name in dims:
        lowerer.code.emit("add_i64", lowerer.symbol_regs[name], lowerer.dim_reg(branch_value.type.shape[axis]),
                          lowerer.int_reg(0))
    storage = plan.storage(result)
    assert storage is not None
    lowerer.code.emit("buffer_alloc", lowerer.pool_refs[id(storage)], lowerer.dim_reg(storage.length))
    return lowerer.ref_of(result, plan)


def _emit_loop(lowerer: Lowerer, node: Node, plan: MemoryPlanResult) -> None:
    code = lowerer.code
    region = plan.regions[id(node)]
    body: Graph = node.attrs["body"]
    body_plan = region.bodies[0]
    n, s = node.attrs["carried"], node.attrs["scan_inputs"]
    init, scanned, captured = node.inputs[2:2 + n], node.inputs[2 + n:2 + n + s], node.inputs[2 + n + s:]
    trips_attr = node.attrs["trips"]
    counted = _counted_symbol(lowerer, trips_attr)  # the symbol the loop defines, if any
    trips: int | None = None
    if counted is not None:
        trips, capacity = _load_scalar(lowerer, node.inputs[0], plan), lowerer.new_int()
        code.emit("max_i64", capacity, trips, lowerer.int_reg(0))
        _allocate_scan_outputs(lowerer, node, plan, capacity)
    lowerer.allocate(node, plan)
    state = []
    for v in node.outputs[:n]:  # a carried sequence: a register whose block the loop replaces each iteration
        state.append(lowerer.new_ref() if is_sequence(v.type) else lowerer.ref_of(v, plan))
        if is_sequence(v.type):
            lowerer.seq_refs[id(v)] = state[-1]
    if counted is not None:
        scan_results = [lowerer.pool_refs[id(plan.storage(v))] for v in node.outputs[n:]]
    else:
        scan_results = [lowerer.ref_of(v, plan) for v in node.outputs[n:]]
    scanned_refs = [lowerer.ref_of(v, plan) for v in scanned]
    captures = [lowerer.ref_of(v, plan) for v in captured]
    for dst, v in zip(state, init):
        if is_sequence(v.type):
            move_into(lowerer, dst, lowerer.ref_of(v, plan), owned=False)
        else:
            code.emit("buffer_copy", dst, lowerer.ref_of(v, plan))

    # Scratch: the iteration number, then one temporary per carried value.
    scratch = plan.base + region.storage.offset + region.scratch_offset
    iteration_slot = lowerer.new_ref()
    code.emit("buffer_arena", iteration_slot, scratch, 8)
    offset = scratch + region.scratch_slots[0]
    temps, pool_temps = [], []
    for size, v in zip(region.scratch_slots[1:], node.outputs[:n]):
        temps.append(lowerer.new_ref())
        if is_sequence(v.type):
            continue  # (no temporary: _copy_carried moves blocks)
        if v.type.is_static:
            code.emit("buffer_arena", temps[-1], offset, v.type.num_bytes)
        elif size == 0:  # no bound: from the pool, for the whole loop
            code.emit("buffer_alloc", temps[-1], lowerer.dim_reg(v.type.byte_count))
            pool_temps.append(temps[-1])
        else:  # bounded: its upper-bound slot, viewed at the run-time length
            whole = lowerer.new_ref()
            code.emit("buffer_arena", whole, offset, size)
            code.emit("buffer_subview", temps[-1], whole, lowerer.int_reg(0), lowerer.dim_reg(v.type.byte_count))
        offset += size

    zero, one = lowerer.int_reg(0), lowerer.int_reg(1)
    i = lowerer.new_int()
    if trips is None:
        trips = _load_scalar(lowerer, node.inputs[0], plan)
    cond = _load_scalar(lowerer, node.inputs[1], plan)
    if counted is None and not isinstance(trips_attr, int) and scanned:
        bounded = lowerer.new_int()  # a Scan over a symbolic length: never past the scan inputs
        code.emit("min_i64", bounded, trips, lowerer.dim_reg(trips_attr))
        trips = bounded
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
            slices.append(_slice_view(lowerer, ref, i, _slice_bytes(v)))
        for v, register in zip(body.inputs, [iteration_slot, *state, *slices, *captures]):
            lowerer.bind(v, register)
        _emit_body(lowerer, body, body_plan)
        code.emit("buffer_load_i64", cond, lowerer.ref_of(body.outputs[0], body_plan), zero)
        # Scan slices first: a scan output may be a carried input, which the carried copy overwrites.
        for dst, v in zip(scan_results, body.outputs[1 + n:]):
            code.emit("buffer_copy", _slice_view(lowerer, dst, i, v.type.byte_count), lowerer.ref_of(v, body_plan))
        _copy_carried(lowerer, body, body_plan, state, temps, n)
        _free_results(lowerer, body, body_plan)
    code.emit("add_i64", i, i, one)
    code.emit("br", top)
    code.bind(done)
    for temp in pool_temps:
        code.emit("buffer_free", temp)
    if counted is not None:
        lowerer.symbol_regs[counted] = i  # the scan outputs hold i slices
    elif node.outputs[n:]:
        ok = lowerer.new_int()
        code.emit("cmp_eq_i64", ok, i, lowerer.dim_reg(trips_attr))
        code.emit("check", ok, LOOP_ENDED_EARLY)


def _counted_symbol(lowerer: Lowerer, trips: "int | Expr") -> str | None:
    """The symbol a Loop's scan outputs are counted in when no earlier code defines it."""
    if isinstance(trips, int):
        return None
    names = Expr.of(trips).symbols
    unknown = sorted(name for name in names if name not in lowerer.symbol_regs)
    if not unknown:
        return None
    if Expr.of(trips) != Expr.of(unknown[0]):
        raise CompileError(f"Loop trips {trips}: only a lone symbol can be defined by the loop")
    return unknown[0]


def _allocate_scan_outputs(lowerer: Lowerer, node: Node, plan: MemoryPlanResult, capacity: int) -> None:
    """Pool blocks for `capacity` slices of each scan output, before the loop (their length is
    the iterations run, known after it)."""
    n = node.attrs["carried"]
    for v, body_out in zip(node.outputs[n:], node.attrs["body"].outputs[1 + n:]):
        storage = plan.storage(v)
        if storage is None or not storage.pool:
            raise AssertionError(f"scan output {v.name} ({v.type}) must be a pool storage")
        length, r = lowerer.new_int(), lowerer.new_ref()
        lowerer.code.emit("mul_i64", length, capacity, lowerer.dim_reg(body_out.type.byte_count))
        lowerer.code.emit("buffer_alloc", r, length)
        lowerer.pool_refs[id(storage)] = r


def _slice_bytes(v: Value) -> "int | Expr":
    """Bytes of one axis-0 slice of scan input `v`."""
    if v.type.is_static:
        return v.type.num_bytes // max(1, v.type.shape[0])
    return TensorType(v.type.dtype, v.type.shape[1:]).byte_count


def _emit_body(lowerer: Lowerer, body: Graph, body_plan: MemoryPlanResult) -> None:
    """Emit a body's nodes; the symbols it reads from its own tensors (body.symbol_sources) are
    loaded inside it."""
    outer = lowerer.graph
    lowerer.graph = body
    try:
        # symbols read from the body's inputs or constants (a Slice start folded to a constant)
        lowerer.load_symbols([*body.inputs, *(v for v, _ in body.symbol_sources.values() if v.is_const)], body_plan)
        lowerer.emit_graph(body, body_plan)
    finally:
        lowerer.graph = outer


def _free_results(lowerer: Lowerer, body: Graph, body_plan: MemoryPlanResult) -> None:
    """Free the pool blocks of a body's results once they are copied out (every other pool
    storage of the body is freed after its last reader)."""
    for storage in body_plan.storages:
        if storage.pool and id(storage) in lowerer.pool_refs:
            lowerer.code.emit("buffer_free", lowerer.pool_refs.pop(id(storage)))
            lowerer.refs = {k: r for k, r in lowerer.refs.items() if body_plan.storage_of.get(k[0]) is not storage}


def _slice_view(lowerer: Lowerer, buffer: int, i: int, stride: "int | Expr") -> int:
    """A view of bytes [i * stride, (i + 1) * stride) of ref register `buffer`."""
    offset, view, size = lowerer.new_int(), lowerer.new_ref(), lowerer.dim_reg(stride)
    lowerer.code.emit("mul_i64", offset, i, size)
    lowerer.code.emit("buffer_subview", view, buffer, offset, size)
    return view


def _copy_carried(lowerer: Lowerer, body: Graph, body_plan: MemoryPlanResult, state: list[int],
                  temps: list[int], n: int) -> None:
    code = lowerer.code
    carried_inputs = body.inputs[1:1 + n]
    results = body.outputs[1:1 + n]
    _replace_carried_sequences(lowerer, body, body_plan, state, n)
    through_temp = []
    direct = []
    for k, v in enumerate(results):
        if is_sequence(v.type):
            continue
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


def _replace_carried_sequences(lowerer: Lowerer, body: Graph, body_plan: MemoryPlanResult, state: list[int],
                               n: int) -> None:
    """Each carried sequence the body changed: its new block first (the body's own result, or a copy
    when the result is another carried value or a capture), then the old block freed and the state
    register moved to the new one, so a swap never reads a freed block."""
    carried_inputs = body.inputs[1:1 + n]
    fresh: list[tuple[int, int]] = []
    moved: set[int] = set()
    for k, v in enumerate(body.outputs[1:1 + n]):
        if not is_sequence(v.type) or v is carried_inputs[k]:
            continue  # a tensor, or passed through unchanged
        src = lowerer.ref_of(v, body_plan)
        if produced_in(body, v) and id(v) not in moved:
            moved.add(id(v))
            fresh.append((k, src))
        else:
            fresh.append((k, copy_block(lowerer, src)))
    for k, register in fresh:
        lowerer.code.emit("buffer_free", state[k])
        move_into(lowerer, state[k], register, owned=True)
