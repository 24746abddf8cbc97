"""Single ONNX ops on symbolically shaped inputs: each imports with symbols kept and its numpy
reference equals onnxruntime at two sizes (rtol/atol 1e-5)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from iree_py.frontends.onnx import import_onnx
from iree_py.ir.reference import evaluate

F32 = TensorProto.FLOAT
RNG = np.random.default_rng(7)


def _w(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * 0.5).astype(np.float32)


# name -> (node, input shapes with symbols, initializers, opset, two size bindings)
CASES = {
    "matmul_vector": (helper.make_node("MatMul", ["x", "v"], ["y"]), {"x": ["n", 4]}, {"v": _w(4)}, 17),
    "gemm_trans_b": (helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1, alpha=0.5),
                     {"x": ["n", 4]}, {"w": _w(3, 4), "b": _w(3)}, 17),
    "conv1d_same": (helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2]),
                    {"x": [1, 2, "n"]}, {"w": _w(3, 2, 3)}, 17),
    "conv2d_stride": (helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 0, 1, 0], strides=[2, 1]),
                      {"x": ["b", 2, "n", "m"]}, {"w": _w(3, 2, 3, 2)}, 17),
    "maxpool_ceil": (helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
                     {"x": [1, 2, "n", "m"]}, {}, 17),
    "avgpool": (helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                {"x": [1, 2, "n", "m"]}, {}, 17),
    "softmax_opset11_axis1": (helper.make_node("Softmax", ["x"], ["y"], axis=1), {"x": ["n", 3, "m"]}, {}, 11),
    "layernorm": (helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1),
                  {"x": ["n", "m", 4]}, {"g": _w(4), "b": _w(4)}, 17),
    "flatten": (helper.make_node("Flatten", ["x"], ["y"], axis=2), {"x": ["n", 3, "m", 2]}, {}, 17),
    "transpose": (helper.make_node("Transpose", ["x"], ["y"], perm=[2, 0, 1]), {"x": ["n", 3, "m"]}, {}, 17),
    "squeeze": (helper.make_node("Squeeze", ["x", "axes"], ["y"]), {"x": ["n", 1, "m"]},
                {"axes": np.array([1], np.int64)}, 17),
    "unsqueeze": (helper.make_node("Unsqueeze", ["x", "axes"], ["y"]), {"x": ["n", "m"]},
                  {"axes": np.array([0, 3], np.int64)}, 17),
    "concat": (helper.make_node("Concat", ["x", "x"], ["y"], axis=1), {"x": ["n", "m"]}, {}, 17),
    "slice_negative": (helper.make_node("Slice", ["x", "s", "e", "a"], ["y"]), {"x": ["n", "m"]},
                       {"s": np.array([-2], np.int64), "e": np.array([2**62], np.int64),
                        "a": np.array([1], np.int64)}, 17),
    "gather": (helper.make_node("Gather", ["x", "i"], ["y"], axis=1), {"x": ["n", 5]},
               {"i": np.array([[0, 4], [2, 2]], np.int64)}, 17),
    "split": (helper.make_node("Split", ["x", "s"], ["y", "z"], axis=1), {"x": ["n", 5]},
              {"s": np.array([2, 3], np.int64)}, 17),
    "where": (helper.make_node("Where", ["c", "x", "z"], ["y"]), {"x": ["n", 2]},
              {"c": np.array([True, False]), "z": np.zeros((1, 1), np.float32)}, 17),
    "cast_erf_pow_sqrt": (helper.make_node("Pow", ["x", "two"], ["y"]), {"x": ["n", "m"]},
                          {"two": np.array(2.0, np.float32)}, 17),
    "batchnorm": (helper.make_node("BatchNormalization", ["x", "s", "b", "mu", "var"], ["y"]),
                  {"x": ["n", 2, "m"]}, {"s": _w(2), "b": _w(2), "mu": _w(2), "var": np.abs(_w(2)) + 0.5}, 17),
    "dropout": (helper.make_node("Dropout", ["x"], ["y"]), {"x": ["n", "m"]}, {}, 17),
    "reducemean_keepdims": (helper.make_node("ReduceMean", ["x"], ["y"], axes=[1, 3]), {"x": ["n", 3, "m", 2]}, {}, 13),
    "gru": (helper.make_node("GRU", ["x", "w", "r"], ["y", "h"], hidden_size=3), {"x": ["t", "n", 2]},
            {"w": _w(1, 9, 2), "r": _w(1, 9, 3)}, 17),
    "rnn_reverse": (helper.make_node("RNN", ["x", "w", "r"], ["y", "h"], hidden_size=3, direction="reverse"),
                    {"x": ["t", 2, 2]}, {"w": _w(1, 3, 2), "r": _w(1, 3, 3)}, 17),
    "conv_transpose_stride2": (helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2],
                                                pads=[1, 0, 0, 1], output_padding=[1, 1]),
                               {"x": ["b", 2, "n", "m"]}, {"w": _w(2, 3, 3, 2), "b": _w(3)}, 17),
    "pad_reflect": (helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect"), {"x": ["n", "m"]},
                    {"p": np.array([1, 3, 0, 2], np.int64)}, 17),
}
SIZES = [{"n": 2, "m": 5, "b": 1, "t": 3}, {"n": 7, "m": 4, "b": 2, "t": 1}]


def _model(name: str) -> onnx.ModelProto:
    node, shapes, inits, opset = CASES[name]
    graph = helper.make_graph(
        [node], name, [helper.make_tensor_value_info(k, F32, s) for k, s in shapes.items()],
        [onnx.ValueInfoProto(name=o) for o in node.output],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("name", sorted(CASES))
def test_symbolic_input_matches_onnxruntime(name: str) -> None:
    model = _model(name)
    graph = import_onnx(model)
    assert any(not v.type.is_static for v in graph.outputs), [str(v.type) for v in graph.outputs]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    _, shapes, _, _ = CASES[name]
    for sizes in SIZES:
        arrays = [RNG.standard_normal([sizes[d] if isinstance(d, str) else d for d in s]).astype(np.float32)
                  for s in shapes.values()]
        expected = session.run(None, {k: a for k, a in zip(shapes, arrays)})
        for got, want in zip(evaluate(graph, arrays), expected, strict=True):
            assert got.shape == want.shape, (sizes, got.shape, want.shape)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
