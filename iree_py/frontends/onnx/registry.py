"""THE table of the ONNX frontend: ONNX op type -> converter, built from each family file's
CONVERTERS, and the symbolic converters that run first when a node reads symbolic dims, a known
value or a shape given at run time (SYMBOLIC_CONVERTERS and SHAPE_INPUTS of the same files).

A converter reads the current node through the context (`ctx.input`, `ctx.attr`, `ctx.opset`) and
returns the Values of the node's outputs, in order (a shorter list: the rest are not computed). A
symbolic converter returns None to leave the node to the converter. An op is defined in one file
only: a second definition is an error here, at import.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import onnx

from iree_py.frontends.onnx import (attention, control_flow, conv, detection, dtypes, elementwise, image_ops, indexing,
                                    layout, linear_algebra, logic, loss, normalization, pad, pool, quantization,
                                    quantized_ops, recurrent, reduce, resize, sequences, signal, slicing, sorting,
                                    tensor_ops, text)
from iree_py.frontends.onnx.compose import Converter
from iree_py.frontends.onnx.dtypes import wrap_bf16
from iree_py.frontends.onnx.symbolic import SymbolicConverter, is_known

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext

FAMILIES = (elementwise, logic, dtypes, tensor_ops, layout, slicing, indexing, reduce, sorting, linear_algebra, conv,
            pool, normalization, attention, recurrent, quantization, quantized_ops, resize, pad, image_ops, detection,
            signal, loss, text, control_flow, sequences)


def _one_entry_per_op(table: str) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for family in FAMILIES:
        for op, entry in getattr(family, table, {}).items():
            if op in merged:
                raise AssertionError(f"{table}[{op!r}] is defined twice (again in {family.__name__})")
            merged[op] = entry
    return merged


CONVERTERS: dict[str, Converter] = _one_entry_per_op("CONVERTERS")
wrap_bf16(CONVERTERS)  # bf16 operands computed in f32 (dtypes.py)

# Ops of other domains: domain -> op type -> converter (onnxruntime's contrib ops that its tools write).
DOMAIN_CONVERTERS: dict[str, dict[str, Converter]] = {
    "com.microsoft": recurrent.MICROSOFT_CONVERTERS,
}

SYMBOLIC_CONVERTERS: dict[str, SymbolicConverter] = _one_entry_per_op("SYMBOLIC_CONVERTERS")
# Inputs that determine an op's output shape: a run-time tensor there selects the symbolic converter.
SHAPE_INPUTS: dict[str, tuple[int, ...]] = _one_entry_per_op("SHAPE_INPUTS")


def pick_symbolic_converter(ctx: "OnnxContext", n: onnx.NodeProto) -> SymbolicConverter | None:
    """The symbolic converter for node `n` when it reads a known value, a symbolically shaped tensor
    or a shape given at run time; None for the static path."""
    if n.domain not in ("", "ai.onnx"):
        return None
    found = {i: ctx.lookup(name) for i, name in enumerate(n.input) if name}  # in a body: outer values too
    inputs = {i: v for i, v in found.items() if v is not None}
    known = [v for v in inputs.values() if is_known(ctx, v)]
    convert = SYMBOLIC_CONVERTERS.get(n.op_type)
    if convert is None:
        return None  # the static converter reads any known input as a tensor computed at run time
    symbolic = any(not v.type.is_static for v in inputs.values())
    runtime_shape = any(i in inputs and not inputs[i].is_const for i in SHAPE_INPUTS.get(n.op_type, ()))
    return convert if known or symbolic or runtime_shape else None

