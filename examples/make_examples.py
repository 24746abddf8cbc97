"""Write the bundled example models (run once; the .onnx and .npy files are committed).

    python examples/make_examples.py

small_cnn.onnx: Conv+BatchNorm+Relu, MaxPool, strided Conv, depthwise Conv+Clip, a residual Add,
GlobalAveragePool, Flatten, Gemm, Softmax on a 1x3x32x32 image (opset 13).
mlp.onnx: Gemm+Relu, Gemm+Tanh, Gemm on a batch of 4 vectors of 64 (opset 9).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent


def _init(name: str, array: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(array.astype(np.float32), name)


def small_cnn(rng: np.random.Generator) -> onnx.ModelProto:
    w = lambda *s: (rng.standard_normal(s) * (2.0 / np.prod(s[1:])) ** 0.5).astype(np.float32)
    inits = [
        _init("c1_w", w(16, 3, 3, 3)), _init("c1_b", rng.standard_normal(16) * 0.1),
        _init("bn_scale", 1 + 0.1 * rng.standard_normal(16)), _init("bn_bias", 0.1 * rng.standard_normal(16)),
        _init("bn_mean", 0.1 * rng.standard_normal(16)), _init("bn_var", 1 + 0.1 * rng.random(16)),
        _init("c2_w", w(32, 16, 3, 3)), _init("c2_b", rng.standard_normal(32) * 0.1),
        _init("dw_w", w(32, 1, 3, 3)), _init("dw_b", rng.standard_normal(32) * 0.1),
        _init("fc_w", w(10, 32)), _init("fc_b", rng.standard_normal(10) * 0.1),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "c1_w", "c1_b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["bn1"], name="bn1"),
        helper.make_node("Relu", ["bn1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "c2_w", "c2_b"], ["c2"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "dw_w", "dw_b"], ["dw"], name="depthwise", pads=[1, 1, 1, 1], group=32),
        helper.make_node("Clip", ["dw", "clip_min", "clip_max"], ["dw6"], name="relu6"),
        helper.make_node("Add", ["dw6", "r2"], ["res"], name="residual"),
        helper.make_node("GlobalAveragePool", ["res"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    inits += [_init("clip_min", np.array(0.0)), _init("clip_max", np.array(6.0))]
    graph = helper.make_graph(nodes, "small_cnn",
                              [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="iree-py examples")


def mlp(rng: np.random.Generator) -> onnx.ModelProto:
    inits = [_init("w1", rng.standard_normal((64, 128)) * 0.1), _init("b1", rng.standard_normal(128) * 0.1),
             _init("w2", rng.standard_normal((128, 64)) * 0.1), _init("b2", rng.standard_normal(64) * 0.1),
             _init("w3", rng.standard_normal((64, 10)) * 0.1), _init("b3", rng.standard_normal(10) * 0.1)]
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], name="fc1"),
        helper.make_node("Relu", ["h1"], ["a1"], name="relu1"),
        helper.make_node("Gemm", ["a1", "w2", "b2"], ["h2"], name="fc2"),
        helper.make_node("Tanh", ["h2"], ["a2"], name="tanh2"),
        helper.make_node("Gemm", ["a2", "w3", "b3"], ["y"], name="fc3"),
    ]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)], producer_name="iree-py examples")


def main() -> None:
    rng = np.random.default_rng(0)
    for name, model, shape in [("small_cnn", small_cnn(rng), (1, 3, 32, 32)), ("mlp", mlp(rng), (4, 64))]:
        onnx.checker.check_model(model)
        onnx.save(model, HERE / f"{name}.onnx")
        np.save(HERE / f"{name}_input.npy", rng.standard_normal(shape).astype(np.float32))


if __name__ == "__main__":
    main()
