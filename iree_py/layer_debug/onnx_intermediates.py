"""The ONNX side of layer debugging: the model with every intermediate tensor as an output, and
onnxruntime's values for them."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from iree_py.errors import IreePyError
from iree_py.layer_debug.compare import Layer


def load_onnx(model: str | Path | bytes) -> onnx.ModelProto:
    try:
        if isinstance(model, (bytes, bytearray)):
            return onnx.load_from_string(bytes(model))
        return onnx.load(str(model))
    except Exception as e:  # protobuf's DecodeError and friends: the file is not an ONNX model
        raise IreePyError(f"{model if not isinstance(model, (bytes, bytearray)) else 'model bytes'}: not an ONNX "
                          f"model ({type(e).__name__}: {e})") from None


def expose_intermediates(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[Layer], frozenset[str]]:
    """A copy of `model` whose graph also outputs every node's tensors whose type shape inference
    knows (tensors only: not sequences, optionals or strings); the layers in node order; and the
    tensors given rather than computed (graph inputs, initializers, Constant nodes' outputs), which
    both engines take as they are."""
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(exposed)
    except Exception:  # a model onnx cannot infer still runs: expose what its value_info says
        inferred = exposed
    graph = exposed.graph
    types = {v.name: v.type for v in [*inferred.graph.value_info, *inferred.graph.output]}
    present = {o.name for o in graph.output}
    layers = []
    given = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    for index, node in enumerate(graph.node):
        if node.op_type == "Constant":
            given.update(node.output)
            continue
        kept = []
        for name in node.output:
            t = types.get(name)
            if not name or t is None or not t.HasField("tensor_type") or t.tensor_type.elem_type in (
                    0, onnx.TensorProto.STRING):
                continue
            kept.append(name)
            if name not in present:
                graph.output.append(onnx.helper.make_value_info(name, t))
                present.add(name)
        layers.append(Layer(index, node.name or f"{node.op_type}_{index}", node.op_type, tuple(kept),
                            tuple(i for i in node.input if i)))
    return exposed, layers, frozenset(given)


def run_reference(model: onnx.ModelProto, inputs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """onnxruntime's value of every output of `model`, on one thread."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as e:
        raise IreePyError(f"onnxruntime cannot load the model, so there is no reference: {e}") from None
    names = [i.name for i in session.get_inputs()]
    if len(names) != len(inputs):
        raise IreePyError(f"the model takes {len(names)} inputs ({', '.join(names)}); got {len(inputs)}")
    outputs = session.run(None, dict(zip(names, inputs)))
    return {o.name: np.asarray(v) for o, v in zip(session.get_outputs(), outputs)}
