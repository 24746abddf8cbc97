"""The whole compiler, one stage per line: model in, module bytes out."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable

from iree_py.codegen.backend import backend_for
from iree_py.codegen.dispatch import Dispatch, dispatch_for
from iree_py.codegen.kernel_abi import KERNEL_ABI_VERSION
from iree_py.codegen.kernel_spec import ExecutableBlob, KernelSpec
from iree_py.targets import Target, load_target
from iree_py.errors import CompileError, reported_as_internal
from iree_py.fit import check_fit, footprint
from iree_py.frontends.onnx import import_onnx
from iree_py.frontends.tflite import import_tflite, is_tflite
from iree_py.ir.graph import Graph, Value
from iree_py.ir.limits import check_tensor_sizes
from iree_py.ir.ops.control_flow import FAIL, bodies
from iree_py.ir.ops.dim_values import DIM_VALUES
from iree_py.ir.ops.sequences import SEQUENCE_OPS
from iree_py.ir.types import DType, is_sequence
from iree_py.module import model as mod
from iree_py.module.state_info import state_buffer
from iree_py.module.strings import pack_strings
from iree_py.module.writer import write_module
from iree_py.passes.inject_fault import InjectFault
from iree_py.passes.pipeline import run_pipeline
from iree_py.vm.lowering import HostProgram, lower_graph
from iree_py.vm.memory_plan import ALIGNMENT, MemoryPlanResult, plan_memory
from iree_py.vm.memory_plan import needs_pool as memory_plan_needs_pool
from iree_py.vm.sequences import uses_sequences
from iree_py.vm.state import mark_state_nodes, reserve_state

ModelSource = str | Path | bytes


@dataclasses.dataclass
class CompileOptions:
    target: str | Target = "host"                # a name in targets/, or a Target record (tests: a variant)
    dims: dict[str, int] | None = None          # values for symbolic input dims (the module is static in them)
    dim_bounds: dict[str, tuple[int, int]] | None = None  # symbol -> (low, high): planned at the upper bound
    pool_bytes: int | None = None                 # run-time pool for unbounded symbolic sizes (None: the default)
    print_ir_after: set[str] | str | None = None  # pass names, or "all"
    debug_info: bool = True                       # keep source node names per kernel
    print_fn: Callable[[str], None] = print
    ram: int | None = None                        # bytes of board RAM; None: the target's ram_bytes
    flash: int | None = None                      # bytes of board flash; None: the target's flash_bytes
    jobs: int | None = None                       # processes for the LLVM work of big models; None: one per core
    inject_fault: str | None = None               # tests only: this node's kernel made wrong (passes/inject_fault.py)


def compile_model(model: ModelSource, options: CompileOptions | None = None) -> bytes:
    """The module for `model`. Errors are IreePyErrors: a CompileError for what the model asks that
    iree-py cannot do, an InternalCompilerError (naming the node, pass or kernel) for a bug."""
    options = options or CompileOptions()
    target = options.target if isinstance(options.target, Target) else load_target(options.target)
    with reported_as_internal(f"while compiling for {target.name}"):
        return _compile(model, options, target)


def _compile(model: ModelSource, options: CompileOptions, target: Target) -> bytes:
    # 1. Import: ONNX (any opset 7..newest) or TFLite ("TFL3" / .tflite) -> graph IR with normalized ops.
    graph = import_tflite(model) if is_tflite(model) else import_onnx(model, dims=options.dims)
    check_tensor_sizes(graph, graph.source or "model")  # whatever the file declares (ir/limits.py)
    if options.inject_fault is not None:  # tests of `iree-py debug` only
        graph = InjectFault(options.inject_fault).run(graph)
    # 2. Optimize: fold constants and BatchNorm, fuse elementwise ops into their producers, drop dead code.
    graph = run_pipeline(graph, print_ir_after=options.print_ir_after, out=options.print_fn)
    # 3. Plan memory: arena offsets for every intermediate; Reshape and contiguous Concat become views.
    plan = plan_memory(graph, options.dim_bounds)
    mark_state_nodes(graph, plan)  # state reads/writes are copies in the host program (vm/state.py)
    arena_size, output_copies = reserve_output_copies(graph, plan)
    arena_size, state = reserve_state(graph, arena_size)  # module state: slots kept across calls
    # 4. Partition: every node that is not a view is one dispatch region -> one kernel spec, which
    #    the target's backend plans (its kernel variant, its constant weights' layout).
    dispatches = partition(graph, plan, target)
    # 5. Codegen: identical kernels share an entry point; the backend builds one executable (llvm:
    #    one object per kernel, cached -> one ELF).
    specs, entry_of = deduplicate([d.spec for d in dispatches])
    blob = backend_for(target).build_executable(specs, target, options.jobs)
    # 6. Lower the host program to VM bytecode.
    program = lower_graph(graph, dispatches, entry_of, list(blob.kernels), plan, output_copies, state,
                          options.dim_bounds, arena_size)
    # 7. Serialize the module.
    module = build_module(graph, target, specs, blob, plan, arena_size, program, options.debug_info)
    module.memory_plan.pool_size = pool_size(graph, plan, target, options)
    module.memory_plan.buffers += [state_buffer(*b) for b in (state.buffers() if state else [])]
    data = write_module(module)
    # 8. Refuse a module too big for the board (bare-metal targets, or when --ram/--flash are given).
    check_board_fit(target, module, len(data), options)
    return data


DEFAULT_POOL_BYTES = 256 << 20  # hosted targets: reserved address space, touched only as used


def pool_size(graph: Graph, plan: MemoryPlanResult, target: Target, options: CompileOptions) -> int:
    """Bytes of run-time pool the module asks for: none when every size is known or bounded."""
    needs_pool = memory_plan_needs_pool(graph, plan) or uses_sequences(graph) or any(
        not v.type.is_static and plan.storage(v) is None for v in graph.outputs)
    if not needs_pool:
        return 0
    if options.pool_bytes is not None:
        return options.pool_bytes
    if target.runtime == "bare-metal":
        unbounded = sorted({sym for s in plan.storages if s.pool for sym in s.length.symbols})
        if not unbounded:
            why = "the model's sequences live" if uses_sequences(graph) else "sizes known only at run time live"
            raise CompileError(f"target {target.name}: {why} in a run-time pool, and a board needs its memory "
                               f"known: give --pool-bytes")
        raise CompileError(f"target {target.name}: sizes depending on {', '.join(unbounded)} have no bound, and a "
                           f"board needs its memory known: bound them (--dim NAME=LO..HI) or give --pool-bytes")
    return DEFAULT_POOL_BYTES


def check_board_fit(target: Target, module: mod.Module, module_bytes: int, options: CompileOptions) -> None:
    bare_metal = target.runtime == "bare-metal"
    ram = options.ram if options.ram is not None else (target.ram_bytes if bare_metal else None)
    flash = options.flash if options.flash is not None else (target.flash_bytes if bare_metal else None)
    check_fit(target, footprint(target, module, module_bytes), ram, flash)


def partition(graph: Graph, plan: MemoryPlanResult | set[int], target: Target | None = None) -> list[Dispatch]:
    """One dispatch per node that needs a kernel, in the order the lowering meets them: a
    control-flow node's bodies in place of the node (their kernels join the one executable).
    `plan`: the memory plan (or just the ids of the nodes it elided). With a `target`, each
    dispatch is as its backend plans it."""
    dispatches: list[Dispatch] = []
    planned = backend_for(target).plan if target is not None else (lambda d, _: d)

    def visit(g: Graph, p: MemoryPlanResult | set[int]) -> None:
        elided = p if isinstance(p, set) else p.elided
        defined = {id(v) for v in g.inputs} | {id(o) for n in g.nodes for o in n.outputs}
        for node in g.nodes:
            if id(node) in elided:
                continue
            if node.op in SEQUENCE_OPS or node.op in (DIM_VALUES, FAIL):
                continue  # VM code, no kernel (vm/sequences.py, vm/lowering.py)
            if bodies(node):
                assert isinstance(p, MemoryPlanResult), "control flow needs the memory plan"
                for body, body_plan in zip(bodies(node), p.regions[id(node)].bodies):
                    visit(body, body_plan)
                continue
            dispatch = dispatch_for(node, f"k{len(dispatches)}_{node.op.lower()}", defined)
            dispatches.append(planned(dispatch, target))

    visit(graph, plan)
    return dispatches


def _spec_key(spec: KernelSpec) -> str:
    return repr((spec.kind, spec.inputs, spec.outputs, sorted(spec.attrs.items()), spec.epilogue))


def deduplicate(specs: list[KernelSpec]) -> tuple[list[KernelSpec], list[int]]:
    """Unique kernels (keeping every source node name) and, per dispatch, its kernel's index."""
    unique: dict[str, int] = {}
    kept: list[KernelSpec] = []
    entry_of = []
    for spec in specs:
        key = _spec_key(spec)
        if key not in unique:
            unique[key] = len(kept)
            kept.append(spec)
        else:
            first = kept[unique[key]]
            ops = dict(zip(spec.source_nodes, spec.source_ops)) | dict(zip(first.source_nodes, first.source_ops))
            nodes = tuple(dict.fromkeys(first.source_nodes + spec.source_nodes))
            kept[unique[key]] = dataclasses.replace(first, source_nodes=nodes,
                                                    source_ops=tuple(ops.get(n, "") for n in nodes))
        entry_of.append(unique[key])
    return kept, entry_of


