"""Lower the host program of an optimized graph to VM bytecode.

The host program makes a buffer view for every constant and arena tensor a dispatch touches,
dispatches each kernel in order, copies any output that does not already live in the arena, and
returns the outputs. Inputs arrive in ref registers 0..N-1. Control-flow nodes are lowered in
place with branches (iree_py/vm/control_flow.py): their bodies' code sits inside the function,
and views and constants made inside a body are only reused inside it (`Lowerer.scope`).

Symbolic dims (docs/dynamic_shapes.md): the dynamic dims of the inputs arrive in i64 registers
0..K-1 (signature order); derived dims are computed by `symbols.Emitter` once each; a symbol read
from a tensor (`graph.symbol_sources`) is loaded right after the tensor is computed. Before each
dispatch its shape rules' run-time checks run (`check`, with a message naming the node); pool
storages are allocated before their node and freed after their last reader; the function returns
the outputs' dynamic dims with `ret_i64`.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Iterator

from iree_py.codegen.dispatch import Dispatch
from iree_py.codegen.kernel_spec import KernelInfo
from iree_py.errors import CompileError
from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.ops import infer_types
from iree_py.ir.ops.control_flow import BODY_ATTRS, FAIL
from iree_py.ir.ops.dim_values import DIM_VALUES
from iree_py.ir.symbols import Emitter, Expr
from iree_py.ir.ops.sequences import SEQUENCE_OPS
from iree_py.ir.types import DType, TensorType, is_sequence
from iree_py.vm.encoder import BytecodeBuilder
from iree_py.vm.memory_plan import Bounds, MemoryPlanResult, Storage
from iree_py.vm.sequences import SeqCode, SequenceLiveness, copy_block, emit_sequence_op, produced_in, validate_input
from iree_py.vm.state import StateEmitter, StateLayout

MESSAGE_CODE_BASE = 0x10000  # a check/fail code MESSAGE_CODE_BASE + i reports Module.messages[i]


@dataclass
class HostProgram:
    bytecode: bytes
    i64_register_count: int
    ref_register_count: int
    constants: list[Value]            # module constant table, in index order
    messages: list[str] = field(default_factory=list)  # texts of the run-time checks (MESSAGE_CODE_BASE + i)
    i64_input_count: int = 0
    i64_output_count: int = 0


def dynamic_dims(values: list[Value]) -> list[tuple[Value, int, "Expr | None"]]:
    """(value, axis, dim) of every symbolic dim, in signature order; a sequence's one dynamic dim
    (its byte length, docs/sequences.md) is (value, 0, None)."""
    return [(v, axis, d) for v in values
            for axis, d in ([(0, None)] if is_sequence(v.type) else enumerate(v.type.shape)) if not isinstance(d, int)]


RefKey = tuple[int, int, "int | Expr"]  # (id of the value owning the bytes, byte offset, byte length)


@dataclass
class Lowerer:
    """Register allocation and view caching while one function's bytecode is emitted."""

    code: BytecodeBuilder
    kernels: list[KernelInfo]
    dispatches: Iterator[tuple[Dispatch, int]]
    refs: dict[RefKey, int] = field(default_factory=dict)    # one ref register per distinct view
    bound: dict[int, int] = field(default_factory=dict)      # id(input value) -> its ref register
    ints: dict[int, int] = field(default_factory=dict)       # constant value -> i64 register
    ref_count: int = 0
    int_count: int = 0
    constants: list[Value] = field(default_factory=list)
    constant_index: dict[int, int] = field(default_factory=dict)
    symbol_regs: dict[str, int] = field(default_factory=dict)  # symbol -> the i64 register holding it
    input_dim_symbols: set[str] = field(default_factory=set)   # symbols read from input dims: never negative
    pool_refs: dict[int, int] = field(default_factory=dict)    # id(pool storage) -> its buffer's ref register
    messages: list[str] = field(default_factory=list)
    graph: Graph | None = None
    arena_ref: int | None = None                               # a view of the whole arena (bounded dims)
    arena_size: int = 0
    seq_refs: dict[int, int] = field(default_factory=dict)     # id(sequence value) -> the ref register of its block

    def __post_init__(self) -> None:
        self.dims = Emitter(self.code.emit, self.symbol_reg, self.int_reg, self.new_int,
                            nonnegative=self.input_dim_symbols.__contains__)

    def symbol_reg(self, name: str) -> int:
        if name not in self.symbol_regs:
            raise CompileError(f"symbol {name!r} is used before its value is known (no input dim or tensor "
                               f"element defines it at this point)")
        return self.symbol_regs[name]

    def dim_reg(self, d: "int | Expr") -> int:
        """The i64 register holding dim `d` (a constant or an expression over known symbols)."""
        return self.int_reg(d) if isinstance(d, int) else self.dims.emit(d)

    def message_code(self, text: str) -> int:
        if text not in self.messages:
            self.messages.append(text)
        return MESSAGE_CODE_BASE + self.messages.index(text)

    def new_ref(self) -> int:
        self.ref_count += 1
        return self.ref_count - 1

    def new_int(self) -> int:
        """A mutable i64 register (never shared through the constant cache)."""
        self.int_count += 1
        return self.int_count - 1

    def int_reg(self, value: int) -> int:
        if value not in self.ints:
            self.ints[value] = self.new_int()
            self.code.emit("const_i64", self.ints[value], value)
        return self.ints[value]

    def bind(self, value: Value, register: int) -> None:
        """`value` (a graph or body input) lives in ref register `register`."""
        self.bound[id(value)] = register
        if is_sequence(value.type):
            self.seq_refs[id(value)] = register
            return
        self.refs[(id(value), 0, value.type.byte_count)] = register

    @contextlib.contextmanager
    def scope(self) -> Iterator[None]:
        """Code emitted inside may not run (a branch) or may run again (a loop body): the views
        and constants it makes are forgotten after it, so code after it makes its own."""
        saved = dict(self.refs), dict(self.ints), dict(self.bound), dict(self.dims.done)
        try:
            yield
        finally:
            self.refs, self.ints, self.bound, self.dims.done = saved

    def ref_of(self, v: Value, plan: MemoryPlanResult) -> int:
        if is_sequence(v.type):
            if id(v) not in self.seq_refs:
                raise AssertionError(f"sequence {v.name} is used before its buffer is made")
            return self.seq_refs[id(v)]
        root, offset = plan.locate(v)
        length = v.type.byte_count
        key = (id(root), offset, length)
        if key in self.refs:
            return self.refs[key]
        storage = plan.storage_of.get(id(root))
        if storage is not None and (storage.dynamic or not isinstance(length, int)):
            r = self._dynamic_view(storage, plan, offset, length)
            self.refs[key] = r
            return r
        r = self.new_ref()
        if storage is not None:
            self.code.emit("buffer_arena", r, plan.base + storage.offset + offset, v.type.num_bytes)
        elif root.is_const and offset == 0 and v.type.num_bytes == root.type.num_bytes:
            if id(root) not in self.constant_index:
                self.constant_index[id(root)] = len(self.constants)
                self.constants.append(root)
            self.code.emit("buffer_constant", r, self.constant_index[id(root)])
        elif id(root) in self.bound:
            self.code.emit("buffer_subview", r, self.bound[id(root)], self.int_reg(offset), self.dim_reg(length))
        else:
            raise AssertionError(f"value {v.name} is a {offset}-byte view of {root.name}, which has no storage")
        self.refs[key] = r
        return r

    def _dynamic_view(self, storage: Storage, plan: MemoryPlanResult, offset: int, length: "int | Expr") -> int:
        """A view of `length` bytes at `offset` in a storage with a run-time size: inside its pool
        block, or inside its (upper-bound) arena slot."""
        if storage.pool and offset == 0 and Expr.of(length) == Expr.of(storage.length):
            return self.pool_refs[id(storage)]  # the whole block: its own ref, no subview
        r = self.new_ref()
        if storage.pool:
            parent, start = self.pool_refs[id(storage)], offset
        else:
            if self.arena_ref is None:
                raise AssertionError("bounded dynamic storage without an arena view")
            parent, start = self.arena_ref, plan.base + storage.offset + offset
        self.code.emit("buffer_subview", r, parent, self.int_reg(start), self.dim_reg(length))
        return r

    def emit_graph(self, graph: Graph, plan: MemoryPlanResult) -> None:
        """Every node of `graph` in order: views need nothing, kernels are dispatched, control
        flow is lowered with branches. Pool storages live from their node to their last reader."""
        from iree_py.vm.control_flow import emit_control_flow
        liveness = SequenceLiveness.of(graph)
        for index, node in enumerate(graph.nodes):
            if id(node) not in plan.elided:
                if node.op in BODY_ATTRS:
                    emit_control_flow(self, node, plan)  # allocates its own results (scan outputs by trip count)
                elif node.op in SEQUENCE_OPS:
                    emit_sequence_op(self, node, plan)   # VM code on packed buffers, no kernel
                elif node.op == DIM_VALUES:
                    self.allocate(node, plan)
                    self.emit_dim_values(node, plan)     # each element stored by the host program
                elif node.op == FAIL:
                    self.allocate(node, plan)             # its results are never written: the call stops
                    self.code.emit("fail", self.message_code(node.attrs["message"]))
                else:
                    self.allocate(node, plan)
                    self.emit_dispatch(node, plan)
            elif any(not v.type.is_static for v in [*node.inputs, *node.outputs]):
                self.emit_checks(node)  # a view (Reshape) from or to symbolic dims: its element count
            self.load_symbols(node.outputs, plan)
            self.free_after(index, plan)
            for v in liveness.free_after.get(index, []):
                self.code.emit("buffer_free", self.seq_refs.pop(id(v)))

    def emit_dim_values(self, node: Node, plan: MemoryPlanResult) -> None:
        out = self.ref_of(node.outputs[0], plan)
        for i, value in enumerate(node.attrs["values"]):
            self.code.emit("buffer_store_i64", out, self.int_reg(8 * i), self.dim_reg(value))

    def allocate(self, node: Node, plan: MemoryPlanResult) -> None:
        for out in node.outputs:
            storage = plan.storage(out)
            if storage is None or not storage.pool or id(storage) in self.pool_refs:
                continue
            length = self.dim_reg(storage.length)
            # Sizes computed from run-time values can come out negative (e.g. an output_shape smaller
            # than the data): name the node and the value rather than let the pool refuse a bare size.
            # A size proven nonnegative (a product of input dims) needs no check.
            if not self.dims.at_least(storage.length, 0):
                non_negative = self.new_int()
                self.code.emit("cmp_le_i64", non_negative, self.int_reg(0), length)
                self.code.emit("check", non_negative, self.message_code(
                    f"node '{node.name}' (op {node.op}): result {out.name} ({out.type}) would have a negative size"))
            r = self.new_ref()
            self.code.emit("buffer_alloc", r, length)
            self.pool_refs[id(storage)] = r

    def free_after(self, index: int, plan: MemoryPlanResult) -> None:
        for storage in plan.storages:
            if storage.pool and storage.last == index and id(storage) in self.pool_refs:
                self.code.emit("buffer_free", self.pool_refs.pop(id(storage)))
                self.refs = {k: r for k, r in self.refs.items() if plan.storage_of.get(k[0]) is not storage}

    def load_symbols(self, values: list[Value], plan: MemoryPlanResult) -> None:
        """Read the symbols whose value is an element of one of `values` (graph.symbol_sources)."""
        sources = getattr(self.graph, "symbol_sources", None) or {}
        for name, (value, index) in sources.items():
            if name in self.symbol_regs or not any(value is v for v in values):
                continue
            if value.type.dtype != DType.i64:
                raise CompileError(f"symbol {name!r} is read from {value.name} ({value.type}); only i64 tensors "
                                   f"can define a dim at run time")
            reg = self.new_int()
            self.code.emit("buffer_load_i64", reg, self.ref_of(value, plan), self.int_reg(8 * index))
            self.symbol_regs[name] = reg

    def emit_checks(self, node: Node) -> None:
        """The run-time dim checks of `node`'s shape rules (and of the ops fused into it)."""
        from iree_py.ir.dim_checks import collect_checks
        for n in [node, *node.fused]:
            with collect_checks() as checks:
                infer_types(n.op, [v.type for v in n.inputs], n.attrs)
            for check in checks:
                ok: int | None = None
                for lhs, rhs in check.alternatives:
                    eq = self.new_int()
                    self.code.emit("cmp_eq_i64", eq, self.dim_reg(lhs), self.dim_reg(rhs))
                    if ok is not None:
                        both = self.new_int()
                        self.code.emit("or_i64", both, ok, eq)
                        eq = both
                    ok = eq
                if ok is None:
                    continue
                text = check.message(f"node '{n.name}' (op {n.op})")
                self.code.emit("check_dims", ok, self.message_code(text), [self.dim_reg(d) for d in check.shown_dims])

    def emit_dispatch(self, node: Node, plan: MemoryPlanResult) -> None:
        dispatch, entry = next(self.dispatches)
        info = self.kernels[entry]
        if any(not v.type.is_static for v in [*dispatch.inputs, *dispatch.outputs]):
            self.emit_checks(node)
        bindings = [self.ref_of(v, plan) for v in [*dispatch.inputs, *dispatch.outputs]]
        groups = [self.dim_reg(n) for n in info.workgroup_count]
        push = [self.dim_reg(n) for n in info.push_constants]
        self.code.emit("dispatch", 0, entry, *groups, push, bindings)


