"""Helpers that write one compute shader: storage buffers of 32-bit elements (one binding each, a
runtime array in a Block), the push-constant block, GlobalInvocationId / NumWorkgroups, and
structured control flow (loops with OpLoopMerge, ifs with OpSelectionMerge), over 32-bit values.

The shader's interface (docs/vulkan.md):
- descriptor set 0, binding i: the kernel's binding i (inputs then outputs), `float[]` or `int[]`;
- push constants, u32 words: word i < binding count is binding i's offset in elements from where
  the driver bound it (the driver binds at an aligned offset and passes the rest here); then the
  values of the kernel's symbols (sorted names), one word each;
- workgroups of `local_size` x 1 x 1 invocations; kernels loop over their work with a grid stride,
  so any grid the limits allow covers any size.

Values are `Value`s: a result id and a type name (TYPES: "f32", "f64", "i32", "u32", "i64", "bool"; the
storage-only "u8", "u16" and "f16" of 1- and 2-byte buffers), with Python operators for arithmetic
and signed ordering comparisons, so a kernel reads like the formula it computes. Indices are
signed 32-bit (window arithmetic goes below zero); every size a kernel handles is < 2**31. A type
past 32-bit scalars declares its capability (and extension) the first time a shader uses it, so a
shader asks the device only for what it needs (the driver checks the features at load).
"""
from __future__ import annotations

import struct
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from iree_py.codegen.spirv.spirv_table import (ADDRESSINGMODEL, BUILTIN, CAPABILITY, DECORATION, EXECUTIONMODE,
                                              EXECUTIONMODEL, FUNCTIONCONTROL, GLSL_STD_450, LOOPCONTROL, MEMORYMODEL,
                                              SELECTIONCONTROL, STORAGECLASS)
from iree_py.codegen.spirv.writer import SpirvModule, encode_instruction, f32_bits
from iree_py.ir.symbols import Call, Expr

ELEMENT_TYPES = ("f32", "i32", "u32", "i64", "u8", "u16", "f16", "f64")
# name -> (OpTypeInt/OpTypeFloat, bits, signed, capability, extension); bool is OpTypeBool.
TYPES: dict[str, tuple[str, int, bool, str, str]] = {
    "f32": ("float", 32, True, "", ""),
    "i32": ("int", 32, True, "", ""),
    "u32": ("int", 32, False, "", ""),
    "i64": ("int", 64, True, "Int64", ""),
    "u64": ("int", 64, False, "Int64", ""),
    "u8": ("int", 8, False, "StorageBuffer8BitAccess", "SPV_KHR_8bit_storage"),
    "u16": ("int", 16, False, "StorageBuffer16BitAccess", "SPV_KHR_16bit_storage"),
    "f16": ("float", 16, True, "StorageBuffer16BitAccess", "SPV_KHR_16bit_storage"),
    "f64": ("float", 64, True, "Float64", ""),
}
# The register types arithmetic and comparisons treat as floats (f16 is storage only).
FLOATS = ("f32", "f64")


def element_bytes(ty: str) -> int:
    return TYPES[ty][1] // 8


class _Types(dict):
    """Type name -> id, each type declared (with its capability) on first use."""

    def __init__(self, module: SpirvModule) -> None:
        super().__init__()
        self.module = module

    def __missing__(self, name: str) -> int:
        m = self.module
        if name == "bool":
            self[name] = m.type_bool()
            return self[name]
        kind, bits, signed, capability, extension = TYPES[name]
        if capability:
            m.require(capability, extension)
        self[name] = m.type_float(bits) if kind == "float" else m.type_int(bits, signed)
        return self[name]


