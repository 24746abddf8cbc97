"""The module (.vmfb) as plain Python data: what the writer serializes and the reader returns.

Mirrors flatbuffers/module.fbs field for field.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from iree_py.ir.types import DType
from iree_py.vm.isa_generated import FORMAT_VERSION


DYNAMIC_DIM = -1  # a TensorSig dim that takes any size (a symbol); dim_names says which
SIG_KINDS = ("tensor", "sequence", "optional_sequence", "optional_tensor")  # module.fbs ValueKind, in order


@dataclass
class TensorSig:
    name: str
    dtype: DType
    shape: tuple[int, ...]              # DYNAMIC_DIM (-1) for a dynamic dim
    scale: tuple[float, ...] = ()       # quantized (int8/uint8) tensors: real = scale * (q - zero_point)
    zero_point: tuple[int, ...] = ()
    dim_names: tuple[str, ...] = ()     # () or one per dim: "" for a static dim, the symbol ("seq + 1") for a dynamic one
    # "tensor", or a packed sequence / optional (docs/sequences.md): then dtype is u8, shape [-1]
    # (the buffer's bytes) and element_dtype / element_rank (-1: elements may differ) describe the elements
    kind: str = "tensor"
    element_dtype: DType | None = None
    element_rank: int = -1

    @property
    def is_dynamic(self) -> bool:
        return DYNAMIC_DIM in self.shape

    @property
    def packed_type_text(self) -> str:
        """A sequence / optional as its user sees it ("sequence<f32, rank 1>", as the IR prints it),
        not as the u8 buffer that carries it; "" for a tensor."""
        if self.kind == "tensor" or self.element_dtype is None:
            return ""
        rank = "?" if self.element_rank < 0 else str(self.element_rank)
        return f"{self.kind}<{self.element_dtype.value}, rank {rank}>"

    @property
    def dynamic_axes(self) -> list[int]:
        return [axis for axis, d in enumerate(self.shape) if d == DYNAMIC_DIM]

    def dim_name(self, axis: int) -> str:
        return self.dim_names[axis] if axis < len(self.dim_names) else ""

    @property
    def quantization(self) -> tuple[float, int] | None:
        """(scale, zero_point) of a per-tensor quantized input/output, else None."""
        if len(self.scale) != 1:
            return None
        return float(self.scale[0]), int(self.zero_point[0]) if self.zero_point else 0


@dataclass
class Function:
    name: str
    inputs: list[TensorSig]
    outputs: list[TensorSig]
    i64_register_count: int
    ref_register_count: int
    bytecode: bytes
    exported: bool = True
    # i64 values `call` passes in i64 registers 0..n-1; for an exported function: its inputs'
    # dynamic dims, input 0's in axis order, then input 1's, ...
    i64_input_count: int = 0
    i64_output_count: int = 0  # i64 values `ret_i64` returns; exported: the outputs' dynamic dims


@dataclass
class Constant:
    name: str
    data: bytes


@dataclass
class EntryPoint:
    name: str
    binding_count: int
    push_constant_count: int
    binding_min_lengths: list[int]
    code_offset: int = 0  # flat executables: where the function starts in `code` (Thumb: | 1)


@dataclass
class Executable:
    arch: str
    entry_points: list[EntryPoint]
    code: bytes
    format: str = "elf"
    kernel_abi: int = 0  # the kernel ABI the code was built for (module.fbs Executable.kernel_abi)


@dataclass
class PlannedBuffer:
    name: str
    offset: int
    size: int


@dataclass
class MemoryPlan:
    arena_size: int
    buffers: list[PlannedBuffer] = field(default_factory=list)
    pool_size: int = 0  # bytes of the pool buffer_alloc takes dynamically shaped values from


@dataclass
class EntryPointDebug:
    executable: int
    entry_point: int
    source_nodes: list[str]
    source_ops: list[str] = field(default_factory=list)  # the IR op of each source node; [] in older modules


@dataclass
class Module:
    name: str
    functions: list[Function]
    constants: list[Constant] = field(default_factory=list)
    executables: list[Executable] = field(default_factory=list)
    memory_plan: MemoryPlan = field(default_factory=lambda: MemoryPlan(0))
    debug_info: list[EntryPointDebug] | None = None  # None: stripped
    format_version: int = FORMAT_VERSION
    # texts of run-time checks: a `check`/`fail` with code MESSAGE_CODE_BASE + i reports messages[i]
    messages: list[str] = field(default_factory=list)


EXECUTABLE_FORMATS = ("elf", "flat", "spirv")  # ExecutableFormat in module.fbs, in order
FILE_IDENTIFIER = b"IRPY"
CONSTANT_ALIGNMENT = 64
MESSAGE_CODE_BASE = 0x10000  # check/fail code of Module.messages[0]
