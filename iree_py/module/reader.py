"""Read module bytes back into iree_py.module.model.Module (for `iree-py dump` and the bindings).

This reader trusts offsets only as far as Python's bounds checks go: a malformed module raises
ModuleFormatError. The C runtime has its own verifying reader; this one is for tools.
"""
from __future__ import annotations

import struct

from flatbuffers import encode, number_types as N
from flatbuffers.table import Table

from iree_py.errors import ModuleFormatError
from iree_py.ir.types import DType
from iree_py.module.model import (EXECUTABLE_FORMATS, FILE_IDENTIFIER, Constant, EntryPoint,
                                  EntryPointDebug, Executable, Function, MemoryPlan, Module,
                                  PlannedBuffer, SIG_KINDS, TensorSig)


class _T:
    """A flatbuffer table with accessors by field index (slot)."""

    def __init__(self, buf: bytes, pos: int) -> None:
        self.t = Table(buf, pos)

    def _off(self, slot: int) -> int:
        return self.t.Offset(4 + 2 * slot)

    def scalar(self, slot: int, flags, default: int = 0) -> int:
        o = self._off(slot)
        return self.t.Get(flags, o + self.t.Pos) if o else default

    def string(self, slot: int) -> str:
        o = self._off(slot)
        return self.t.String(o + self.t.Pos).decode("utf-8") if o else ""

    def table(self, slot: int) -> "_T | None":
        o = self._off(slot)
        return _T(self.t.Bytes, self.t.Indirect(o + self.t.Pos)) if o else None

    def tables(self, slot: int) -> list["_T"]:
        o = self._off(slot)
        if not o:
            return []
        start, n = self.t.Vector(o), self.t.VectorLen(o)
        return [_T(self.t.Bytes, self.t.Indirect(start + 4 * i)) for i in range(n)]

    def strings(self, slot: int) -> list[str]:
        o = self._off(slot)
        if not o:
            return []
        start, n = self.t.Vector(o), self.t.VectorLen(o)
        return [self.t.String(start + 4 * i).decode("utf-8") for i in range(n)]

    def scalars(self, slot: int, fmt: str) -> list[int]:
        o = self._off(slot)
        if not o:
            return []
        start, n = self.t.Vector(o), self.t.VectorLen(o)
        return list(struct.unpack_from(f"<{n}{fmt}", self.t.Bytes, start)) if n else []

    def bytes_(self, slot: int) -> tuple[bytes, int]:
        """The bytes of a [ubyte] vector and their offset in the buffer."""
        o = self._off(slot)
        if not o:
            return b"", 0
        start, n = self.t.Vector(o), self.t.VectorLen(o)
        return bytes(self.t.Bytes[start:start + n]), start


def read_module(data: bytes | memoryview, payloads: bool = True) -> Module:
    """The whole module; with payloads=False, constants' data and kernel code are left empty
    (b""), so reading the signature of a large model copies no weights."""
    try:
        return _read(data if isinstance(data, bytes) else memoryview(data).cast("B"), payloads)
    except ModuleFormatError:
        raise
    except (struct.error, IndexError, ValueError, UnicodeDecodeError, TypeError, OverflowError) as e:
        # TypeError: flatbuffers' offset reads refuse a number outside the offset's type
        raise ModuleFormatError(f"malformed module: {e}") from e


def constant_offsets(data: bytes) -> list[int]:
    """Byte offset of each constant's data in the module buffer (to check alignment)."""
    root = _root(bytes(data))
    return [c.bytes_(1)[1] for c in root.tables(3)]


def _root(data: bytes | memoryview) -> _T:
    if len(data) < 8:
        raise ModuleFormatError(f"not an iree-py module: {len(data)} bytes is too short")
    if bytes(data[4:8]) != FILE_IDENTIFIER:
        raise ModuleFormatError(f"not an iree-py module: file identifier is {bytes(data[4:8])!r}, "
                                f"expected {FILE_IDENTIFIER!r}")
    return _T(data, encode.Get(N.UOffsetTFlags.packer_type, data, 0))


def _read(data: bytes | memoryview, payloads: bool) -> Module:
    root = _root(data)
    plan = root.table(5)
    debug = root.table(6)
    return Module(
        format_version=root.scalar(0, N.Uint32Flags),
        name=root.string(1),
        functions=[_function(f) for f in root.tables(2)],
        constants=[Constant(c.string(0), c.bytes_(1)[0] if payloads else b"") for c in root.tables(3)],
        executables=[_executable(e, payloads) for e in root.tables(4)],
        memory_plan=MemoryPlan(plan.scalar(0, N.Uint64Flags),
                               [PlannedBuffer(p.string(0), p.scalar(1, N.Uint64Flags), p.scalar(2, N.Uint64Flags))
                                for p in plan.tables(1)], plan.scalar(2, N.Uint64Flags)) if plan else MemoryPlan(0),
        debug_info=[EntryPointDebug(d.scalar(0, N.Uint32Flags), d.scalar(1, N.Uint32Flags), d.strings(2),
                                    d.strings(3)) for d in debug.tables(0)] if debug else None,
        messages=root.strings(7),
    )


def _sig(t: _T) -> TensorSig:
    kind = t.scalar(6, N.Uint8Flags)
    if kind >= len(SIG_KINDS):
        raise ModuleFormatError(f"value {t.string(0)!r}: unknown kind {kind}")
    sig = TensorSig(t.string(0), list(DType)[t.scalar(1, N.Uint8Flags)], tuple(t.scalars(2, "q")),
                    tuple(float(s) for s in t.scalars(3, "f")), tuple(t.scalars(4, "q")), tuple(t.strings(5)))
    if kind:
        sig.kind, sig.element_dtype = SIG_KINDS[kind], list(DType)[t.scalar(7, N.Uint8Flags)]
        sig.element_rank = t.scalar(8, N.Int8Flags, -1)
    return sig


def _function(t: _T) -> Function:
    return Function(name=t.string(0), exported=bool(t.scalar(1, N.BoolFlags)),
                    inputs=[_sig(s) for s in t.tables(2)], outputs=[_sig(s) for s in t.tables(3)],
                    i64_register_count=t.scalar(4, N.Uint16Flags),
                    ref_register_count=t.scalar(5, N.Uint16Flags), bytecode=t.bytes_(6)[0],
                    i64_input_count=t.scalar(7, N.Uint16Flags), i64_output_count=t.scalar(8, N.Uint16Flags))


def _executable(t: _T, payloads: bool) -> Executable:
    entries = [EntryPoint(e.string(0), e.scalar(1, N.Uint16Flags), e.scalar(2, N.Uint16Flags), e.scalars(3, "Q"),
                          e.scalar(4, N.Uint32Flags)) for e in t.tables(2)]
    format_code = t.scalar(1, N.Uint8Flags)
    if format_code >= len(EXECUTABLE_FORMATS):
        raise ModuleFormatError(f"executable for {t.string(0)}: unknown format {format_code}; "
                                f"known: {', '.join(f'{i} = {n}' for i, n in enumerate(EXECUTABLE_FORMATS))}")
    return Executable(arch=t.string(0), format=EXECUTABLE_FORMATS[format_code],
                      entry_points=entries, code=t.bytes_(3)[0] if payloads else b"", kernel_abi=t.scalar(5, N.Uint32Flags))
