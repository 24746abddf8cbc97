"""Element types and tensor types of the graph IR."""
from __future__ import annotations

import enum
from dataclasses import dataclass

import ml_dtypes  # noqa: F401  (registers bfloat16, float8_*, int4, ... with numpy)
import numpy as np

from iree_py.ir.symbols import Expr, dim, dim_text, parse_dim


class DType(enum.Enum):
    """Element types; the value is the text name and the order matches module.fbs's DType enum."""

    f32 = "f32"
    f64 = "f64"
    f16 = "f16"
    i8 = "i8"
    u8 = "u8"
    i16 = "i16"
    i32 = "i32"
    i64 = "i64"
    bool = "bool"
    u16 = "u16"
    u32 = "u32"
    u64 = "u64"
    # storage-only types (iree_py/ir/narrow_types.py): Cast, quantization and data movement
    bf16 = "bf16"
    f8e4m3fn = "f8e4m3fn"
    f8e4m3fnuz = "f8e4m3fnuz"
    f8e5m2 = "f8e5m2"
    f8e5m2fnuz = "f8e5m2fnuz"
    i4 = "i4"
    u4 = "u4"
    f4e2m1 = "f4e2m1"
    i2 = "i2"
    u2 = "u2"
    f8e8m0 = "f8e8m0"  # exponent only: 2**(code - 127), 0xFF NaN (narrow_types.py)
    # variable-length UTF-8 strings (docs/strings.md): numpy object arrays in Python; at run time one
    # packed buffer of N+1 i64 offsets and the bytes. Only Equal (StringEqual) takes them.
    string = "string"

    @property
    def numpy(self) -> np.dtype:
        return np.dtype(_NUMPY[self])

    @property
    def itemsize(self) -> int:
        """Bytes per element; a string element counts as its 8-byte offset (its bytes vary)."""
        return 8 if self is DType.string else self.numpy.itemsize

    @property
    def module_code(self) -> int:
        """The DType enum value in flatbuffers/module.fbs."""
        return list(DType).index(self)

    @staticmethod
    def from_numpy(dtype: np.dtype | type) -> "DType":
        np_dtype = np.dtype(dtype)
        if np_dtype.kind in "OUS":
            return DType.string
        name = np_dtype.name
        for member, numpy_name in _NUMPY.items():
            if numpy_name == name:
                return member
        raise ValueError(f"no iree-py dtype for numpy dtype {name}")


_NUMPY = {
    DType.f32: "float32", DType.f64: "float64", DType.f16: "float16", DType.i8: "int8",
    DType.u8: "uint8", DType.i16: "int16", DType.i32: "int32", DType.i64: "int64", DType.bool: "bool",
    DType.u16: "uint16", DType.u32: "uint32", DType.u64: "uint64",
    # ml_dtypes (an onnx dependency) registers these with numpy; one element per byte (bf16: two)
    DType.bf16: "bfloat16", DType.f8e4m3fn: "float8_e4m3fn", DType.f8e4m3fnuz: "float8_e4m3fnuz",
    DType.f8e5m2: "float8_e5m2", DType.f8e5m2fnuz: "float8_e5m2fnuz", DType.i4: "int4", DType.u4: "uint4",
    DType.f4e2m1: "float4_e2m1fn", DType.i2: "int2", DType.u2: "uint2", DType.f8e8m0: "float8_e8m0fnu",
    DType.string: "object",
}

Dim = int | Expr  # a static size, or a symbolic one ("batch", "seq + 1"); a str given is made an Expr


@dataclass(frozen=True)
class TensorType:
    dtype: DType
    shape: tuple[Dim, ...]

    def __post_init__(self) -> None:
        if any(not isinstance(d, int) or isinstance(d, bool) for d in self.shape):
            object.__setattr__(self, "shape", tuple(dim(d) for d in self.shape))

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    @property
    def num_elements(self) -> int:
        assert self.is_static, f"{self} has symbolic dims"
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def num_bytes(self) -> int:
        return self.num_elements * self.dtype.itemsize

    @property
    def symbols(self) -> set[str]:
        return set().union(*(d.symbols for d in self.shape if isinstance(d, Expr)))

    @property
    def element_count(self) -> Dim:
        """The number of elements: an int when static, else an Expr."""
        n: Expr | int = 1
        for d in self.shape:
            n = d * n if isinstance(d, Expr) else n * d
        return dim(n)

    @property
    def byte_count(self) -> Dim:
        return dim(self.element_count * self.dtype.itemsize)

    def __str__(self) -> str:
        """`tensor<1x3x224x224xf32>`; a rank-0 tensor prints as `tensor<f32>`."""
        dims = "".join(f"{dim_text(d)}x" for d in self.shape)
        return f"tensor<{dims}{self.dtype.value}>"

    @staticmethod
    def parse(text: str) -> "TensorType":
        if not (text.startswith("tensor<") and text.endswith(">")):
            raise ValueError(f"not a tensor type: {text!r}")
        *dims, dtype = _split_dims(text[len("tensor<"):-1])
        shape = tuple(parse_dim(d) for d in dims)
        return TensorType(DType(dtype), shape)


def _split_dims(body: str) -> list[str]:
    """Split `2x{seq + 1}x{batch}xf32` at the `x`s outside braces."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        depth += (ch == "{") - (ch == "}")
        if ch == "x" and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    return parts


# --- sequences and optionals (docs/sequences.md) ---------------------------------------------------
# At run time a sequence (or optional) is one buffer in the packed layout:
#   i64 count (an optional with no value: -1)
#   count records of SEQ_RECORD_WORDS i64: [data offset from the buffer start, data bytes, rank,
#                                          dim 0 .. dim SEQ_MAX_RANK-1 (unused dims 0)]
#   the elements' data, in element order, packed: element 0 at the end of the records, each next
#   one right after the previous (the entry code checks inputs keep to this).
SEQ_MAX_RANK = 8
SEQ_RECORD_WORDS = 3 + SEQ_MAX_RANK
SEQ_RECORD_BYTES = 8 * SEQ_RECORD_WORDS
SEQ_HEADER_BYTES = 8
SEQ_NONE = -1
SEQUENCE_KINDS = ("sequence", "optional_sequence", "optional_tensor")


@dataclass(frozen=True)
class SequenceType:
    """A sequence of tensors of one element type (`kind` "sequence"), an optional sequence
    ("optional_sequence") or an optional tensor ("optional_tensor": a sequence of at most one).
    `rank` is the elements' rank, or None when they differ (no op may then read one as a tensor);
    element dims are only known at run time."""

    dtype: DType
    rank: int | None
    kind: str = "sequence"

    def __post_init__(self) -> None:
        if self.kind not in SEQUENCE_KINDS:
            raise ValueError(f"unknown sequence kind {self.kind!r}")
        if self.rank is not None and not 0 <= self.rank <= SEQ_MAX_RANK:
            raise ValueError(f"sequence element rank {self.rank} is outside 0..{SEQ_MAX_RANK}")

    @property
    def optional(self) -> bool:
        return self.kind != "sequence"

    # A sequence has no static size and mentions no symbol: generic code (folding, fusion,
    # planning) sees "not static" and leaves it alone.
    is_static = False

    @property
    def symbols(self) -> set[str]:
        return set()

    def __str__(self) -> str:
        rank = "?" if self.rank is None else str(self.rank)
        return f"{self.kind}<{self.dtype.value}, rank {rank}>"


def is_sequence(t: object) -> bool:
    return isinstance(t, SequenceType)
