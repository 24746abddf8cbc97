"""A SPIR-V binary module writer: result ids, the module's sections in the order the spec fixes
(capabilities, extensions, imports, memory model, entry points, execution modes, names, decorations, types and
globals, functions), and types and constants made once each. Opcodes and enumerants come from the
table generated out of spirv-headers' grammar (spirv_table.py).

Encoding (SPIR-V spec, "Physical Layout"): five header words (magic, version, generator, id bound,
0), then each instruction as (word count << 16) | opcode followed by its operands; a literal string
is its UTF-8 bytes NUL-terminated and padded to a whole word.
"""
from __future__ import annotations

import struct

from iree_py.codegen.spirv.spirv_table import CAPABILITY, MAGIC, OPCODES

SPIRV_VERSION = (1, 3)   # Vulkan 1.1 and later consume it
GENERATOR = 0            # no registered generator id

Operand = int | str
SECTIONS = ("capabilities", "extensions", "imports", "memory_model", "entry_points", "execution_modes", "names",
            "decorations", "globals", "functions")


def encode_string(text: str) -> list[int]:
    data = text.encode() + b"\0"
    data += b"\0" * (-len(data) % 4)
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def encode_instruction(opname: str, operands: tuple[Operand, ...]) -> list[int]:
    words: list[int] = []
    for operand in operands:
        words += encode_string(operand) if isinstance(operand, str) else [operand & 0xFFFFFFFF]
    return [((len(words) + 1) << 16) | OPCODES[opname], *words]


class SpirvModule:
    """One SPIR-V module under construction. `emit(section, opname, *operands)` appends an
    instruction; `type_*` and `constant` return the id of a type or constant, made on first use."""

    def __init__(self) -> None:
        self.bound = 1
        self.sections: dict[str, list[int]] = {name: [] for name in SECTIONS}
        self._types: dict[tuple, int] = {}
        self._constants: dict[tuple, int] = {}
        self._declared: set[tuple[str, str]] = set()

    def require(self, capability: str, extension: str = "") -> None:
        """OpCapability `capability` (and OpExtension `extension`), declared once each."""
        if ("capability", capability) not in self._declared:
            self._declared.add(("capability", capability))
            self.emit("capabilities", "OpCapability", CAPABILITY[capability])
        if extension and ("extension", extension) not in self._declared:
            self._declared.add(("extension", extension))
            self.emit("extensions", "OpExtension", extension)

    @property
    def capabilities(self) -> set[str]:
        return {name for kind, name in self._declared if kind == "capability"}

    def new_id(self) -> int:
        self.bound += 1
        return self.bound - 1

    def emit(self, section: str, opname: str, *operands: Operand) -> None:
        self.sections[section] += encode_instruction(opname, operands)

    # --- types ---------------------------------------------------------------------------------
    def _type(self, key: tuple, opname: str, *operands: Operand) -> int:
        if key not in self._types:
            self._types[key] = self.new_id()
            self.emit("globals", opname, self._types[key], *operands)
        return self._types[key]

    def type_void(self) -> int:
        return self._type(("void",), "OpTypeVoid")

    def type_bool(self) -> int:
        return self._type(("bool",), "OpTypeBool")

    def type_int(self, bits: int = 32, signed: bool = True) -> int:
        return self._type(("int", bits, signed), "OpTypeInt", bits, int(signed))

    def type_float(self, bits: int = 32) -> int:
        return self._type(("float", bits), "OpTypeFloat", bits)

    def type_vector(self, component: int, count: int) -> int:
        return self._type(("vector", component, count), "OpTypeVector", component, count)

    def type_pointer(self, storage_class: int, pointee: int) -> int:
        return self._type(("pointer", storage_class, pointee), "OpTypePointer", storage_class, pointee)

    def type_function(self, result: int, *params: int) -> int:
        return self._type(("function", result, params), "OpTypeFunction", result, *params)

    def type_runtime_array(self, element: int, stride: int, decorate: "callable") -> int:
        """A runtime array with its ArrayStride (one per element type and stride)."""
        key = ("runtime_array", element, stride)
        if key not in self._types:
            type_id = self._type(key, "OpTypeRuntimeArray", element)
            decorate(type_id, stride)
        return self._types[key]

    def type_struct(self, *members: int) -> int:
        """A new struct type every call: blocks carry their own decorations."""
        type_id = self.new_id()
        self.emit("globals", "OpTypeStruct", type_id, *members)
        return type_id

    # --- constants -----------------------------------------------------------------------------
    def constant(self, type_id: int, word: int) -> int:
        key = (type_id, word & 0xFFFFFFFF)
        if key not in self._constants:
            self._constants[key] = self.new_id()
            self.emit("globals", "OpConstant", type_id, self._constants[key], word & 0xFFFFFFFF)
        return self._constants[key]

    def constant_wide(self, type_id: int, value: int, bits: int) -> int:
        """A constant of a `bits`-wide integer type: one word, or the low then the high word for 64."""
        words = [(value >> (32 * i)) & 0xFFFFFFFF for i in range(max(1, bits // 32))]
        if len(words) == 1:
            return self.constant(type_id, words[0])
        key = (type_id, *words)
        if key not in self._constants:
            self._constants[key] = self.new_id()
            self.emit("globals", "OpConstant", type_id, self._constants[key], *words)
        return self._constants[key]

    def constant_bool(self, value: bool) -> int:
        key = ("bool", value)
        if key not in self._constants:
            self._constants[key] = self.new_id()
            self.emit("globals", "OpConstantTrue" if value else "OpConstantFalse", self.type_bool(),
                      self._constants[key])
        return self._constants[key]

    # --- output --------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        major, minor = SPIRV_VERSION
        header = [MAGIC, (major << 16) | (minor << 8), GENERATOR, self.bound, 0]
        words = header + [w for name in SECTIONS for w in self.sections[name]]
        return struct.pack(f"<{len(words)}I", *words)


def f32_bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]