class Value:
    def __init__(self, builder: "KernelBuilder", id_: int, ty: str) -> None:
        self.b, self.id, self.ty = builder, id_, ty

    def _arith(self, other: "Value | int | float", int_op: str, float_op: str, swap: bool = False) -> "Value":
        other = self.b.lift(other, self.ty)
        a, c = (other, self) if swap else (self, other)
        return self.b.op(float_op if self.ty in FLOATS else int_op, self.ty, a, c)

    def __add__(self, o): return self._arith(o, "OpIAdd", "OpFAdd")
    def __radd__(self, o): return self._arith(o, "OpIAdd", "OpFAdd", swap=True)
    def __sub__(self, o): return self._arith(o, "OpISub", "OpFSub")
    def __rsub__(self, o): return self._arith(o, "OpISub", "OpFSub", swap=True)
    def __mul__(self, o): return self._arith(o, "OpIMul", "OpFMul")
    def __rmul__(self, o): return self._arith(o, "OpIMul", "OpFMul", swap=True)
    def __truediv__(self, o): return self._arith(o, "OpSDiv", "OpFDiv")
    def __rtruediv__(self, o): return self._arith(o, "OpSDiv", "OpFDiv", swap=True)
    def __floordiv__(self, o): return self._arith(o, "OpSDiv", "OpFDiv")  # indices: never negative here
    def __mod__(self, o): return self._arith(o, "OpSRem", "OpFRem")       # floats: C fmod

    def __neg__(self):
        return self.b.op("OpFNegate" if self.ty in FLOATS else "OpSNegate", self.ty, self)

    def _compare(self, other, int_op: str, float_op: str) -> "Value":
        other = self.b.lift(other, self.ty)
        return self.b.op(float_op if self.ty in FLOATS else int_op, "bool", self, other)

    def __lt__(self, o): return self._compare(o, "OpSLessThan", "OpFOrdLessThan")
    def __le__(self, o): return self._compare(o, "OpSLessThanEqual", "OpFOrdLessThanEqual")
    def __gt__(self, o): return self._compare(o, "OpSGreaterThan", "OpFOrdGreaterThan")
    def __ge__(self, o): return self._compare(o, "OpSGreaterThanEqual", "OpFOrdGreaterThanEqual")
    def eq(self, o): return self._compare(o, "OpIEqual", "OpFOrdEqual")
    def ne(self, o): return self._compare(o, "OpINotEqual", "OpFUnordNotEqual")


@dataclass
class Variable:
    """A Function-storage variable: what a loop carries (accumulators, counters)."""

    builder: "KernelBuilder"
    id: int
    ty: str

    def get(self) -> Value:
        return self.builder.op("OpLoad", self.ty, self)

    def set(self, value: Value | int | float) -> None:
        self.builder.instr("OpStore", self.id, self.builder.lift(value, self.ty).id)


