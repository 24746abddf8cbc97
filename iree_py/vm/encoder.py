"""Encode VM bytecode. Opcodes and operand kinds come from the generated ISA table.

    code = BytecodeBuilder()
    loop = code.label()
    code.emit("const_i64", 0, 5)
    code.bind(loop)
    code.emit("cond_br", 0, loop, done)
    bytes_ = code.finish()
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from iree_py.vm.isa_generated import OPS


@dataclass(eq=False)
class Label:
    name: str
    offset: int | None = None


class BytecodeBuilder:
    def __init__(self) -> None:
        self.code = bytearray()
        self._fixups: list[tuple[int, Label]] = []
        self._labels: list[Label] = []

    def label(self, name: str = "") -> Label:
        label = Label(name or f"L{len(self._labels)}")
        self._labels.append(label)
        return label

    def bind(self, label: Label) -> None:
        assert label.offset is None, f"label {label.name} bound twice"
        label.offset = len(self.code)

    def emit(self, op: str, *operands: object) -> None:
        if op not in OPS:
            raise ValueError(f"unknown VM op {op!r}")
        opcode, kinds, _ = OPS[op]
        if len(operands) != len(kinds):
            raise ValueError(f"{op} takes {len(kinds)} operands ({', '.join(n for n, _ in kinds)}), got {len(operands)}")
        self.code.append(opcode)
        for (name, kind), value in zip(kinds, operands):
            self._operand(op, name, kind, value)

    def _operand(self, op: str, name: str, kind: str, value: object) -> None:
        match kind:
            case "ri" | "rr" | "u16":
                self.code += struct.pack("<H", _check_range(op, name, value, 0, 0xFFFF))
            case "u32":
                self.code += struct.pack("<I", _check_range(op, name, value, 0, 0xFFFFFFFF))
            case "imm64":
                self.code += struct.pack("<q", _check_range(op, name, value, -(1 << 63), (1 << 63) - 1))
            case "target":
                assert isinstance(value, Label), f"{op}.{name} takes a Label"
                self._fixups.append((len(self.code), value))
                self.code += b"\0\0\0\0"
            case "list_ri" | "list_rr":
                regs = list(value)  # type: ignore[call-overload]
                self.code.append(_check_range(op, name, len(regs), 0, 0xFF))
                for r in regs:
                    self.code += struct.pack("<H", _check_range(op, name, r, 0, 0xFFFF))
            case _:
                raise AssertionError(f"operand kind {kind} not handled")

    def finish(self) -> bytes:
        for at, label in self._fixups:
            if label.offset is None:
                raise ValueError(f"label {label.name} used but never bound")
            struct.pack_into("<I", self.code, at, label.offset)
        return bytes(self.code)


def _check_range(op: str, name: str, value: object, lo: int, hi: int) -> int:
    if not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{op}.{name} = {value!r} is outside [{lo}, {hi}]")
    return value


def decode(code: bytes) -> list[tuple[int, str, list[object]]]:
    """(offset, op name, operands) for each instruction; used by dump and tests."""
    by_code = {opcode: (name, kinds) for name, (opcode, kinds, _) in OPS.items()}
    out: list[tuple[int, str, list[object]]] = []
    pc = 0
    while pc < len(code):
        start = pc
        name, kinds = by_code[code[pc]]
        pc += 1
        operands: list[object] = []
        for _, kind in kinds:
            if kind in ("ri", "rr", "u16"):
                operands.append(struct.unpack_from("<H", code, pc)[0]); pc += 2
            elif kind in ("u32", "target"):
                operands.append(struct.unpack_from("<I", code, pc)[0]); pc += 4
            elif kind == "imm64":
                operands.append(struct.unpack_from("<q", code, pc)[0]); pc += 8
            else:
                n = code[pc]; pc += 1
                operands.append(list(struct.unpack_from(f"<{n}H", code, pc))); pc += 2 * n
        out.append((start, name, operands))
    return out
