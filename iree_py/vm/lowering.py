"""Lower the host program of an optimized graph to VM bytecode.

The host program makes a buffer view for every constant and arena tensor a dispatch touches,
dispatches each kernel in order, copies any output that does not already live in the arena, and
returns the outputs. Inputs arrive in ref registers 0..N-1. Control-flow nodes are lowered in
place with branches (iree_py/vm/control_flow.py): their bodies' code sits inside the function,
and views and constants made inside a body are only reused inside it (`Lowerer.scope`).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Iterator

from iree_py.codegen.dispatch import Dispatch
from iree_py.codegen.kernel_spec import KernelInfo
from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.ops_control_flow import BODY_ATTRS
from iree_py.vm.encoder import BytecodeBuilder
from iree_py.vm.memory_plan import MemoryPlanResult
from iree_py.vm.state import StateEmitter, StateLayout


@dataclass
class HostProgram:
    bytecode: bytes
    i64_register_count: int
    ref_register_count: int
    constants: list[Value]            # module constant table, in index order


RefKey = tuple[int, int, int]  # (id of the value owning the bytes, byte offset, byte length)


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
        self.refs[(id(value), 0, value.type.num_bytes)] = register

    @contextlib.contextmanager
    def scope(self) -> Iterator[None]:
        """Code emitted inside may not run (a branch) or may run again (a loop body): the views
        and constants it makes are forgotten after it, so code after it makes its own."""
        saved = dict(self.refs), dict(self.ints), dict(self.bound)
        try:
            yield
        finally:
            self.refs, self.ints, self.bound = saved

    def ref_of(self, v: Value, plan: MemoryPlanResult) -> int:
        root, offset = plan.locate(v)
        key = (id(root), offset, v.type.num_bytes)
        if key in self.refs:
            return self.refs[key]
        r = self.new_ref()
        storage = plan.storage_of.get(id(root))
        if storage is not None:
            self.code.emit("buffer_arena", r, plan.base + storage.offset + offset, v.type.num_bytes)
        elif root.is_const and offset == 0 and v.type.num_bytes == root.type.num_bytes:
            if id(root) not in self.constant_index:
                self.constant_index[id(root)] = len(self.constants)
                self.constants.append(root)
            self.code.emit("buffer_constant", r, self.constant_index[id(root)])
        elif id(root) in self.bound:
            self.code.emit("buffer_subview", r, self.bound[id(root)], self.int_reg(offset),
                           self.int_reg(v.type.num_bytes))
        else:
            raise AssertionError(f"value {v.name} is a {offset}-byte view of {root.name}, which has no storage")
        self.refs[key] = r
        return r

    def emit_graph(self, graph: Graph, plan: MemoryPlanResult) -> None:
        """Every node of `graph` in order: views need nothing, kernels are dispatched, control
        flow is lowered with branches."""
        from iree_py.vm.control_flow import emit_control_flow
        for node in graph.nodes:
            if id(node) in plan.elided:
                continue
            if node.op in BODY_ATTRS:
                emit_control_flow(self, node, plan)
                continue
            self.emit_dispatch(node, plan)

    def emit_dispatch(self, node: Node, plan: MemoryPlanResult) -> None:
        dispatch, entry = next(self.dispatches)
        info = self.kernels[entry]
        bindings = [self.ref_of(v, plan) for v in [*dispatch.inputs, *dispatch.outputs]]
        groups = [self.int_reg(n) for n in info.workgroup_count]
        push = [self.int_reg(n) for n in info.push_constants]
        self.code.emit("dispatch", 0, entry, *groups, push, bindings)


def lower_graph(graph: Graph, dispatches: list[Dispatch], entry_of: list[int], kernels: list[KernelInfo],
                plan: MemoryPlanResult, output_copies: dict[int, int], state: StateLayout | None = None) -> HostProgram:
    """`dispatches` are in the order `emit_graph` meets their nodes (bodies inline, see
    compiler.partition) and `entry_of[i]` is the entry point of dispatches[i]; `output_copies`
    maps id(output value) to the arena offset reserved for its copy (for outputs that are graph
    inputs or constants)."""
    lowerer = Lowerer(BytecodeBuilder(), kernels, iter(zip(dispatches, entry_of)), ref_count=len(graph.inputs))
    code = lowerer.code
    for i, v in enumerate(graph.inputs):
        lowerer.bind(v, i)
    state_code = StateEmitter(state, graph, lowerer, plan)  # module state (vm/state.py): init, reads, writes
    state_code.prologue()
    lowerer.emit_graph(graph, plan)
    state_code.writes()
    results = []
    for v in graph.outputs:
        if plan.storage(v) is not None:
            results.append(lowerer.ref_of(v, plan))
            continue
        dst = lowerer.new_ref()
        code.emit("buffer_arena", dst, output_copies[id(v)], v.type.num_bytes)
        code.emit("buffer_copy", dst, lowerer.ref_of(v, plan))
        results.append(dst)
    code.emit("ret", results)
    return HostProgram(code.finish(), lowerer.int_count, lowerer.ref_count, lowerer.constants)
