"""The SPIR-V backend's plan step: the dispatch unchanged (plain weight layouts), or a CompileError
naming the node when this backend cannot build it — never a fallback to another backend."""
from __future__ import annotations

from iree_py.codegen.dispatch import Dispatch
from iree_py.codegen.spirv.kernels import (DATA_MOVEMENT, FOUR_BYTE_DTYPES, INDEXED, KERNEL_BUILDERS, TYPED,
                                           kernel_symbols, start_kernel)
from iree_py.codegen.spirv.math import BINARY, UNARY
from iree_py.codegen.spirv.nonzero import refusal as nonzero_refusal
from iree_py.codegen.spirv.quantized import refusal as quantized_refusal
from iree_py.codegen.spirv.resize import TAPS
from iree_py.codegen.spirv.topk import DTYPES as TOPK_DTYPES
from iree_py.codegen.spirv.typed_math import UnsupportedStep
from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.ir.resize_math import COORDINATE_MODES, NEAREST_MODES
from iree_py.ir.types import DType
from iree_py.targets import Target

# Every dtype a data-movement kernel copies (1-, 2-, 4- and 8-byte elements; kernels.MOVED_STORAGE).
MOVED_DTYPES = tuple(d for d in DType if d != DType.string)
# A capability a shader declares -> the target flag that grants it (targets/vulkan.toml).
CAPABILITY_FLAGS = {"Int64": "shader_int64", "StorageBuffer8BitAccess": "storage_buffer_8bit",
                    "StorageBuffer16BitAccess": "storage_buffer_16bit", "Float64": "shader_float64"}


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
    allowed = MOVED_DTYPES if spec.kind in DATA_MOVEMENT else (DType.f32,)
    checked = list((*spec.inputs, *spec.outputs))
    if spec.kind in ("cumsum", "cumprod"):
        allowed = (DType.f32, DType.f64, DType.i32, DType.i64)
    if spec.kind in ("argmax", "argmin"):  # the i64 index is stored as two words
        checked.pop()
    if spec.kind == "topk":
        allowed, checked = TOPK_DTYPES, checked[:1]  # the indices: i64 as two words; values: the input's
    if spec.kind in ("qmatmul", "qconv", "nonzero_count", "nonzero"):
        why = quantized_refusal(spec) if spec.kind in ("qmatmul", "qconv") else nonzero_refusal(spec)
        if why is not None:
            return why
        checked = []
    if spec.kind == "reduce_rt":  # the i64 axes mask is read as words
        checked.pop(1)
    if spec.kind == "resize_rt":
        why = resize_refusal(spec)
        if why is not None:
            return why
        if spec.attrs["mode"] == "nearest":
            allowed = (*FOUR_BYTE_DTYPES,)  # moved, not blended
    if spec.kind in INDEXED:  # indices: i32, or i64 read as their low words
        if spec.inputs[1].dtype not in (DType.i32, DType.i64):
            return f"{spec.kind} indices of dtype {spec.inputs[1].dtype.value} (it takes i32, i64)"
        checked.pop(1)
    if spec.kind in ("scatter_elements", "scatter_nd") and spec.attrs["reduction"] != "none":
        allowed = (DType.f32, DType.i32)  # computed, not moved
    if spec.kind == "pad" and spec.attrs["mode"] not in ("constant", "edge", "reflect", "symmetric", "wrap"):
        return f"pad mode {spec.attrs['mode']}"
    if spec.kind == "elementwise":
        checked = []  # each dtype as scalars.py stores it: typed_refusal tries the build
    for t in checked:
        if t.dtype not in allowed:
            return f"dtype {t.dtype.value} (it takes {', '.join(d.value for d in allowed)})"
    narrow_move = spec.kind in DATA_MOVEMENT and spec.inputs[0].dtype.itemsize < 4  # 8-/16-bit storage access
    if spec.kind in (*TYPED, "topk", "qmatmul", "qconv", "nonzero_count", "nonzero") or narrow_move:
        why = typed_refusal(spec, target)
        if why is not None:
            return why
    for op in spec.epilogue:
        if op.op not in UNARY and op.op not in BINARY:
            return f"epilogue op {op.op}"
    if spec.kind == "matmul" and any(len(t.shape) < 2 for t in spec.inputs[:2]):
        return "matmul of rank < 2"
    if spec.kind == "lppool" and int(spec.attrs.get("p", 2)) < 1:
        return f"lppool p = {spec.attrs['p']} (it takes integers >= 1)"
    if spec.kind in ("conv2d", "maxpool", "avgpool", "lppool") and len(spec.inputs[0].shape) != 4:
        return f"{spec.kind} on rank {len(spec.inputs[0].shape)} (2-D windows only)"
    words = len(spec.inputs) + len(spec.outputs) + len(kernel_symbols(spec))
    if words * 4 > target.push_constant_bytes:
        return (f"{words} push constant words (one per binding and symbol) exceed the target's "
                f"{target.push_constant_bytes} bytes")
    return None


def resize_refusal(spec: KernelSpec) -> str | None:
    """What of a resize_rt spec the SPIR-V kernel does not build (spirv/resize.py)."""
    attrs = spec.attrs
    if attrs.get("antialias", 0):
        return "resize antialias"
    if attrs["mode"] not in TAPS:
        return f"resize mode {attrs['mode']}"
    if attrs["coordinate_mode"] not in COORDINATE_MODES:
        return f"resize coordinate_transformation_mode {attrs['coordinate_mode']}"
    if attrs["mode"] == "nearest" and attrs["nearest_mode"] not in NEAREST_MODES:
        return f"resize nearest_mode {attrs['nearest_mode']}"
    return None


def typed_refusal(spec: KernelSpec, target: Target) -> str | None:
    """Why a kernel whose bindings hold their dtypes (kernels.TYPED) cannot be built for the
    target: a dtype or step the backend lacks (found by building it), or a capability the target's
    flags do not grant."""
    try:
        b, _ = start_kernel(spec, target)
    except UnsupportedStep as e:
        return f"{spec.kind} {e}"
    for capability in sorted(b.capabilities):
        flag = CAPABILITY_FLAGS.get(capability)
        if flag is None:
            return f"it needs SPIR-V capability {capability}, which no target flag grants"
        if not getattr(target, flag):
            return f"it needs SPIR-V capability {capability}, which target {target.name} lacks ({flag} = false)"
    return None
