"""How each dtype the typed elementwise kernel takes lives in a SPIR-V shader: the element type of
its storage buffer and the register type it is computed in.

- f32 and f16 compute in f32 (an f16 is widened on load and rounded when stored, as the CPU
  backend's f16 steps: codegen/llvm/elementwise_typed.py); f64 in f64 (the steps exact in double
  precision only: typed_math.F64_NATIVE);
- integers of up to 32 bits compute in i32, 64-bit ones in i64. An 8- or 16-bit integer is kept
  sign- or zero-extended in its i32 register and wrapped back to its width after every step, so
  signed i32 arithmetic on the register gives the narrow type's wrapping results;
- bool is OpTypeBool in registers, one byte (0 or 1) in storage;
- the narrow types (bf16, float8, f4e2m1, f8e8m0: an exact f32 in registers; i4/u4/i2/u2: an i32
  kept wrapped like i8) are their codes in storage, one byte each (bf16: two), converted on load
  and store by narrow.py.

Storage narrower than 32 bits needs 8-/16-bit storage access and 64-bit integers need Int64: the
builder declares the capability when a shader first uses the type, and the plan step refuses a
shader whose capabilities the target's flags do not grant (spirv/plan.py)."""
from __future__ import annotations

from dataclasses import dataclass

from iree_py.codegen.spirv.builder import KernelBuilder, Value, element_bytes
from iree_py.codegen.spirv.narrow import code_to_f32, f32_to_code
from iree_py.ir.narrow_types import NARROW_FLOAT_DTYPES, NARROW_INT_BITS
from iree_py.ir.types import DType


@dataclass(frozen=True)
class Scalar:
    dtype: DType
    storage: str   # the binding's element type (builder.TYPES)
    register: str  # the type values are computed in: f32, f64, i32, i64 or bool
    bits: int      # the dtype's width
    signed: bool

    @property
    def is_float(self) -> bool:
        return self.register in ("f32", "f64")

    @property
    def is_int(self) -> bool:
        return self.register in ("i32", "i64")

    @property
    def narrow(self) -> bool:
        """An integer kept in a wider register (wrapped after every step)."""
        return self.is_int and self.bits < 32


SCALARS: dict[DType, Scalar] = {s.dtype: s for s in (
    Scalar(DType.f32, "f32", "f32", 32, True),
    Scalar(DType.f16, "f16", "f32", 16, True),
    Scalar(DType.f64, "f64", "f64", 64, True),
    Scalar(DType.i32, "i32", "i32", 32, True),
    Scalar(DType.u32, "i32", "i32", 32, False),
    Scalar(DType.i64, "i64", "i64", 64, True),
    Scalar(DType.u64, "i64", "i64", 64, False),
    Scalar(DType.i16, "u16", "i32", 16, True),
    Scalar(DType.u16, "u16", "i32", 16, False),
    Scalar(DType.i8, "u8", "i32", 8, True),
    Scalar(DType.u8, "u8", "i32", 8, False),
    Scalar(DType.bool, "u8", "bool", 8, False),
    *(Scalar(d, "u16" if d == DType.bf16 else "u8", "f32", 16 if d == DType.bf16 else 8, d != DType.f8e8m0)
      for d in sorted(NARROW_FLOAT_DTYPES, key=lambda d: d.value)),
    *(Scalar(d, "u8", "i32", bits, signed) for d, (bits, signed) in NARROW_INT_BITS.items()),
)}


def scalar(dtype: DType) -> Scalar:
    return SCALARS[dtype]


def wrap(b: KernelBuilder, x: Value, s: Scalar) -> Value:
    """A narrow integer's register brought back to its width: sign-extended from bit `bits - 1`
    (signed) or masked (unsigned). Wider types are already wrapped by their arithmetic."""
    if not s.narrow:
        return x
    if not s.signed:
        return b.op("OpBitwiseAnd", "i32", x, b.int((1 << s.bits) - 1))
    shift = b.int(32 - s.bits)
    return b.op("OpShiftRightArithmetic", "i32", b.op("OpShiftLeftLogical", "i32", x, shift), shift)


def load(b: KernelBuilder, binding: int, index: Value, s: Scalar) -> Value:
    raw = b.load(binding, index)
    if s.storage == "f16":
        return b.op("OpFConvert", "f32", raw)
    if s.storage not in ("u8", "u16"):
        return raw
    # Storage access alone allows no arithmetic or constants of 8/16-bit types: widen first.
    word = b.op("OpUConvert", "u32", raw)
    if s.dtype == DType.bool:
        return b.op("OpINotEqual", "bool", word, b.const(0, "u32"))
    if s.dtype in NARROW_FLOAT_DTYPES:
        return code_to_f32(b, b.op("OpBitcast", "i32", word), s.dtype)
    return wrap(b, b.op("OpBitcast", "i32", word), s)  # zero-extended; sign-extended for a signed type


def store(b: KernelBuilder, binding: int, index: Value, value: Value, s: Scalar) -> None:
    if s.dtype == DType.bool:
        value = b.op("OpUConvert", "u8", b.select(value, b.const(1, "u32"), b.const(0, "u32")))
    elif s.storage == "f16":
        value = b.op("OpFConvert", "f16", value)
    elif s.storage in ("u8", "u16"):
        if s.dtype in NARROW_FLOAT_DTYPES:
            value = f32_to_code(b, value, s.dtype)  # already one of the format's values: no saturation
        elif s.bits < 8 * element_bytes(s.storage):  # i4/u4/i2/u2: the low bits, the rest zero
            value = b.op("OpBitwiseAnd", "i32", value, b.int((1 << s.bits) - 1))
        value = b.op("OpUConvert", s.storage, b.op("OpBitcast", "u32", value))
    b.store(binding, index, value)
