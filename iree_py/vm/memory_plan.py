"""Static memory planning: every intermediate tensor gets an offset in one arena.

Some nodes need no kernel: a node whose results are all empty, and nodes whose result is a view
of other storage:
- a Reshape's result is its input's bytes;
- a Concat whose inputs are all kernel results and whose slices are contiguous (every dim before
  the axis is 1) is done in place: each input is computed straight into its slice of the output,
  so nothing is copied. Nested concats (DenseNet) compose.
Every other result owns a Storage. A storage lives from the first definition of any value in it
to the last read of any of them (graph outputs: to the end); lifetimes are closed intervals of
node indices, so a kernel's output never overlaps its own inputs. Placement is greedy, largest
first, at the lowest offset that fits between the placed storages whose lifetimes overlap
(the classic offline planner, as in TFLite Micro).

Symbolic sizes (docs/dynamic_shapes.md §4): a storage whose byte count is an Expr is planned at
its upper bound when every symbol in it has one (`bounds`, from `--dim NAME=LO..HI`) and viewed at
its run-time length; without bounds it is a pool storage: allocated from the module's pool when
its value is defined and freed after its last read (`Storage.pool`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.ops.control_flow import bodies
from iree_py.ir.ops.sequences import SEQUENCE_OPS
from iree_py.ir.ops.state import STATE_OPS
from iree_py.ir.types import is_sequence
from iree_py.ir.symbols import Expr, bounds as expr_bounds

Bounds = dict[str, tuple[int, int]]  # symbol -> (lowest, highest) value, from --dim NAME=LO..HI

ALIGNMENT = 64


@dataclass
class Storage:
    """One arena allocation, named after the value that owns it."""

    name: str
    size: int                      # bytes reserved (a symbolic size: its upper bound; pool: 0)
    first: int
    last: int
    offset: int = -1
    length: int | Expr = 0         # the run-time byte count: `size` when static, else an Expr
    pool: bool = False             # allocated from the pool at run time (no bound known)

    @property
    def dynamic(self) -> bool:
        return not isinstance(self.length, int)


@dataclass
class MemoryPlanResult:
    arena_size: int
    storages: list[Storage]
    storage_of: dict[int, Storage]              # id(root value) -> its storage
    parent: dict[int, tuple[Value, int]]        # id(value) -> (value it is a view of, byte offset)
    elided: set[int] = field(default_factory=set)  # ids of nodes that need no kernel
    # Control flow: id(node) -> its region (the bodies' own plans, placed inside one storage).
    regions: dict[int, "Region"] = field(default_factory=dict)
    base: int = 0                                # arena offset of this plan (a body's: its region's)

    def locate(self, value: Value) -> tuple[Value, int]:
        """The value owning `value`'s bytes (a storage root, graph input or constant) and the offset."""
        offset = 0
        while id(value) in self.parent:
            value, step = self.parent[id(value)]
            offset += step
        return value, offset

    def storage(self, value: Value) -> Storage | None:
        return self.storage_of.get(id(self.locate(value)[0]))


@dataclass
class Region:
    """The arena space of a control-flow node's bodies while the node runs: every body's plan
    starts at the region's offset (bodies never run at the same time), then `scratch` bytes of
    slots the lowering uses (a Loop's iteration number and carried-value temporaries)."""

    storage: Storage
    bodies: list[MemoryPlanResult]
    scratch_offset: int            # from the region's start
    scratch_slots: list[int]       # aligned sizes of the scratch slots, in order


def _align(n: int) -> int:
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def region_inputs(node: Node) -> list[Value]:
    """Everything a dispatch region reads: its root's inputs and the operands of its fused ops."""
    return [*node.inputs, *(v for f in node.fused for v in f.inputs)]


def _concat_in_place(node: Node, storages: dict[int, Storage], parent: dict[int, tuple[Value, int]]) -> bool:
    """Make the inputs of Concat `node` views into its output, if every input can be one."""
    out = node.outputs[0]
    axis = node.attrs["axis"]
    ids = [id(v) for v in node.inputs]
    if not out.type.is_static or math.prod(out.type.shape[:axis]) != 1 or len(set(ids)) != len(ids):
        return False
    if not all(i in storages and i not in parent for i in ids):
        return False  # a graph input, a constant, a view, or already a slice of another concat
    offset = 0
    for v in node.inputs:
        parent[id(v)] = (out, offset)
        del storages[id(v)]
        offset += v.type.num_bytes
    return True


