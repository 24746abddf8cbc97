"""Serialize a Module to flatbuffer bytes (flatbuffers/module.fbs).

Field slot numbers follow the schema's field order; tests/module/test_schema.py checks the bytes
against flatc's reading of the schema.
"""
from __future__ import annotations

import zlib

import flatbuffers

from iree_py.module.model import (CONSTANT_ALIGNMENT, EXECUTABLE_FORMATS, FILE_IDENTIFIER, Constant,
                                  EntryPoint, EntryPointDebug, Executable, Function, MemoryPlan,
                                  Module, PlannedBuffer, SIG_KINDS, TensorSig)

Offset = int


def write_module(module: Module) -> bytes:
    b = flatbuffers.Builder(1 << 16)
    # Children are written before their parents (flatbuffers build back to front).
    name = b.CreateString(module.name)
    functions = _table_vector(b, [_function(b, f) for f in module.functions])
    constants = _table_vector(b, [_constant(b, c) for c in module.constants])
    executables = _table_vector(b, [_executable(b, e) for e in module.executables])
    memory_plan = _memory_plan(b, module.memory_plan)
    debug = _debug_info(b, module.debug_info) if module.debug_info is not None else None
    messages = _string_vector(b, module.messages) if module.messages else 0
    b.StartObject(8)
    b.PrependUint32Slot(0, module.format_version, 0)
    b.PrependUOffsetTRelativeSlot(1, name, 0)
    b.PrependUOffsetTRelativeSlot(2, functions, 0)
    b.PrependUOffsetTRelativeSlot(3, constants, 0)
    b.PrependUOffsetTRelativeSlot(4, executables, 0)
    b.PrependUOffsetTRelativeSlot(5, memory_plan, 0)
    if debug is not None:
        b.PrependUOffsetTRelativeSlot(6, debug, 0)
    if messages:
        b.PrependUOffsetTRelativeSlot(7, messages, 0)
    b.Finish(b.EndObject(), file_identifier=FILE_IDENTIFIER)
    return bytes(b.Output())


def _table_vector(b: flatbuffers.Builder, offsets: list[Offset]) -> Offset:
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def _string_vector(b: flatbuffers.Builder, strings: list[str]) -> Offset:
    return _table_vector(b, [b.CreateString(s) for s in strings])


def _scalar_vector(b: flatbuffers.Builder, values: list[int], size: int, prepend) -> Offset:
    b.StartVector(size, len(values), size)
    for v in reversed(values):
        prepend(v)
    return b.EndVector()


def _bytes(b: flatbuffers.Builder, data: bytes, alignment: int = 1) -> Offset:
    """A [ubyte] vector whose first byte is `alignment`-aligned from the start of the buffer."""
    b.StartVector(1, len(data), alignment)
    b.head -= len(data)
    b.Bytes[b.head:b.head + len(data)] = data
    return b.EndVector()


def _tensor_sig(b: flatbuffers.Builder, sig: TensorSig) -> Offset:
    name = b.CreateString(sig.name)
    shape = _scalar_vector(b, list(sig.shape), 8, b.PrependInt64)
    scale = _scalar_vector(b, [float(s) for s in sig.scale], 4, b.PrependFloat32) if sig.scale else 0
    zero_point = _scalar_vector(b, [int(z) for z in sig.zero_point], 8, b.PrependInt64) if sig.zero_point else 0
    if sig.dim_names and len(sig.dim_names) != len(sig.shape):
        raise ValueError(f"tensor {sig.name!r}: {len(sig.dim_names)} dim names for shape {list(sig.shape)}")
    # only when some dim has a name: static signatures stay byte-identical
    dim_names = _string_vector(b, list(sig.dim_names)) if any(sig.dim_names) else 0
    b.StartObject(9 if sig.kind != "tensor" else 6)  # tensors: byte-identical to modules before sequences
    b.PrependUOffsetTRelativeSlot(0, name, 0)
    b.PrependUint8Slot(1, sig.dtype.module_code, 0)
    if sig.kind != "tensor":
        if sig.kind not in SIG_KINDS or sig.element_dtype is None:
            raise ValueError(f"value {sig.name!r}: kind {sig.kind!r} needs an element dtype")
        b.PrependUint8Slot(6, SIG_KINDS.index(sig.kind), 0)
        b.PrependUint8Slot(7, sig.element_dtype.module_code, 0)
        b.PrependInt8Slot(8, sig.element_rank, -1)
    b.PrependUOffsetTRelativeSlot(2, shape, 0)
    if scale:
        b.PrependUOffsetTRelativeSlot(3, scale, 0)
    if zero_point:
        b.PrependUOffsetTRelativeSlot(4, zero_point, 0)
    if dim_names:
        b.PrependUOffsetTRelativeSlot(5, dim_names, 0)
    return b.EndObject()


