"""The SPIR-V backend's builder table (kind -> builder; tests/codegen/test_backends.py checks it
against codegen/kernel_kinds.py) and the step that turns one KernelSpec into one shader."""
from __future__ import annotations

import dataclasses
from typing import Callable

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.spirv.argminmax import build_argmax, build_argmin
from iree_py.codegen.spirv.builder import KernelBuilder
from iree_py.codegen.spirv.conv import build_conv2d
from iree_py.codegen.spirv.conv_transpose import build_conv_transpose
from iree_py.codegen.spirv.cumulative import ELEMENT_TYPES as CUMULATIVE_TYPES, build_cumprod, build_cumsum
from iree_py.codegen.spirv.data_movement import build_bitcast, build_concat, build_slice, build_transpose
from iree_py.codegen.spirv.elementwise import build_elementwise, build_expand, tensor_scalars
from iree_py.codegen.spirv.gather_scatter import (build_gather, build_gather_elements, build_gather_nd,
                                                  build_scatter_elements, build_scatter_nd)
from iree_py.codegen.spirv.indexing import Dim
from iree_py.codegen.spirv.matmul import build_matmul
from iree_py.codegen.spirv.nonzero import build_nonzero, build_nonzero_count
from iree_py.codegen.spirv.nonzero import element_types as nonzero_element_types
from iree_py.codegen.spirv.pad import build_pad
from iree_py.codegen.spirv.pool import build_avgpool, build_globalavgpool, build_lppool, build_lrn, build_maxpool
from iree_py.codegen.spirv.quantized import build_qconv, build_qmatmul
from iree_py.codegen.spirv.quantized import element_types as quantized_element_types
from iree_py.codegen.spirv.reduce import build_reduce, build_reduce_rt
from iree_py.codegen.spirv.resize import build_resize_rt
from iree_py.codegen.spirv.topk import build_topk, element_types as topk_element_types
from iree_py.codegen.spirv.softmax import build_hardmax, build_logsoftmax, build_softmax
from iree_py.ir.symbols import Expr, call, dim
from iree_py.ir.types import DType, TensorType
from iree_py.targets import Target

Builder = Callable[[KernelBuilder, KernelSpec], Dim]  # writes the shader body, returns its work items

KERNEL_BUILDERS: dict[str, Builder] = {
    "elementwise": build_elementwise,
    "expand": build_expand,
    "conv2d": build_conv2d,
    "conv_transpose": build_conv_transpose,
    "matmul": build_matmul,
    "maxpool": build_maxpool,
    "avgpool": build_avgpool,
    "lppool": build_lppool,
    "globalavgpool": build_globalavgpool,
    "softmax": build_softmax,
    "logsoftmax": build_logsoftmax,
    "hardmax": build_hardmax,
    "reduce": build_reduce,
    "reduce_rt": build_reduce_rt,
    "resize_rt": build_resize_rt,
    "argmax": build_argmax,
    "argmin": build_argmin,
    "cumsum": build_cumsum,
    "cumprod": build_cumprod,
    "transpose": build_transpose,
    "slice": build_slice,
    "concat": build_concat,
    "bitcast": build_bitcast,
    "gather": build_gather,
    "gather_elements": build_gather_elements,
    "gather_nd": build_gather_nd,
    "scatter_elements": build_scatter_elements,
    "scatter_nd": build_scatter_nd,
    "pad": build_pad,
    "lrn": build_lrn,
    "topk": build_topk,
    "qmatmul": build_qmatmul,
    "qconv": build_qconv,
    "nonzero_count": build_nonzero_count,
    "nonzero": build_nonzero,
}
# Kinds that only move elements: any 1-, 2- or 4-byte dtype, its bits copied through u8, u16 or int
# arrays (MOVED_STORAGE; scatter's reductions compute in f32 or i32: element_types).
DATA_MOVEMENT = ("expand", "transpose", "slice", "concat", "gather", "pad", "gather_elements", "gather_nd",
                 "scatter_elements", "scatter_nd", "bitcast")
# element bytes -> the storage type a data-movement kernel copies them as (1 and 2 bytes need the
# 8-/16-bit storage access: plan.py checks the target grants it)
MOVED_STORAGE = {1: "u8", 2: "u16", 4: "i32"}
# Kinds whose input 1 is an indices tensor (i32, or i64 read as low words), moved by no kernel.
INDEXED = ("gather", "gather_elements", "gather_nd", "scatter_elements", "scatter_nd")
# Kinds whose bindings hold their tensors' dtype (scalars.py, cumulative.py), or that compute in
# double: their shaders may declare capabilities, which plan.typed_refusal checks by building them.
TYPED = ("elementwise", "cumsum", "cumprod", "resize_rt")
FOUR_BYTE_DTYPES = (DType.f32, DType.i32, DType.u32)
# 8-byte elements move as two 32-bit words: the spec gains a trailing axis of 2 (words_spec).
EIGHT_BYTE_DTYPES = (DType.i64, DType.u64, DType.f64)


