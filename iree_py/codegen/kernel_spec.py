"""What codegen is asked to build: one KernelSpec per dispatch region.

The compiler turns each dispatch region of the graph into a KernelSpec; a backend turns a list of
KernelSpecs into one executable per target (codegen/backend.py; iree_py/codegen/llvm/ for CPUs).
The kinds, with what each takes and reads, are the table of codegen/kernel_kinds.py.

Bindings of a kernel are `inputs` then `outputs`, in order, and a kernel writes its outputs only:
the runtime may bind a module constant or a caller's input as any input, and the dispatch guard
refuses a dispatch that marks an output read-only (codegen/llvm/dispatch_guard.py). Every tensor
is dense, row-major.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from iree_py.ir.symbols import Expr as SymExpr
from iree_py.ir.types import DType, TensorType

# Elementwise ops an Expr or an epilogue may use, with the attributes they read.
# Gelu is the exact (erf) form, GeluTanh ONNX's approximate="tanh"; Round is half to even.
UNARY_OPS = {"Relu": (), "LeakyRelu": ("alpha",), "Sigmoid": (), "Tanh": (), "RationalSigmoid": (), "RationalTanh": (),
             "Clip": ("min", "max"),
             "Neg": (), "Exp": (), "Sqrt": (), "Abs": (),
             "Log": (), "Reciprocal": (), "Floor": (), "Ceil": (), "Round": (), "Sign": (), "Erf": (),
             "Softplus": (), "Softsign": (), "HardSigmoid": ("alpha", "beta"), "HardSwish": (), "Elu": ("alpha",),
             "Selu": ("alpha", "gamma"), "Celu": ("alpha",), "ThresholdedRelu": ("alpha",), "Mish": (),
             "Gelu": (), "GeluTanh": (),
             "Sin": (), "Cos": (), "Tan": (), "Atan": (), "Asin": (), "Acos": (),
             "Sinh": (), "Cosh": (), "Asinh": (), "Acosh": (), "Atanh": ()}
# PRelu(x, slope); Mod is C fmod (ONNX fmod=1); Min/Max are the two-operand forms.
BINARY_OPS = ("Add", "Sub", "Mul", "Div", "Pow", "Min", "Max", "PRelu", "Mod")

# An Expr (the elementwise kernel, every dtype: codegen/llvm/elementwise_typed.py) also takes these:
# Cast converts to the step's dtype; comparisons give bool; And/Or/Xor/Not take bools; FloorMod has
# the divisor's sign; Where(cond, x, y); BitwiseAnd/Or/Xor take integers.
EXPR_UNARY_OPS = {**UNARY_OPS, "Cast": (), "Not": (), "IsNaN": (), "IsInf": ("detect_negative", "detect_positive")}
EXPR_BINARY_OPS = (*BINARY_OPS, "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor",
                   "ShiftLeft", "ShiftRight", "FloorMod", "BitwiseAnd", "BitwiseOr", "BitwiseXor")
EXPR_TERNARY_OPS = ("Where",)


@dataclass(frozen=True)
class ExprStep:
    """One elementwise op. Arguments are ("in", i) for kernel input i or ("step", j) for the
    result of an earlier step j. `dtype`: the element type of the step's result (None: the
    dtype of its first argument); integer ops follow docs/ir.md, f16 steps compute in f32 and
    round to f16 only when stored or Cast."""

    op: str
    args: tuple[tuple[str, int], ...]
    attrs: tuple[tuple[str, float], ...] = ()
    dtype: DType | None = None


@dataclass(frozen=True)
class Expr:
    """A DAG of elementwise ops over the kernel's inputs; the last step is the output."""

    steps: tuple[ExprStep, ...]


@dataclass(frozen=True)
class EpilogueOp:
    """An elementwise op applied to a conv2d/matmul result before it is stored.

    Unary ops read attrs only. Binary ops combine the running value with kernel input `operand`:
    value = op(value, operand), or op(operand, value) when `operand_first`. `operand_kind` says how
    the operand lines up with the output:
      "scalar"  one element for the whole output
      "channel" one element per output channel (conv2d: axis 1 of [N,M,OH,OW]; matmul: the last axis, N)
      "full"    same shape as the output
    """

    op: str
    attrs: tuple[tuple[str, float], ...] = ()
    operand: int | None = None
    operand_kind: str | None = None
    operand_first: bool = False


@dataclass(frozen=True)
class KernelSpec:
    name: str                      # the entry point's symbol, unique within a module
    kind: str                      # one of KERNEL_KINDS (codegen/kernel_kinds.py)
    inputs: tuple[TensorType, ...]
    outputs: tuple[TensorType, ...]
    attrs: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    epilogue: tuple[EpilogueOp, ...] = ()
    source_nodes: tuple[str, ...] = ()  # source-model node names, for debug info
    source_ops: tuple[str, ...] = ()    # the IR op of each source node (same order; () if not known)


@dataclass(frozen=True)
class KernelInfo:
    """What the VM needs to dispatch a built kernel."""

    name: str
    # Static kernels: ints. Kernels with symbolic dims (codegen/llvm/dims.py): push constant i is the symbol
    # Expr kernel_symbols(spec)[i], and the grid and lengths may be Exprs over those symbols; the VM
    # evaluates them at each dispatch and the kernel's guard recomputes and checks them.
    workgroup_count: tuple[int | SymExpr, int | SymExpr, int | SymExpr]
    push_constants: tuple[int | SymExpr, ...]     # u32 values passed at every dispatch
    binding_min_lengths: tuple[int | SymExpr, ...]  # bytes, one per binding (inputs then outputs)


@dataclass(frozen=True)
class ExecutableBlob:
    """One linked kernel library for one architecture."""

    arch: str                      # "x86_64", "aarch64"
    code: bytes                    # elf: shared object, entry = irp_kernel_library_query; flat: memory image
    kernels: tuple[KernelInfo, ...]  # in entry-point order
    format: str = "elf"            # "elf" | "flat" (docs/microcontrollers.md)
    entry_offsets: tuple[int, ...] = ()  # flat: each kernel's offset in `code` (Thumb: | 1)
