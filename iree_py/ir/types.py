"""Element types and tensor types of the graph IR."""
from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np


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

    @property
    def numpy(self) -> np.dtype:
        return np.dtype(_NUMPY[self])

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    @property
    def module_code(self) -> int:
        """The DType enum value in flatbuffers/module.fbs."""
        return list(DType).index(self)

    @staticmethod
    def from_numpy(dtype: np.dtype | type) -> "DType":
        name = np.dtype(dtype).name
        for member, numpy_name in _NUMPY.items():
            if numpy_name == name:
                return member
        raise ValueError(f"no iree-py dtype for numpy dtype {name}")


_NUMPY = {
    DType.f32: "float32", DType.f64: "float64", DType.f16: "float16", DType.i8: "int8",
    DType.u8: "uint8", DType.i16: "int16", DType.i32: "int32", DType.i64: "int64", DType.bool: "bool",
    DType.u16: "uint16", DType.u32: "uint32", DType.u64: "uint64",
}

Dim = int | str  # a static size, or a symbol such as "batch"


@dataclass(frozen=True)
class TensorType:
    dtype: DType
    shape: tuple[Dim, ...]

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

    def __str__(self) -> str:
        """`tensor<1x3x224x224xf32>`; a rank-0 tensor prints as `tensor<f32>`."""
        dims = "".join(f"{d}x" for d in self.shape)
        return f"tensor<{dims}{self.dtype.value}>"

    @staticmethod
    def parse(text: str) -> "TensorType":
        if not (text.startswith("tensor<") and text.endswith(">")):
            raise ValueError(f"not a tensor type: {text!r}")
        *dims, dtype = text[len("tensor<"):-1].split("x")
        shape = tuple(int(d) if d.lstrip("-").isdigit() else d for d in dims)
        return TensorType(DType(dtype), shape)
