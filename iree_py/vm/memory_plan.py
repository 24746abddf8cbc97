"""Static memory planning: every intermediate tensor gets an offset in one arena.

Buffers whose lifetimes do not overlap share arena space. A Reshape produces no buffer: its result
is a view of its input's storage, which then lives as long as any of its views. Lifetimes are
closed intervals of node indices, so a kernel's output never overlaps its own inputs.
Placement is greedy, largest buffer first, at the lowest offset that fits between the buffers
already placed whose lifetimes overlap (the classic offline planner, as in TFLite Micro).
"""
from __future__ import annotations

from dataclasses import dataclass

from iree_py.ir.graph import Graph, Node, Value

ALIGNMENT = 64
VIEW_OPS = ("Reshape",)


@dataclass
class Storage:
    """One arena allocation; `values` are the IR values that live in it (the producer's result and its views)."""

    name: str
    size: int
    first: int
    last: int
    offset: int = -1
    values: list[Value] | None = None


@dataclass
class MemoryPlanResult:
    arena_size: int
    storages: list[Storage]
    storage_of: dict[int, Storage]  # id(value) -> storage, for every value that lives in the arena
    view_root: dict[int, Value]     # id(value) -> the value whose storage it views (itself if none)


def _align(n: int) -> int:
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def region_inputs(node: Node) -> list[Value]:
    """Everything a dispatch region reads: its root's inputs and the operands of its fused ops."""
    return [*node.inputs, *(v for f in node.fused for v in f.inputs)]


def root_of(value: Value, view_root: dict[int, Value]) -> Value:
    return view_root.get(id(value), value)


def plan_memory(graph: Graph, extra_outputs: list[Value] | None = None) -> MemoryPlanResult:
    """Plan the arena for `graph`'s node results. Graph inputs and constants are not in the arena."""
    view_root: dict[int, Value] = {}
    storages: dict[int, Storage] = {}
    end = len(graph.nodes)
    for index, node in enumerate(graph.nodes):
        if node.op in VIEW_OPS:
            view_root[id(node.outputs[0])] = root_of(node.inputs[0], view_root)
            continue
        for out in node.outputs:
            storages[id(out)] = Storage(out.name, _align(out.type.num_bytes), index, index, values=[out])
    for index, node in enumerate(graph.nodes):
        for v in region_inputs(node):
            if v is not None and id(root_of(v, view_root)) in storages:
                s = storages[id(root_of(v, view_root))]
                s.last = max(s.last, index)
    for v in [*graph.outputs, *(extra_outputs or [])]:
        root = root_of(v, view_root)
        if id(root) in storages:
            storages[id(root)].last = end
    for v_id, root in view_root.items():
        if id(root) in storages:
            storages[id(root)].values.append(next(out for n in graph.nodes for out in n.outputs if id(out) == v_id))

    arena = _place(list(storages.values()))
    storage_of = {id(v): s for s in storages.values() for v in s.values or []}
    return MemoryPlanResult(arena, sorted(storages.values(), key=lambda s: s.first), storage_of, view_root)


def _place(storages: list[Storage]) -> int:
    placed: list[Storage] = []
    arena = 0
    for s in sorted(storages, key=lambda s: (-s.size, s.first)):
        live = sorted((p for p in placed if p.first <= s.last and s.first <= p.last), key=lambda p: p.offset)
        offset = 0
        for p in live:
            if offset + s.size <= p.offset:
                break
            offset = max(offset, p.offset + p.size)
        s.offset = offset
        placed.append(s)
        arena = max(arena, offset + s.size)
    return arena
