"""The TFLite side of layer debugging: the model with every operator's output tensor as an output of
subgraph 0, and LiteRT's values for them (the interpreter with experimental_preserve_all_tensors).

No layout mapping is needed: the TFLite frontend keeps every TFLite tensor in NHWC (an op that
computes in NCHW transposes its result back, iree_py/frontends/tflite/layout.py), so each exposed
output has the shape and layout of the interpreter's tensor. Exposing a tensor keeps that
transpose, as exposing any value keeps it out of fusion."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import flatbuffers
import numpy as np

from iree_py.errors import IreePyError
from iree_py.frontends.tflite import reader
from iree_py.frontends.tflite.importer import NUMPY_OF
from iree_py.frontends.tflite.schema.Model import ModelT
from iree_py.layer_debug.compare import Layer

QUANTIZED = {np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16)}


@dataclass(frozen=True)
class TfliteIntermediates:
    exposed: bytes                 # the model with the intermediates as outputs
    layers: list[Layer]
    given: frozenset[str]          # model inputs and constants: the same in both engines
    output_keys: list[str]         # the exposed model's outputs, in order, as the layers name them
    tensor_of: dict[str, int]      # layer name of a tensor -> its index in subgraph 0
    quantized: bool                # the model has 8/16-bit integer tensors


def load_tflite(model: str | Path | bytes) -> tuple[bytes, ModelT]:
    """The model's bytes and its unpacked flatbuffer."""
    model_t, source = reader.read_model(model)  # a CompileError (an IreePyError) names the file and its fault
    if not model_t.subgraphs:
        raise IreePyError(f"{source}: the model has no subgraphs")
    return (bytes(model) if isinstance(model, (bytes, bytearray)) else Path(model).read_bytes()), model_t


def _tensor_keys(model_t: ModelT) -> list[str]:
    """A name per tensor of subgraph 0: the last ';'-separated part of its own (the converter joins the
    names of the ops it fused with ';'), made unique with #INDEX where that repeats."""
    names = [_text(t.name).rsplit(";", 1)[-1] or f"tensor_{i}" for i, t in enumerate(model_t.subgraphs[0].tensors or [])]
    seen = Counter(names)
    return [n if seen[n] == 1 else f"{n}#{i}" for i, n in enumerate(names)]


def _text(s: object) -> str:
    if s is None:
        return ""
    return s.decode("utf-8", "replace") if isinstance(s, (bytes, bytearray)) else str(s)


def expose_intermediates(model_t: ModelT) -> TfliteIntermediates:
    """Every operator of subgraph 0, in order, and the model with each operator's output tensors of a
    numeric type (not variables) as outputs too."""
    sub = model_t.subgraphs[0]
    tensors = sub.tensors or []
    keys = _tensor_keys(model_t)
    outputs = [int(i) for i in (sub.outputs if sub.outputs is not None else [])]
    given = {keys[int(i)] for i in (sub.inputs if sub.inputs is not None else [])}
    given |= {keys[i] for i, t in enumerate(tensors) if t.buffer and reader.buffer_bytes(model_t, t.buffer) is not None}
    layers = []
    quantized = any(np.dtype(NUMPY_OF[t.type]) in QUANTIZED for t in tensors if t.type in NUMPY_OF)
    for index, op in enumerate(sub.operators or []):
        name = reader.operator_name(model_t, op.opcodeIndex)
        kept = []
        for t in (int(i) for i in (op.outputs if op.outputs is not None else [])):
            if t < 0 or tensors[t].type not in NUMPY_OF or tensors[t].isVariable:
                continue
            kept.append(keys[t])
            if t not in outputs:
                outputs.append(t)
        inputs = tuple(keys[int(i)] for i in (op.inputs if op.inputs is not None else []) if int(i) >= 0)
        layers.append(Layer(index, f"{name.lower()}_{index}", name, tuple(kept), inputs))
    sub.outputs = outputs
    builder = flatbuffers.Builder(1 << 20)
    builder.Finish(model_t.Pack(builder), file_identifier=reader.IDENTIFIER)
    return TfliteIntermediates(bytes(builder.Output()), layers, frozenset(given), [keys[i] for i in outputs],
                               {k: i for i, k in enumerate(keys)}, quantized)


def run_reference(data: bytes, found: TfliteIntermediates, inputs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """LiteRT's value of every exposed tensor, on one thread, from the original model. Builtin kernels
    without the XNNPACK delegate (a delegate's inner tensors are not kept); for models with
    quantized tensors TFLite's reference kernels, which round as iree-py does."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        raise IreePyError("iree-py debug on a TFLite model needs LiteRT for the reference: pip install ai-edge-litert") \
            from None
    resolver = OpResolverType.BUILTIN_REF if found.quantized else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    try:
        interp = Interpreter(model_content=data, num_threads=1, experimental_op_resolver_type=resolver,
                             experimental_preserve_all_tensors=True)
        interp.allocate_tensors()
    except (RuntimeError, ValueError) as e:
        raise IreePyError(f"LiteRT cannot load the model, so there is no reference: {e}") from None
    details = interp.get_input_details()
    if len(details) != len(inputs):
        raise IreePyError(f"the model takes {len(details)} inputs ({', '.join(d['name'] for d in details)}); "
                          f"got {len(inputs)}")
    try:
        for detail, x in zip(details, inputs):
            interp.set_tensor(detail["index"], x)
        interp.invoke()
    except (RuntimeError, ValueError) as e:
        raise IreePyError(f"LiteRT cannot run the model on these inputs: {e}") from None
    return {key: np.array(interp.get_tensor(found.tensor_of[key])) for key in found.output_keys}