def _has_symbolic_values(graph: Graph) -> bool:
    """Whether a value of `graph` or of a control-flow body in it has symbolic dims."""
    from iree_py.ir.ops.control_flow import bodies
    return any(isinstance(v.type, TensorType) and not v.type.is_static for v in graph.values()) or any(
        _has_symbolic_values(body) for node in graph.nodes for body in bodies(node))


def lower_graph(graph: Graph, dispatches: list[Dispatch], entry_of: list[int], kernels: list[KernelInfo],
                plan: MemoryPlanResult, output_copies: dict[int, int], state: StateLayout | None = None,
                dim_bounds: Bounds | None = None, arena_size: int = 0) -> HostProgram:
    """`dispatches` are in the order `emit_graph` meets their nodes (bodies inline, see
    compiler.partition) and `entry_of[i]` is the entry point of dispatches[i]; `output_copies`
    maps id(output value) to the arena offset reserved for its copy (for outputs that are graph
    inputs or constants). `dim_bounds`: the symbols bounded at compile time (checked at entry);
    `arena_size`: the whole arena, viewed once when a storage has a bounded symbolic size."""
    inputs_dynamic = dynamic_dims(graph.inputs)
    lowerer = Lowerer(BytecodeBuilder(), kernels, iter(zip(dispatches, entry_of)), ref_count=len(graph.inputs),
                      int_count=len(inputs_dynamic), graph=graph, arena_size=arena_size)
    code = lowerer.code
    for i, v in enumerate(graph.inputs):
        lowerer.bind(v, i)
    for reg, (v, axis, d) in enumerate(inputs_dynamic):
        if d is None:
            continue  # a sequence's byte length: the entry code reads its buffer's length
        if d.symbol is None:
            raise CompileError(f"input {v.name} dim {axis} is {d}: an input dim must be a number or a symbol name")
        lowerer.symbol_regs.setdefault(d.symbol, reg)
        lowerer.input_dim_symbols.add(d.symbol)
    _check_bounds(lowerer, dim_bounds or {})
    for i, v in enumerate(graph.inputs):
        if is_sequence(v.type):
            validate_input(lowerer, v, i)
    if any(s.dynamic and not s.pool for s in plan.storages) or _has_symbolic_values(graph):
        # bounded storages, and static ones viewed at a symbolic size (a Reshape to a computed shape)
        lowerer.arena_ref = lowerer.new_ref()
        code.emit("buffer_arena", lowerer.arena_ref, 0, arena_size)
    lowerer.load_symbols([*graph.inputs, *(v for v in graph.values() if v.is_const),
                          *(v for v, _ in graph.symbol_sources.values() if v.is_const)], plan)
    state_code = StateEmitter(state, graph, lowerer, plan)  # module state (vm/state.py): init, reads, writes
    state_code.prologue()
    lowerer.emit_graph(graph, plan)
    state_code.writes()
    results = []
    for v in graph.outputs:
        if is_sequence(v.type):
            results.append(_sequence_output(lowerer, graph, v, plan, results))
            continue
        if plan.storage(v) is not None:
            results.append(lowerer.ref_of(v, plan))
            continue
        if not v.type.is_static:
            results.append(_dynamic_output_copy(lowerer, v, plan))
            continue
        dst = lowerer.new_ref()
        code.emit("buffer_arena", dst, output_copies[id(v)], v.type.num_bytes)
        code.emit("buffer_copy", dst, lowerer.ref_of(v, plan))
        results.append(dst)
    out_dims = [lowerer.dim_reg(d) if d is not None else SeqCode(lowerer).length(results[graph.outputs.index(v)])
                for v, _, d in dynamic_dims(graph.outputs)]
    if out_dims:
        code.emit("ret_i64", out_dims, results)
    else:
        code.emit("ret", results)
    return HostProgram(code.finish(), lowerer.int_count, lowerer.ref_count, lowerer.constants, lowerer.messages,
                       len(inputs_dynamic), len(out_dims))


