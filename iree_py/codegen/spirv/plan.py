"""The SPIR-V backend's plan step: the dispatch unchanged (plain weight layouts), or a CompileError
naming the node when this backend cannot build it — never a fallback to another backend."""
from __future__ import annotations

from iree_py.codegen.dispatch import Dispatch
from iree_py.codegen.spirv.elementwise import is_int_expr, supports_expr
from iree_py.codegen.spirv.kernels import DATA_MOVEMENT, EIGHT_BYTE_DTYPES, FOUR_BYTE_DTYPES, KERNEL_BUILDERS, kernel_symbols
from iree_py.codegen.spirv.math import BINARY, UNARY
from iree_py.errors import CompileError
from iree_py.ir.types import DType
from iree_py.targets import Target


def plan(dispatch: Dispatch, target: Target) -> Dispatch:
    why = refusal(dispatch, target)
    if why is not None:
        node = dispatch.node
        raise CompileError(f"node '{node.name}' (op {node.op}): target {target.name} (backend spirv) cannot build "
                           f"kernel kind '{dispatch.spec.kind}': {why}")
    return dispatch


def refusal(dispatch: Dispatch, target: Target) -> str | None:
    """Why the spirv backend cannot build this dispatch (None: it can)."""
    spec = dispatch.spec
    if spec.kind not in KERNEL_BUILDERS:
        return f"the backend has no builder for it (it builds {', '.join(sorted(KERNEL_BUILDERS))})"
    allowed = (*FOUR_BYTE_DTYPES, *EIGHT_BYTE_DTYPES) if spec.kind in DATA_MOVEMENT else (DType.f32,)
    checked = list((*spec.inputs, *spec.outputs))
    if spec.kind == "gather":  # indices: i32, or i64 read as their low words
        if spec.inputs[1].dtype not in (DType.i32, DType.i64):
            return f"gather indices of dtype {spec.inputs[1].dtype.value} (it takes i32, i64)"
        checked.pop(1)
    if spec.kind == "pad" and spec.attrs["mode"] not in ("constant", "edge", "reflect", "symmetric", "wrap"):
        return f"pad mode {spec.attrs['mode']}"
    if spec.kind == "elementwise" and is_int_expr(spec):
        checked = []  # i32 throughout: intmath.py (supports_expr names an op it lacks)
    for t in checked:
        if t.dtype not in allowed:
            return f"dtype {t.dtype.value} (it takes {', '.join(d.value for d in allowed)})"
    if spec.kind == "elementwise":
        return supports_expr(spec)
    for op in spec.epilogue:
        if op.op not in UNARY and op.op not in BINARY:
            return f"epilogue op {op.op}"
    if spec.kind == "matmul" and any(len(t.shape) < 2 for t in spec.inputs[:2]):
        return "matmul of rank < 2"
    if spec.kind in ("conv2d", "maxpool", "avgpool") and len(spec.inputs[0].shape) != 4:
        return f"{spec.kind} on rank {len(spec.inputs[0].shape)} (2-D windows only)"
    words = len(spec.inputs) + len(spec.outputs) + len(kernel_symbols(spec))
    if words * 4 > target.push_constant_bytes:
        return (f"{words} push constant words (one per binding and symbol) exceed the target's "
                f"{target.push_constant_bytes} bytes")
    return None
