"""The real architectures shipped in the onnx package's test data, with deterministic weights.

Their weights are stored as ConstantOfShape(value=0.02) nodes; every element equal would hide
indexing bugs, so each such constant is replaced by an initializer of the same shape whose elements
are the original value times a random factor in [0.5, 1.5] (same sign, so BatchNorm variances stay
positive and activations keep the scale the model was built with).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

LIGHT_DIR = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"


def light_model(name: str, seed: int = 0) -> onnx.ModelProto:
    m = onnx.load(str(LIGHT_DIR / f"light_{name}.onnx"))
    rng = np.random.default_rng(seed)
    inits = {i.name: i for i in m.graph.initializer}
    keep = []
    for n in m.graph.node:
        if n.op_type != "ConstantOfShape":
            keep.append(n)
            continue
        shape = numpy_helper.to_array(inits[n.input[0]]).astype(np.int64)
        value = numpy_helper.to_array(n.attribute[0].t).reshape(-1)[0]
        data = (value * rng.uniform(0.5, 1.5, size=shape)).astype(np.float32)
        m.graph.initializer.append(numpy_helper.from_array(data, n.output[0]))
    del m.graph.node[:]
    m.graph.node.extend(keep)
    return m


def with_logits(m: onnx.ModelProto) -> onnx.ModelProto:
    """Most of these models end in a Softmax that the random weights saturate: its output is one-hot,
    so comparing it checks only the arg-max. Expose the last Softmax's input (the logits) as a second
    output, so every value the network computes is compared."""
    softmaxes = [n for n in m.graph.node if n.op_type == "Softmax"]
    if not softmaxes:
        return m
    logits = softmaxes[-1].input[0]
    out = onnx.ModelProto()
    out.CopyFrom(m)
    out.graph.output.append(onnx.helper.make_empty_tensor_value_info(logits))
    return out


def data_input(m: onnx.ModelProto, seed: int = 1) -> np.ndarray:
    inits = {i.name for i in m.graph.initializer}
    (x,) = [i for i in m.graph.input if i.name not in inits]
    shape = [d.dim_value for d in x.type.tensor_type.shape.dim]
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