class KernelBuilder:
    def __init__(self, name: str, element_types: list[str], writable: list[bool], symbols: tuple[str, ...],
                 local_size: int) -> None:
        self.name, self.local_size, self.symbols = name, local_size, symbols
        m = self.m = SpirvModule()
        m.emit("capabilities", "OpCapability", CAPABILITY["Shader"])
        self.glsl = m.new_id()
        m.emit("imports", "OpExtInstImport", self.glsl, "GLSL.std.450")
        m.emit("memory_model", "OpMemoryModel", ADDRESSINGMODEL["Logical"], MEMORYMODEL["GLSL450"])
        self.types = _Types(m)
        u32 = self.types["u32"]
        uvec3 = m.type_vector(u32, 3)
        self._bindings = [self._storage_buffer(i, t, w) for i, (t, w) in enumerate(zip(element_types, writable))]
        self._element_types = list(element_types)
        words = len(element_types) + len(symbols)
        self._push = self._push_block(words) if words else None
        self._gid = self._builtin_input(uvec3, "GlobalInvocationId")
        self._nwg = self._builtin_input(uvec3, "NumWorkgroups")
        void = m.type_void()
        self._main = m.new_id()
        self._entry_label = m.new_id()
        self._vars: list[int] = []
        self._body: list[int] = []
        self._function_type = m.type_function(void)
        # Everything read once, at the top of the entry block, so it dominates the whole function.
        self.binding_offsets = [self._element_offset(self._push_word(i), t) for i, t in enumerate(element_types)]
        self.symbol_values = {s: self._push_word(len(element_types) + i) for i, s in enumerate(symbols)}
        self.invocation = self._uvec3_x(self._gid)
        self.invocation_stride = self._uvec3_x(self._nwg) * local_size

    # --- module-level declarations -------------------------------------------------------------
    def _decorate(self, target: int, decoration: str, *operands: int) -> None:
        self.m.emit("decorations", "OpDecorate", target, DECORATION[decoration], *operands)

    def _storage_buffer(self, index: int, element: str, writable: bool) -> int:
        m = self.m
        array = m.type_runtime_array(self.types[element], element_bytes(element),
                                     lambda t, s: self._decorate(t, "ArrayStride", s))
        block = m.type_struct(array)
        self._decorate(block, "Block")
        m.emit("decorations", "OpMemberDecorate", block, 0, DECORATION["Offset"], 0)
        if not writable:
            m.emit("decorations", "OpMemberDecorate", block, 0, DECORATION["NonWritable"])
        var = m.new_id()
        m.emit("globals", "OpVariable", m.type_pointer(STORAGECLASS["StorageBuffer"], block), var,
               STORAGECLASS["StorageBuffer"])
        self._decorate(var, "DescriptorSet", 0)
        self._decorate(var, "Binding", index)
        m.emit("names", "OpName", var, f"binding{index}")
        return var

    def _push_block(self, words: int) -> int:
        m = self.m
        block = m.type_struct(*([self.types["u32"]] * words))
        self._decorate(block, "Block")
        for i in range(words):
            m.emit("decorations", "OpMemberDecorate", block, i, DECORATION["Offset"], 4 * i)
        var = m.new_id()
        m.emit("globals", "OpVariable", m.type_pointer(STORAGECLASS["PushConstant"], block), var,
               STORAGECLASS["PushConstant"])
        m.emit("names", "OpName", var, "push_constants")
        return var

    def _builtin_input(self, type_id: int, builtin: str) -> int:
        var = self.m.new_id()
        self.m.emit("globals", "OpVariable", self.m.type_pointer(STORAGECLASS["Input"], type_id), var,
                    STORAGECLASS["Input"])
        self._decorate(var, "BuiltIn", BUILTIN[builtin])
        return var

    def _push_word(self, index: int) -> Value:
        pointer = self.m.type_pointer(STORAGECLASS["PushConstant"], self.types["u32"])
        address = self.m.new_id()
        self.instr("OpAccessChain", pointer, address, self._push, self.int(index).id)
        word = self.m.new_id()
        self.instr("OpLoad", self.types["u32"], word, address)
        return self.op("OpBitcast", "i32", Value(self, word, "u32"))

    def _element_offset(self, word: Value, element: str) -> Value:
        """The driver's offset in 32-bit words as elements of the binding's type (tensors start
        64-byte aligned, so an 8-byte element's offset is a whole number of elements)."""
        size = element_bytes(element)
        return word if size == 4 else word / 2 if size == 8 else word * (4 // size)

    def _uvec3_x(self, var: int) -> Value:
        uvec3 = self.m.type_vector(self.types["u32"], 3)
        vector, x = self.m.new_id(), self.m.new_id()
        self.instr("OpLoad", uvec3, vector, var)
        self.instr("OpCompositeExtract", self.types["u32"], x, vector, 0)
        return self.op("OpBitcast", "i32", Value(self, x, "u32"))

    # --- instructions --------------------------------------------------------------------------
    def instr(self, opname: str, *operands: int) -> None:
        self._body += encode_instruction(opname, operands)

    def op(self, opname: str, ty: str, *args: "Value | Variable") -> Value:
        result = self.m.new_id()
        self.instr(opname, self.types[ty], result, *(a.id for a in args))
        return Value(self, result, ty)

    def int(self, value: int) -> Value:
        return Value(self, self.m.constant(self.types["i32"], int(value)), "i32")

    def const(self, value: "int | float | bool", ty: str) -> Value:
        """A constant of any register type (an integer's value wraps to its width)."""
        if ty == "f32":
            return self.float(value)
        if ty == "bool":
            return self.bool(bool(value))
        if ty == "f64":
            bits = int.from_bytes(struct.pack("<d", float(value)), "little")
            return Value(self, self.m.constant_wide(self.types[ty], bits, 64), ty)
        return Value(self, self.m.constant_wide(self.types[ty], int(value), TYPES[ty][1]), ty)

    def float(self, value: float) -> Value:
        return Value(self, self.m.constant(self.types["f32"], f32_bits(float(value))), "f32")

    def bool(self, value: bool) -> Value:
        return Value(self, self.m.constant_bool(value), "bool")

    def lift(self, value: "Value | int | float", ty: str) -> Value:
        if isinstance(value, Value):
            if value.ty != ty:
                raise TypeError(f"{value.ty} value where {ty} is expected")
            return value
        return self.const(value, ty)

    def ext(self, name: str, *args: Value) -> Value:
        """A GLSL.std.450 instruction on f32 values (or f64 ones, for the few that take them: FAbs,
        FSign, Floor, Ceil, Sqrt, ...); the result has the first argument's type."""
        ty = args[0].ty
        result = self.m.new_id()
        self.instr("OpExtInst", self.types[ty], result, self.glsl, GLSL_STD_450[name], *(a.id for a in args))
        return Value(self, result, ty)

    def sign_bit(self, x: Value) -> Value:
        """Whether a float's sign bit is set (true for -0.0 too): an f64 read as two u32 words, so
        no Int64 is needed."""
        if x.ty == "f32":
            return self.op("OpBitcast", "i32", x) < 0
        words = self.m.new_id()
        self.instr("OpBitcast", self.m.type_vector(self.types["u32"], 2), words, x.id)
        high = self.m.new_id()
        self.instr("OpCompositeExtract", self.types["u32"], high, words, 1)
        return self.op("OpBitcast", "i32", Value(self, high, "u32")) < 0

    def select(self, cond: Value, if_true: Value, if_false: Value) -> Value:
        return self.op("OpSelect", if_true.ty, cond, if_true, self.lift(if_false, if_true.ty))

    def logical_and(self, a: Value, b: Value) -> Value:
        return self.op("OpLogicalAnd", "bool", a, b)

    def logical_or(self, a: Value, b: Value) -> Value:
        return self.op("OpLogicalOr", "bool", a, b)

    def logical_not(self, a: Value) -> Value:
        return self.op("OpLogicalNot", "bool", a)

    def to_f32(self, value: Value) -> Value:
        return self.op("OpConvertSToF", "f32", value)

    def min(self, a: Value, b: "Value | int | float") -> Value:
        b = self.lift(b, a.ty)
        return self.ext("FMin", a, b) if a.ty == "f32" else self.select(a < b, a, b)

    def max(self, a: Value, b: "Value | int | float") -> Value:
        b = self.lift(b, a.ty)
        return self.ext("FMax", a, b) if a.ty == "f32" else self.select(a > b, a, b)

    def variable(self, ty: str, initial: "Value | int | float") -> Variable:
        var = Variable(self, self.m.new_id(), ty)
        pointer = self.m.type_pointer(STORAGECLASS["Function"], self.types[ty])
        self._vars += encode_instruction("OpVariable", (pointer, var.id, STORAGECLASS["Function"]))
        var.set(initial)
        return var

    # --- buffers -------------------------------------------------------------------------------
    def _element_pointer(self, binding: int, index: "Value | int") -> tuple[int, str]:
        element = self._element_types[binding]
        pointer = self.m.type_pointer(STORAGECLASS["StorageBuffer"], self.types[element])
        address = self.m.new_id()
        at = self.binding_offsets[binding] + self.lift(index, "i32")
        self.instr("OpAccessChain", pointer, address, self._bindings[binding], self.int(0).id, at.id)
        return address, element

    def load(self, binding: int, index: "Value | int") -> Value:
        address, element = self._element_pointer(binding, index)
        result = self.m.new_id()
        self.instr("OpLoad", self.types[element], result, address)
        return Value(self, result, element)

    def store(self, binding: int, index: "Value | int", value: Value) -> None:
        address, element = self._element_pointer(binding, index)
        self.instr("OpStore", address, self.lift(value, element).id)

    # --- dims ----------------------------------------------------------------------------------
    def dim(self, d: "int | Expr") -> Value:
        """An int as a constant; an Expr over the kernel's symbols computed from push constants."""
        if isinstance(d, int):
            return self.int(d)
        constant = d.constant
        if constant is not None:
            return self.int(constant)
        total: Value | None = None
        for monomial, coefficient in d.terms:
            term = self.int(coefficient)
            for atom in monomial:
                term = term * self._atom(atom)
            total = term if total is None else total + term
        return total if total is not None else self.int(0)

    def _atom(self, atom: "str | Call") -> Value:
        if isinstance(atom, str):
            return self.symbol_values[atom]
        a, b = self.dim(atom.args[0]), self.dim(atom.args[1])
        if atom.fn == "floordiv":
            return a / b
        if atom.fn == "ceildiv":
            return (a + b - 1) / b
        return self.min(a, b) if atom.fn == "min" else self.max(a, b)

    # --- structured control flow ---------------------------------------------------------------
    def _label(self, label: int) -> None:
        self.instr("OpLabel", label)

    @contextmanager
    def loop(self, start: "Value | int", end: "Value | int", step: "Value | int" = 1) -> Iterator[Value]:
        """for (i = start; i < end; i += step) — the body is the `with` block."""
        end, step = self.lift(end, "i32"), self.lift(step, "i32")
        counter = self.variable("i32", start)
        header, check, body, cont, merge = (self.m.new_id() for _ in range(5))
        self.instr("OpBranch", header)
        self._label(header)
        self.instr("OpLoopMerge", merge, cont, LOOPCONTROL["None"])
        self.instr("OpBranch", check)
        self._label(check)
        i = counter.get()
        self.instr("OpBranchConditional", (i < end).id, body, merge)
        self._label(body)
        yield i
        self.instr("OpBranch", cont)
        self._label(cont)
        counter.set(counter.get() + step)
        self.instr("OpBranch", header)
        self._label(merge)

    @contextmanager
    def if_(self, cond: Value) -> Iterator[None]:
        then, merge = self.m.new_id(), self.m.new_id()
        self.instr("OpSelectionMerge", merge, SELECTIONCONTROL["None"])
        self.instr("OpBranchConditional", cond.id, then, merge)
        self._label(then)
        yield
        self.instr("OpBranch", merge)
        self._label(merge)

    @contextmanager
    def for_each(self, total: "int | Expr") -> Iterator[Value]:
        """Every index in [0, total), spread over the grid's invocations."""
        with self.loop(self.invocation, self.dim(total), self.invocation_stride) as index:
            yield index

    # --- output --------------------------------------------------------------------------------
    @property
    def capabilities(self) -> set[str]:
        """The capabilities past Shader that the shader declares (the device features it needs)."""
        return self.m.capabilities

    def finish(self) -> bytes:
        m = self.m
        m.emit("entry_points", "OpEntryPoint", EXECUTIONMODEL["GLCompute"], self._main, self.name, self._gid,
               self._nwg)
        m.emit("execution_modes", "OpExecutionMode", self._main, EXECUTIONMODE["LocalSize"], self.local_size, 1, 1)
        m.emit("names", "OpName", self._main, self.name)
        function = encode_instruction("OpFunction", (m.type_void(), self._main, FUNCTIONCONTROL["None"],
                                                     self._function_type))
        function += encode_instruction("OpLabel", (self._entry_label,))
        function += self._vars + self._body
        function += encode_instruction("OpReturn", ()) + encode_instruction("OpFunctionEnd", ())
        m.sections["functions"] = function
        return m.to_bytes()
