"""Lower the host program of an optimized graph to VM bytecode.

The host program of a static graph is straight-line: make a buffer view for every constant and
arena tensor a dispatch touches, dispatch each kernel in order, copy any output that does not
already live in the arena, and return the outputs. Inputs arrive in ref registers 0..N-1.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from iree_py.codegen.dispatch import Dispatch
from iree_py.codegen.kernel_spec import KernelInfo
from iree_py.ir.graph import Graph, Value
from iree_py.vm.encoder import BytecodeBuilder
from iree_py.vm.memory_plan import MemoryPlanResult


@dataclass
class HostProgram:
    bytecode: bytes
    i64_register_count: int
    ref_register_count: int
    constants: list[Value]            # module constant table, in index order


RefKey = tuple[int, int, int]  # (id of the value owning the bytes, byte offset, byte length)


@dataclass
class _Registers:
    refs: dict[RefKey, int] = field(default_factory=dict)  # one ref register per distinct view
    ints: dict[int, int] = field(default_factory=dict)  # constant value -> i64 register
    ref_count: int = 0


def lower_graph(graph: Graph, dispatches: list[Dispatch], entry_of: list[int], kernels: list[KernelInfo],
                plan: MemoryPlanResult, output_copies: dict[int, int]) -> HostProgram:
    """`entry_of[i]` is the entry point of dispatches[i]; `output_copies` maps id(output value) to the
    arena offset reserved for its copy (for outputs that are graph inputs or constants)."""
    code = BytecodeBuilder()
    regs = _Registers(ref_count=len(graph.inputs))
    for i, v in enumerate(graph.inputs):
        regs.refs[(id(v), 0, v.type.num_bytes)] = i
    constants: list[Value] = []

    def int_reg(value: int) -> int:
        if value not in regs.ints:
            regs.ints[value] = len(regs.ints)
            code.emit("const_i64", regs.ints[value], value)
        return regs.ints[value]

    def new_ref() -> int:
        regs.ref_count += 1
        return regs.ref_count - 1

    def ref_of(v: Value) -> int:
        root, offset = plan.locate(v)
        key = (id(root), offset, v.type.num_bytes)
        if key in regs.refs:
            return regs.refs[key]
        r = new_ref()
        storage = plan.storage_of.get(id(root))
        if storage is not None:
            code.emit("buffer_arena", r, storage.offset + offset, v.type.num_bytes)
        elif root.is_const and offset == 0 and v.type.num_bytes == root.type.num_bytes:
            constants.append(root)
            code.emit("buffer_constant", r, len(constants) - 1)
        else:
            raise AssertionError(f"value {v.name} is a {offset}-byte view of {root.name}, which has no storage")
        regs.refs[key] = r
        return r

    for dispatch, entry in zip(dispatches, entry_of):
        info = kernels[entry]
        bindings = [ref_of(v) for v in [*dispatch.inputs, *dispatch.outputs]]
        groups = [int_reg(n) for n in info.workgroup_count]
        push = [int_reg(n) for n in info.push_constants]
        code.emit("dispatch", 0, entry, *groups, push, bindings)

    results = []
    for v in graph.outputs:
        if plan.storage(v) is not None:
            results.append(ref_of(v))
            continue
        dst = new_ref()
        code.emit("buffer_arena", dst, output_copies[id(v)], v.type.num_bytes)
        code.emit("buffer_copy", dst, ref_of(v))
        results.append(dst)
    code.emit("ret", results)
    return HostProgram(code.finish(), len(regs.ints), regs.ref_count, constants)
