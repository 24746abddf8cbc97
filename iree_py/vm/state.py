"""Module state in the host program: state slots in the arena, the init block, reads and writes.

The C runtime allocates the arena zeroed at load and keeps it for the module's life, so bytes that
the memory plan never hands to another value keep their contents from one call to the next.
`reserve_state` puts each state slot (iree_py/ir/ops/state.py) past the planned arena, plus an 8-byte
"initialized" flag when the graph has StateInit nodes. The host program then is:

    flag = load_i64(arena[flag]); cond_br flag, skip, init
    init:  copy each StateInit's constant into its slot; store_i64(arena[flag], 1)
    skip:  copy each slot a StateRead reads into the StateRead's own storage
           ... the dispatches ...
           copy each StateWrite's value into its slot
           ... output copies, ret

Reads are copies, so no value aliases a slot and the writes at the end cannot clobber anything the
call still reads. The importer puts StateRead nodes before every kernel and StateWrite nodes after
them (so the planner keeps those storages live); `StateEmitter` checks it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from iree_py.errors import CompileError
from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.ops.state import STATE_OPS
from iree_py.ir.types import TensorType
from iree_py.vm.memory_plan import ALIGNMENT, MemoryPlanResult

if TYPE_CHECKING:
    from iree_py.vm.lowering import Lowerer

FLAG_BYTES = 8


@dataclass(frozen=True)
class StateSlot:
    slot: int
    name: str
    type: TensorType
    offset: int      # in the arena


@dataclass(frozen=True)
class StateLayout:
    slots: dict[int, StateSlot]
    flag_offset: int | None   # None: no StateInit, nothing to run once

    def buffers(self) -> list[tuple[str, int, int]]:
        """(label, offset, size) of each slot and the flag, for the module's memory plan and dumps."""
        result = [(f"{s.name}: {s.type}", s.offset, s.type.num_bytes) for s in self.slots.values()]
        if self.flag_offset is not None:
            result.append(("initialized flag", self.flag_offset, FLAG_BYTES))
        return result


def _align(n: int) -> int:
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def state_nodes(graph: Graph, op: str) -> list[Node]:
    return [n for n in graph.nodes if n.op == op]


def mark_state_nodes(graph: Graph, plan: MemoryPlanResult) -> None:
    """State nodes need no kernel (the host program does their copies): elide them, and give
    StateWrite/StateInit tokens no storage."""
    for node in graph.nodes:
        if node.op not in STATE_OPS:
            continue
        plan.elided.add(id(node))
        if node.op != "StateRead":
            plan.storage_of.pop(id(node.outputs[0]), None)
    kept = set(map(id, plan.storage_of.values()))
    plan.storages = [s for s in plan.storages if id(s) in kept]


def _slot_type(node: Node) -> TensorType:
    return node.outputs[0].type if node.op == "StateRead" else node.inputs[0].type


def reserve_state(graph: Graph, arena: int) -> tuple[int, StateLayout | None]:
    """Place the state slots (and the flag) from arena offset `arena` on; the new arena size."""
    types: dict[int, tuple[str, TensorType]] = {}
    for node in graph.nodes:
        if node.op not in STATE_OPS:
            continue
        slot, ttype = node.attrs["slot"], _slot_type(node)
        name, known = types.setdefault(slot, (node.attrs["var"], ttype))
        if known != ttype:
            raise CompileError(f"node '{node.name}' ({node.op}): state variable '{name}' is {known}, "
                               f"this node uses it as {ttype}")
    if not types:
        return arena, None
    slots: dict[int, StateSlot] = {}
    for slot in sorted(types):
        name, ttype = types[slot]
        slots[slot] = StateSlot(slot, name, ttype, arena)
        arena += _align(max(ttype.num_bytes, 1))
    flag = None
    if state_nodes(graph, "StateInit"):
        flag, arena = arena, arena + _align(FLAG_BYTES)
    return arena, StateLayout(slots, flag)


class StateEmitter:
    """Emits the state parts of the host program; lowering calls `prologue()` before the first
    dispatch and `writes()` after the last. Every operand register is made before the branch, so
    the registers lowering caches stay valid on the calls that skip the init block."""

    def __init__(self, layout: StateLayout | None, graph: Graph, lowerer: "Lowerer", plan: MemoryPlanResult) -> None:
        self.layout = layout
        self.graph = graph
        self.lowerer = lowerer
        self.code = lowerer.code
        self.plan = plan
        self.slot_refs: dict[int, int] = {}

    def ref_of(self, v: Value) -> int:
        return self.lowerer.ref_of(v, self.plan)

    def _check_order(self) -> None:
        kinds = ["read" if n.op == "StateRead" else "write" if n.op == "StateWrite" else "kernel"
                 for n in self.graph.nodes if n.op != "StateInit"]
        first_kernel = kinds.index("kernel") if "kernel" in kinds else len(kinds)
        last_kernel = len(kinds) - 1 - kinds[::-1].index("kernel") if "kernel" in kinds else -1
        for i, kind in enumerate(kinds):
            if (kind == "read" and i > first_kernel) or (kind == "write" and i < last_kernel):
                raise CompileError(f"graph {self.graph.name}: state {kind}s must come "
                                   f"{'before' if kind == 'read' else 'after'} every kernel (docs/state.md)")

    def _arena_ref(self, offset: int, length: int) -> int:
        r = self.lowerer.new_ref()
        self.code.emit("buffer_arena", r, offset, length)
        return r

    def prologue(self) -> None:
        if self.layout is None:
            return
        self._check_order()
        for s in self.layout.slots.values():
            self.slot_refs[s.slot] = self._arena_ref(s.offset, s.type.num_bytes)
        if self.layout.flag_offset is not None:
            self._run_once()
        for node in state_nodes(self.graph, "StateRead"):
            self.code.emit("buffer_copy", self.ref_of(node.outputs[0]), self.slot_refs[node.attrs["slot"]])

    def _run_once(self) -> None:
        assert self.layout is not None and self.layout.flag_offset is not None
        inits = [(self.slot_refs[n.attrs["slot"]], self.ref_of(n.inputs[0]))
                 for n in state_nodes(self.graph, "StateInit")]
        flag_ref = self._arena_ref(self.layout.flag_offset, FLAG_BYTES)
        zero, one = self.lowerer.int_reg(0), self.lowerer.int_reg(1)
        flag = self.lowerer.new_int()
        init, done = self.code.label("state_init"), self.code.label("state_ready")
        self.code.emit("buffer_load_i64", flag, flag_ref, zero)
        self.code.emit("cond_br", flag, done, init)
        self.code.bind(init)
        for slot_ref, value_ref in inits:
            self.code.emit("buffer_copy", slot_ref, value_ref)
        self.code.emit("buffer_store_i64", flag_ref, zero, one)
        self.code.bind(done)

    def writes(self) -> None:
        if self.layout is None:
            return
        for node in state_nodes(self.graph, "StateWrite"):
            self.code.emit("buffer_copy", self.slot_refs[node.attrs["slot"]], self.ref_of(node.inputs[0]))