def _storage(out: Value, index: int, dim_bounds: Bounds | None) -> Storage:
    length = out.type.byte_count
    if isinstance(length, int):
        return Storage(out.name, _align(length), index, index, length=length)
    missing = sorted(Expr.of(length).symbols - set(dim_bounds or {}))
    if missing:
        return Storage(out.name, 0, index, index, length=length, pool=True)
    high = expr_bounds(length, dim_bounds or {})[1]
    return Storage(out.name, _align(max(high, 0)), index, index, length=length)


def plan_memory(graph: Graph, dim_bounds: Bounds | None = None) -> MemoryPlanResult:
    """Plan the arena for `graph`'s node results. Graph inputs and constants are not in the arena."""
    parent: dict[int, tuple[Value, int]] = {}
    storages: dict[int, Storage] = {}
    elided: set[int] = set()
    regions: dict[int, Region] = {}
    defined_at: dict[int, int] = {}
    for index, node in enumerate(graph.nodes):
        for out in node.outputs:
            defined_at[id(out)] = index
        if node.op == "Reshape":
            parent[id(node.outputs[0])] = (node.inputs[0], 0)
            elided.add(id(node))
            continue
        for out in node.outputs:
            if not is_sequence(out.type):  # a sequence is a pool block its op allocates (vm/sequences.py)
                storages[id(out)] = _storage(out, index, dim_bounds)
        if node.op in SEQUENCE_OPS:
            continue
        if all(not is_sequence(out.type) and out.type.element_count == 0 for out in node.outputs) and \
                node.op not in STATE_OPS:
            elided.add(id(node))  # nothing to compute: the results are empty (module state ops still copy)
            continue
        if node.op == "Concat" and _concat_in_place(node, storages, parent):
            elided.add(id(node))
        if bodies(node):
            regions[id(node)] = _plan_region(node, index, dim_bounds)
            storages[id(node)] = regions[id(node)].storage

    plan = MemoryPlanResult(0, [], storages, parent, elided, regions)
    values = {id(v): v for v in graph.values()}
    for value_id, index in defined_at.items():
        s = plan.storage(values[value_id])
        if s is not None:
            s.first = min(s.first, index)
    for index, node in enumerate(graph.nodes):
        if id(node) in elided:
            continue
        for v in region_inputs(node):
            s = plan.storage(v) if v is not None else None
            if s is not None:
                s.last = max(s.last, index)
    for v in graph.outputs:
        s = plan.storage(v)
        if s is not None:
            s.last = len(graph.nodes)
    plan.arena_size = _place([s for s in storages.values() if not s.pool])
    plan.storages = sorted(storages.values(), key=lambda s: (s.first, s.offset))
    set_base(plan, 0)
    return plan


def _plan_region(node: Node, index: int, dim_bounds: Bounds | None) -> Region:
    """Bodies may hold symbolic shapes: their pool storages are allocated and freed inside the body
    each time it runs (vm/control_flow.py); only their arena storages share the region."""
    plans = [plan_memory(body, dim_bounds) for body in bodies(node)]
    # A Loop's scratch: the iteration number, then one temporary per carried value (the lowering
    # copies carried results through them when a result is another carried input). A carried
    # value with a symbolic size has its temporary at its upper bound, or from the pool (size 0).
    # (A carried sequence needs none: the lowering moves blocks, vm/control_flow.py.)
    slots = [] if node.op != "Loop" else [ALIGNMENT] + [0 if is_sequence(v.type) else _storage(v, index, dim_bounds).size
                                                        for v in node.outputs[:node.attrs["carried"]]]
    scratch_offset = max((p.arena_size for p in plans), default=0)
    storage = Storage(f"{node.name or node.op}.region", max(ALIGNMENT, scratch_offset + sum(slots)), index, index)
    return Region(storage, plans, scratch_offset, slots)


def needs_pool(graph: Graph, plan: MemoryPlanResult) -> bool:
    """Whether a storage of `plan` or of a body nested in it comes from the run-time pool (a
    Loop's pool temporaries belong to carried results that are pool storages themselves)."""
    if any(s.pool for s in plan.storages):
        return True
    return any(needs_pool(body, p) for node in graph.nodes if id(node) in plan.regions
               for body, p in zip(bodies(node), plan.regions[id(node)].bodies))


def set_base(plan: MemoryPlanResult, base: int) -> None:
    """Fix the absolute arena offset of `plan` and of the bodies nested in it."""
    plan.base = base
    for region in plan.regions.values():
        for body in region.bodies:
            set_base(body, base + region.storage.offset)


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