def _sequence_output(lowerer: Lowerer, graph: Graph, v: Value, plan: MemoryPlanResult, earlier: list[int]) -> int:
    """A sequence output: its own block when the graph computed it (returned once), else a copy."""
    register = lowerer.ref_of(v, plan)
    return register if produced_in(graph, v) and register not in earlier else copy_block(lowerer, register)


def _dynamic_output_copy(lowerer: Lowerer, v: Value, plan: MemoryPlanResult) -> int:
    """An output that is a graph input (or a view of one) with symbolic dims: copied into a pool block."""
    dst = lowerer.new_ref()
    lowerer.code.emit("buffer_alloc", dst, lowerer.dim_reg(v.type.byte_count))
    lowerer.code.emit("buffer_copy", dst, lowerer.ref_of(v, plan))
    return dst


def _check_bounds(lowerer: Lowerer, dim_bounds: Bounds) -> None:
    """Entry checks: each bounded input symbol lies in the range the memory plan was made for."""
    for name, (low, high) in sorted(dim_bounds.items()):
        if name not in lowerer.symbol_regs:
            continue
        reg = lowerer.symbol_regs[name]
        low_ok, high_ok, ok = lowerer.new_int(), lowerer.new_int(), lowerer.new_int()
        lowerer.code.emit("cmp_le_i64", low_ok, lowerer.int_reg(low), reg)
        lowerer.code.emit("cmp_le_i64", high_ok, reg, lowerer.int_reg(high))
        lowerer.code.emit("and_i64", ok, low_ok, high_ok)
        text = f"dim {name} is outside {low}..{high}, the range the module was compiled for (--dim {name}={low}..{high})"
        lowerer.code.emit("check", ok, lowerer.message_code(text))
