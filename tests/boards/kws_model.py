"""A keyword-spotting-sized CNN built with onnx.helper: 49 frames x 10 MFCC coefficients in,
conv 3x3 (stride 2 in time) -> relu -> conv 3x3 -> relu -> average pool -> flatten -> FC to 12
keywords. About 24 KB of float weights, 16 KB largest activation."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

INPUT_SHAPE = (1, 1, 49, 10)
KEYWORDS = 12


def _initializer(name: str, values: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(values.astype(np.float32), name)


def make_kws_model(path: Path, seed: int = 5) -> Path:
    rng = np.random.default_rng(seed)
    weights = [
        _initializer("conv1_w", rng.normal(0, 0.3, (8, 1, 3, 3))),
        _initializer("conv1_b", rng.normal(0, 0.1, (8,))),
        _initializer("conv2_w", rng.normal(0, 0.12, (16, 8, 3, 3))),
        _initializer("conv2_b", rng.normal(0, 0.1, (16,))),
        _initializer("fc_w", rng.normal(0, 0.05, (400, KEYWORDS))),
        _initializer("fc_b", rng.normal(0, 0.1, (KEYWORDS,))),
    ]
    nodes = [
        helper.make_node("Conv", ["mfcc", "conv1_w", "conv1_b"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         strides=[2, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "conv2_w", "conv2_b"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("AveragePool", ["r2"], ["p"], kernel_shape=[5, 2], strides=[5, 2]),
        helper.make_node("Flatten", ["p"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["scores"]),
    ]
    graph = helper.make_graph(nodes, "kws_cnn",
                              [helper.make_tensor_value_info("mfcc", TensorProto.FLOAT, list(INPUT_SHAPE))],
                              [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, KEYWORDS])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def kws_input(seed: int = 6) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 1, INPUT_SHAPE).astype(np.float32)