def reserve_output_copies(graph: Graph, plan: MemoryPlanResult) -> tuple[int, dict[int, int]]:
    """Outputs that are graph inputs or constants are copied into arena space reserved past the plan."""
    arena = plan.arena_size
    copies: dict[int, int] = {}
    for v in graph.outputs:
        if is_sequence(v.type) or plan.storage(v) is not None or id(v) in copies or not v.type.is_static:
            continue  # (symbolic: copied into a pool block by the lowering)
        copies[id(v)] = arena
        arena += (v.type.num_bytes + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
    return arena, copies


def _constant_bytes(v: Value) -> bytes:
    """A constant's bytes in the module: raw little-endian elements, or packed strings."""
    if v.type.dtype == DType.string:
        return pack_strings(v.const).tobytes()
    return v.const.astype(v.type.dtype.numpy, copy=False).tobytes()


def _sig(name: str, v, quantization: dict[str, tuple[float, int]] | None = None) -> mod.TensorSig:
    if is_sequence(v.type):  # a packed buffer of any length (docs/sequences.md)
        t = v.type
        return mod.TensorSig(name, DType.u8, (-1,), dim_names=(f"{name} bytes",), kind=t.kind,
                             element_dtype=t.dtype, element_rank=-1 if t.rank is None else t.rank)
    scale, zero_point = (quantization or {}).get(name, (None, None))
    quant = ((float(scale),), (int(zero_point),)) if scale is not None else ((), ())
    shape = tuple(d if isinstance(d, int) else -1 for d in v.type.shape)
    dim_names = tuple("" if isinstance(d, int) else str(d) for d in v.type.shape) if not v.type.is_static else ()
    return mod.TensorSig(name, v.type.dtype, shape, *quant, dim_names=dim_names)


def build_module(graph: Graph, target: Target, specs: list[KernelSpec], blob: ExecutableBlob,
                 plan: MemoryPlanResult, arena_size: int, program: HostProgram, debug_info: bool) -> mod.Module:
    output_names = graph.output_names or [v.name for v in graph.outputs]
    function = mod.Function(
        name="main",
        inputs=[_sig(v.name, v, graph.quantization) for v in graph.inputs],
        outputs=[_sig(name, v, graph.quantization) for name, v in zip(output_names, graph.outputs)],
        i64_register_count=program.i64_register_count,
        ref_register_count=program.ref_register_count,
        bytecode=program.bytecode,
        i64_input_count=program.i64_input_count,
        i64_output_count=program.i64_output_count,
    )
    constants = [mod.Constant(v.name, _constant_bytes(v)) for v in program.constants]
    offsets = blob.entry_offsets or (0,) * len(blob.kernels)  # flat: where each kernel starts in the code
    # A dynamic kernel's lengths depend on its push constants: its guard checks them at each dispatch.
    entry_points = [mod.EntryPoint(k.name, len(k.binding_min_lengths), len(k.push_constants),
                                   [n if isinstance(n, int) else 0 for n in k.binding_min_lengths], offset)
                    for k, offset in zip(blob.kernels, offsets)]
    executable = mod.Executable(blob.arch, entry_points, blob.code, blob.format, KERNEL_ABI_VERSION)
    buffers = [mod.PlannedBuffer(s.name, s.offset, s.size) for s in plan.storages if not s.pool]
    debug = [mod.EntryPointDebug(0, i, list(s.source_nodes), list(s.source_ops)) for i, s in enumerate(specs)] \
        if debug_info else None
    return mod.Module(graph.name or "main", [function], constants, [executable],
                      mod.MemoryPlan(arena_size, buffers), debug, messages=program.messages)
