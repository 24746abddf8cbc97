"""The names and quantization of a TFLite model's inputs and outputs, as the module keeps them.

Names: the SignatureDef's names when the model has a signature for the subgraph (the first one,
as the interpreter's default signature runner), otherwise the tensor names. Quantization: the
(scale, zero point) of each int8/uint8 input and output quantized per tensor, so that users can
quantize inputs and dequantize outputs (`module.main.inputs[i].quantization`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from iree_py.frontends.tflite.schema.TensorType import TensorType as TflType

if TYPE_CHECKING:
    from iree_py.frontends.tflite.importer import TfliteContext
    from iree_py.ir.build import NameTable
    from iree_py.ir.graph import Graph

QUANTIZED_IO_TYPES = (TflType.INT8, TflType.UINT8)


def _text(s: Any) -> str:
    if s is None:
        return ""
    return s.decode("utf-8", "replace") if isinstance(s, (bytes, bytearray)) else str(s)


def signature_names(model: Any, subgraph_index: int) -> dict[int, str]:
    """Tensor index -> its name in the model's first SignatureDef over this subgraph ({} if none)."""
    for sig in model.signatureDefs or []:
        if int(sig.subgraphIndex) != subgraph_index:
            continue
        names: dict[int, str] = {}
        for tensor_map in [*(sig.inputs or []), *(sig.outputs or [])]:
            name = _text(tensor_map.name)
            if name:
                names.setdefault(int(tensor_map.tensorIndex), name)
        return names
    return {}


def name_tensors(names: "NameTable", tensor_names: list[str], preferred: dict[int, str]) -> list[str]:
    """Unique value names for the tensors: the signature's names are handed out first, so they keep
    their exact spelling; the other tensors take their own names (suffixed if taken)."""
    result = [""] * len(tensor_names)
    for index in sorted(preferred):
        if 0 <= index < len(tensor_names):
            result[index] = names.fresh(preferred[index])
    for index, name in enumerate(tensor_names):
        if not result[index]:
            result[index] = names.fresh(name)
    return result


def io_quantization(ctx: "TfliteContext", graph: "Graph") -> dict[str, tuple[float, int]]:
    """Signature name -> (scale, zero point) for the int8/uint8 per-tensor quantized inputs/outputs."""
    inputs = {id(v) for v in graph.inputs}
    result: dict[str, tuple[float, int]] = {}
    indices = [*(ctx.subgraph.inputs if ctx.subgraph.inputs is not None else []),
               *(ctx.subgraph.outputs if ctx.subgraph.outputs is not None else [])]
    for index in (int(i) for i in indices):
        t = ctx.tensors[index]
        q = t.quantization
        if t.type not in QUANTIZED_IO_TYPES or q is None or q.scale is None or len(q.scale) != 1:
            continue
        value = ctx.env.get(index)
        is_output = index in [int(i) for i in (ctx.subgraph.outputs if ctx.subgraph.outputs is not None else [])]
        if value is None or not (is_output or id(value) in inputs):
            continue
        zero_point = int(q.zeroPoint[0]) if q.zeroPoint is not None and len(q.zeroPoint) else 0
        result[ctx.tensor_names[index]] = (float(q.scale[0]), zero_point)
    return result