def words_spec(spec: KernelSpec) -> KernelSpec:
    """A data-movement spec on 8-byte elements as the same move on 32-bit words: every tensor but
    the indices gets a trailing axis of 2 (the element's low and high word), which the move copies
    as it is."""
    if spec.kind not in DATA_MOVEMENT or spec.inputs[0].dtype not in EIGHT_BYTE_DTYPES:
        return spec

    def widen(t: TensorType) -> TensorType:
        return TensorType(DType.i32, (*t.shape, 2))

    inputs = [widen(t) for t in spec.inputs]
    if spec.kind in INDEXED:
        inputs[1] = spec.inputs[1]
    attrs = dict(spec.attrs)
    rank = spec.inputs[0].rank
    if spec.kind == "transpose":
        attrs["perm"] = [*attrs["perm"], rank]
    elif spec.kind == "slice":
        attrs["starts"], attrs["steps"] = [*attrs["starts"], 0], [*attrs["steps"], 1]
    elif spec.kind == "pad":
        pads = list(attrs["pads"])
        attrs["pads"] = [*pads[:rank], 0, *pads[rank:], 0]
        attrs["element_dtype"] = spec.inputs[0].dtype  # the constant's two words
    return dataclasses.replace(spec, inputs=tuple(inputs), outputs=tuple(widen(t) for t in spec.outputs), attrs=attrs)


def kernel_symbols(spec: KernelSpec) -> tuple[str, ...]:
    """The symbols of the spec's shapes, sorted: push constant word (binding count + i) is symbol i."""
    return tuple(sorted(set().union(*(t.symbols for t in (*spec.inputs, *spec.outputs)))))


def element_types(spec: KernelSpec) -> list[str]:
    """Each binding's storage element type: elementwise and cumulative tensors by dtype
    (scalars.py), data movement through int words (a scatter reduction on f32 in floats), argmax's
    i64 result as int words, the rest f32."""
    count = len(spec.inputs) + len(spec.outputs)
    if spec.kind == "elementwise":
        return [s.storage for s in tensor_scalars(spec)]
    if spec.kind in ("cumsum", "cumprod"):
        return [CUMULATIVE_TYPES[t.dtype] for t in (*spec.inputs, *spec.outputs)]
    if spec.kind in ("argmax", "argmin"):
        return ["f32", "i32"]
    if spec.kind == "topk":
        return topk_element_types(spec)
    if spec.kind in ("qmatmul", "qconv"):
        return quantized_element_types(spec)
    if spec.kind in ("nonzero_count", "nonzero"):
        return nonzero_element_types(spec)
    if spec.kind == "reduce_rt":  # the i64 axes mask as int words
        return ["f32", "i32", "f32"]
    if spec.kind == "resize_rt":  # X and Y: f32, or another 4-byte dtype moved (nearest) as int words
        data = "f32" if spec.inputs[0].dtype == DType.f32 else "i32"
        return [data, "f32", "f32", data]
    scatter = spec.kind in ("scatter_elements", "scatter_nd")
    if scatter and spec.attrs["reduction"] != "none" and spec.inputs[0].dtype == DType.f32:
        return ["f32", "i32", "f32", "f32"]
    if spec.kind not in DATA_MOVEMENT:
        return ["f32"] * count
    types = [MOVED_STORAGE[spec.inputs[0].dtype.itemsize]] * count
    if spec.kind in INDEXED:
        types[1] = "i32"
    return types


def start_kernel(spec: KernelSpec, target: Target) -> tuple[KernelBuilder, Dim]:
    """The builder with the spec's shader body written, and the work items it covers."""
    writable = [False] * len(spec.inputs) + [True] * len(spec.outputs)
    b = KernelBuilder(spec.name, element_types(spec), writable, kernel_symbols(spec), target.workgroup_size)
    return b, KERNEL_BUILDERS[spec.kind](b, spec)


def build_kernel(spec: KernelSpec, target: Target) -> tuple[bytes, KernelInfo]:
    original, spec = spec, words_spec(spec)
    symbols = kernel_symbols(spec)
    b, work = start_kernel(spec, target)
    groups = dim(call("min", call("ceildiv", work, target.workgroup_size), target.max_workgroup_count))
    info = KernelInfo(spec.name, (groups, 1, 1), tuple(Expr.of(s) for s in symbols),
                      tuple(dim(t.byte_count) for t in (*original.inputs, *original.outputs)))
    return b.finish(), info