def _function(b: flatbuffers.Builder, f: Function) -> Offset:
    name = b.CreateString(f.name)
    inputs = _table_vector(b, [_tensor_sig(b, s) for s in f.inputs])
    outputs = _table_vector(b, [_tensor_sig(b, s) for s in f.outputs])
    bytecode = _bytes(b, f.bytecode)
    b.StartObject(9)
    b.PrependUOffsetTRelativeSlot(0, name, 0)
    b.PrependBoolSlot(1, f.exported, False)
    b.PrependUOffsetTRelativeSlot(2, inputs, 0)
    b.PrependUOffsetTRelativeSlot(3, outputs, 0)
    b.PrependUint16Slot(4, f.i64_register_count, 0)
    b.PrependUint16Slot(5, f.ref_register_count, 0)
    b.PrependUOffsetTRelativeSlot(6, bytecode, 0)
    b.PrependUint16Slot(7, f.i64_input_count, 0)  # default 0 is not stored: such modules are unchanged
    b.PrependUint16Slot(8, f.i64_output_count, 0)
    return b.EndObject()


def _constant(b: flatbuffers.Builder, c: Constant) -> Offset:
    name = b.CreateString(c.name)
    data = _bytes(b, c.data, CONSTANT_ALIGNMENT)
    b.StartObject(2)
    b.PrependUOffsetTRelativeSlot(0, name, 0)
    b.PrependUOffsetTRelativeSlot(1, data, 0)
    return b.EndObject()


def _entry_point(b: flatbuffers.Builder, e: EntryPoint) -> Offset:
    name = b.CreateString(e.name)
    lengths = _scalar_vector(b, list(e.binding_min_lengths), 8, b.PrependUint64)
    b.StartObject(5)
    b.PrependUOffsetTRelativeSlot(0, name, 0)
    b.PrependUint16Slot(1, e.binding_count, 0)
    b.PrependUint16Slot(2, e.push_constant_count, 0)
    b.PrependUOffsetTRelativeSlot(3, lengths, 0)
    b.PrependUint32Slot(4, e.code_offset, 0)  # default 0 is not stored: elf modules are unchanged
    return b.EndObject()


def _executable(b: flatbuffers.Builder, e: Executable) -> Offset:
    if e.format not in EXECUTABLE_FORMATS:
        raise ValueError(f"executable for {e.arch}: format {e.format!r} is not one of {EXECUTABLE_FORMATS}")
    arch = b.CreateString(e.arch)
    entry_points = _table_vector(b, [_entry_point(b, ep) for ep in e.entry_points])
    code = _bytes(b, e.code, CONSTANT_ALIGNMENT)
    b.StartObject(6)
    b.PrependUOffsetTRelativeSlot(0, arch, 0)
    b.PrependUint8Slot(1, EXECUTABLE_FORMATS.index(e.format), 0)
    b.PrependUOffsetTRelativeSlot(2, entry_points, 0)
    b.PrependUOffsetTRelativeSlot(3, code, 0)
    b.PrependUint32Slot(4, zlib.crc32(e.code), 0)  # always derived from the code, never stored in the model
    b.PrependUint32Slot(5, e.kernel_abi, 0)
    return b.EndObject()


def _planned_buffer(b: flatbuffers.Builder, p: PlannedBuffer) -> Offset:
    name = b.CreateString(p.name)
    b.StartObject(3)
    b.PrependUOffsetTRelativeSlot(0, name, 0)
    b.PrependUint64Slot(1, p.offset, 0)
    b.PrependUint64Slot(2, p.size, 0)
    return b.EndObject()


def _memory_plan(b: flatbuffers.Builder, plan: MemoryPlan) -> Offset:
    buffers = _table_vector(b, [_planned_buffer(b, p) for p in plan.buffers])
    b.StartObject(3)
    b.PrependUint64Slot(0, plan.arena_size, 0)
    b.PrependUOffsetTRelativeSlot(1, buffers, 0)
    b.PrependUint64Slot(2, plan.pool_size, 0)  # default 0 is not stored: static modules are unchanged
    return b.EndObject()


def _entry_point_debug(b: flatbuffers.Builder, d: EntryPointDebug) -> Offset:
    nodes = _string_vector(b, d.source_nodes)
    ops = _string_vector(b, d.source_ops) if d.source_ops else None
    b.StartObject(4)
    b.PrependUint32Slot(0, d.executable, 0)
    b.PrependUint32Slot(1, d.entry_point, 0)
    b.PrependUOffsetTRelativeSlot(2, nodes, 0)
    if ops is not None:
        b.PrependUOffsetTRelativeSlot(3, ops, 0)
    return b.EndObject()


def _debug_info(b: flatbuffers.Builder, entries: list[EntryPointDebug]) -> Offset:
    vec = _table_vector(b, [_entry_point_debug(b, d) for d in entries])
    b.StartObject(1)
    b.PrependUOffsetTRelativeSlot(0, vec, 0)
    return b.EndObject()
