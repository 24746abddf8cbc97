"""`iree-py dump`: a module as readable text (golden-tested in tests/module/)."""
from __future__ import annotations

import numpy as np

from iree_py.module.model import DYNAMIC_DIM, MESSAGE_CODE_BASE, Module, TensorSig
from iree_py.module.section_sizes import section_sizes
from iree_py.vm.encoder import decode


def _dim(s: TensorSig, axis: int) -> str:
    d = s.shape[axis]
    return f"{{{s.dim_name(axis) or '?'}}}" if d == DYNAMIC_DIM else str(d)


def _sig(s: TensorSig) -> str:
    if s.packed_type_text:
        return f"%{s.name}: {s.packed_type_text}"
    dims = "x".join(_dim(s, axis) for axis in range(len(s.shape)))
    text = f"%{s.name}: {dims}x{s.dtype.value}" if s.shape else f"%{s.name}: {s.dtype.value}"
    if not s.scale:
        return text
    scales = ", ".join(str(np.float32(v)) for v in s.scale)   # the shortest text of each float32 scale
    return f"{text} {{scale {scales}, zero point {', '.join(str(z) for z in s.zero_point) or '0'}}}"


def dump_module(module: Module, data: bytes | None = None, *, code_bytes: bool = False) -> str:
    out: list[str] = [f"module @{module.name} (format version {module.format_version})"]
    if data is not None:
        out.append("")
        out.append(f"sections ({len(data)} bytes in all):")
        for name, size in section_sizes(module, len(data)).items():
            out.append(f"  {name:<12} {size:>10} bytes")
    for fn in module.functions:
        out.append("")
        ins = ", ".join(_sig(s) for s in fn.inputs)
        outs = ", ".join(_sig(s) for s in fn.outputs)
        out.append(f"func {'exported ' if fn.exported else ''}@{fn.name}({ins}) -> ({outs})")
        out.append(f"  registers: {fn.i64_register_count} i64, {fn.ref_register_count} ref; bytecode {len(fn.bytecode)} bytes")
        if fn.i64_input_count or fn.i64_output_count:
            out.append(f"  i64 values: {fn.i64_input_count} in, {fn.i64_output_count} out")
        for offset, op, operands in decode(fn.bytecode):
            out.append(f"  {offset:5d}: {op:<16} {', '.join(_format(op, operands))}")
    for i, exe in enumerate(module.executables):
        out.append("")
        out.append(f"executable #{i} {exe.arch} {exe.format}, {len(exe.code)} bytes of code")
        debug = {d.entry_point: d.source_nodes for d in module.debug_info or [] if d.executable == i}
        for j, ep in enumerate(exe.entry_points):
            nodes = f"  <- {', '.join(debug[j])}" if j in debug else ""
            at = f" at {ep.code_offset:#x}" if exe.format in ("flat", "spirv") else ""  # elf: from the library
            out.append(f"  entry #{j} {ep.name}{at}: {ep.binding_count} bindings {list(ep.binding_min_lengths)} bytes, "
                       f"{ep.push_constant_count} push constants{nodes}")
    out.append("")
    out.append(f"constants: {len(module.constants)}, {sum(len(c.data) for c in module.constants)} bytes")
    for i, c in enumerate(module.constants):
        out.append(f"  #{i} {c.name}: {len(c.data)} bytes")
    out.append("")
    pool = f", pool {module.memory_plan.pool_size} bytes" if module.memory_plan.pool_size else ""
    out.append(f"memory plan: arena {module.memory_plan.arena_size} bytes{pool}")
    for b in module.memory_plan.buffers:
        out.append(f"  [{b.offset:>9}, {b.offset + b.size:>9})  {b.name}")
    if module.messages:
        out.append("")
        out.append(f"messages: {len(module.messages)}")
        for i, text in enumerate(module.messages):
            out.append(f"  {MESSAGE_CODE_BASE + i:#x}: {text}")
    return "\n".join(out) + "\n"


def _format(op: str, operands: list[object]) -> list[str]:
    return [f"[{', '.join(map(str, o))}]" if isinstance(o, list) else str(o) for o in operands]


def executable_files(module: Module) -> dict[str, bytes]:
    """The kernel code a module carries, as files: each SPIR-V entry point's shader as NAME.spv
    (spirv-dis, spirv-val read them), each CPU executable's code as ARCH.elf / ARCH.bin (flat)."""
    files: dict[str, bytes] = {}
    for exe in module.executables:
        if exe.format != "spirv":
            files[f"{exe.arch}.{'bin' if exe.format == 'flat' else 'elf'}"] = bytes(exe.code)
            continue
        starts = [ep.code_offset for ep in exe.entry_points]
        for ep, start, end in zip(exe.entry_points, starts, [*starts[1:], len(exe.code)]):
            files[f"{ep.name}.spv"] = bytes(exe.code[start:end])
    return files

