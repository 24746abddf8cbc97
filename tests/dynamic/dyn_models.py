"""ONNX models with symbolic input dims (opset 17, fixed seeds) for the dynamic-shape tests.

mlp               x [batch, 16] -> Gemm -> Relu -> Gemm                               (batch)
encoder_block     x [batch, seq, 16], mask [batch, seq] -> one transformer encoder block (batch, seq)
conv_lstm         audio [1, 8, T], h0/c0 [1, 1, 12] -> Conv1d -> Relu -> LSTM         (T)
image_net         image [1, 3, height, width] -> Conv s2 -> MaxPool -> Conv -> GAP -> Gemm (height, width)

Each generator returns (model, make_inputs) where make_inputs(sizes: dict) gives the input arrays.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
Inputs = Callable[[dict[str, int]], list[np.ndarray]]


def _weight(rng: np.random.Generator, name: str, shape: tuple[int, ...], scale: float = 0.3) -> onnx.TensorProto:
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def _ints(name: str, values: list[int]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _model(nodes: list, inputs: list, outputs: list, initializers: list, name: str) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def mlp() -> tuple[onnx.ModelProto, Inputs]:
    rng = np.random.default_rng(1)
    inits = [_weight(rng, "w1", (16, 32)), _weight(rng, "b1", (32,)), _weight(rng, "w2", (32, 4)),
             _weight(rng, "b2", (4,))]
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])], inits, "mlp")

    def inputs(sizes: dict[str, int]) -> list[np.ndarray]:
        r = np.random.default_rng(sizes["batch"])
        return [r.standard_normal((sizes["batch"], 16)).astype(np.float32)]
    return model, inputs


D, HEADS = 16, 2
HEAD = D // HEADS


def _heads(x: str, prefix: str) -> list:
    """[batch, seq, D] -> [batch, HEADS, seq, HEAD] with the target shape built as torch exports it:
    Shape -> Gather -> Unsqueeze -> Concat -> Reshape, then Transpose."""
    return [
        helper.make_node("Shape", [x], [f"{prefix}_shape"]),
        helper.make_node("Gather", [f"{prefix}_shape", "idx0"], [f"{prefix}_b"], axis=0),
        helper.make_node("Gather", [f"{prefix}_shape", "idx1"], [f"{prefix}_s"], axis=0),
        helper.make_node("Unsqueeze", [f"{prefix}_b", "axes0"], [f"{prefix}_b1"]),
        helper.make_node("Unsqueeze", [f"{prefix}_s", "axes0"], [f"{prefix}_s1"]),
        helper.make_node("Concat", [f"{prefix}_b1", f"{prefix}_s1", "heads_head"], [f"{prefix}_target"], axis=0),
        helper.make_node("Reshape", [x, f"{prefix}_target"], [f"{prefix}_split"]),
        helper.make_node("Transpose", [f"{prefix}_split"], [f"{prefix}_heads"], perm=[0, 2, 1, 3]),
    ]


def encoder_block() -> tuple[onnx.ModelProto, Inputs]:
    rng = np.random.default_rng(2)
    inits = [_weight(rng, n, (D, D)) for n in ("wq", "wk", "wv", "wo")]
    inits += [_weight(rng, "w_ff1", (D, 32)), _weight(rng, "b_ff1", (32,)), _weight(rng, "w_ff2", (32, D)),
              _weight(rng, "b_ff2", (D,)), _weight(rng, "ln1_g", (D,), 1.0), _weight(rng, "ln1_b", (D,)),
              _weight(rng, "ln2_g", (D,), 1.0), _weight(rng, "ln2_b", (D,))]
    inits += [numpy_helper.from_array(np.array(0, np.int64), "idx0"),
              numpy_helper.from_array(np.array(1, np.int64), "idx1"), _ints("axes0", [0]),
              _ints("axes12", [1, 2]), _ints("heads_head", [HEADS, HEAD]), _ints("minus_one", [-1]),
              _ints("d_model", [D]),
              numpy_helper.from_array(np.array(1.0 / np.sqrt(HEAD), np.float32), "scale"),
              numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
              numpy_helper.from_array(np.array(-1e9, np.float32), "neg_big"),
              numpy_helper.from_array(np.array(0.5, np.float32), "half"),
              numpy_helper.from_array(np.array(1.0, np.float32), "one"),
              numpy_helper.from_array(np.array(np.sqrt(2.0), np.float32), "sqrt2"),
              numpy_helper.from_array(np.array(1, np.int64), "one_i")]
    nodes = [helper.make_node("MatMul", ["x", w], [n]) for w, n in (("wq", "q"), ("wk", "k"), ("wv", "v"))]
    for prefix in ("q", "k", "v"):
        nodes += _heads(prefix, prefix)
    nodes += [
        helper.make_node("Transpose", ["k_heads"], ["k_t"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q_heads", "k_t"], ["scores_raw"]),
        helper.make_node("Mul", ["scores_raw", "scale"], ["scores"]),
        # mask [batch, seq] (bool) -> additive [batch, 1, 1, seq] -> expanded to the scores' shape
        helper.make_node("Unsqueeze", ["mask", "axes12"], ["mask4"]),
        helper.make_node("Where", ["mask4", "zero", "neg_big"], ["bias4"]),
        helper.make_node("Shape", ["scores"], ["scores_shape"]),
        helper.make_node("Equal", ["scores_shape", "minus_one"], ["is_unknown"]),
        helper.make_node("ConstantOfShape", ["four"], ["ones4"],
                         value=numpy_helper.from_array(np.array([1], np.int64))),
        helper.make_node("Where", ["is_unknown", "ones4", "scores_shape"], ["expand_to"]),
        helper.make_node("Expand", ["bias4", "expand_to"], ["bias"]),
        helper.make_node("Add", ["scores", "bias"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v_heads"], ["ctx_heads"]),
        helper.make_node("Transpose", ["ctx_heads"], ["ctx_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Shape", ["x"], ["x_shape"]),
        helper.make_node("Slice", ["x_shape", "slice_start", "slice_end"], ["x_bs"]),
        helper.make_node("Concat", ["x_bs", "d_model"], ["merge_to"], axis=0),
        helper.make_node("Reshape", ["ctx_t", "merge_to"], ["ctx"]),
        helper.make_node("MatMul", ["ctx", "wo"], ["attn"]),
        helper.make_node("Add", ["x", "attn"], ["res1"]),
        helper.make_node("LayerNormalization", ["res1", "ln1_g", "ln1_b"], ["ln1"], axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["ln1", "w_ff1"], ["ff1_mm"]),
        helper.make_node("Add", ["ff1_mm", "b_ff1"], ["ff1"]),
        # Gelu as torch exports it: 0.5 * x * (1 + erf(x / sqrt(2)))
        helper.make_node("Div", ["ff1", "sqrt2"], ["ff1_s"]),
        helper.make_node("Erf", ["ff1_s"], ["ff1_erf"]),
        helper.make_node("Add", ["ff1_erf", "one"], ["ff1_1p"]),
        helper.make_node("Mul", ["ff1", "ff1_1p"], ["ff1_x"]),
        helper.make_node("Mul", ["ff1_x", "half"], ["gelu"]),
        helper.make_node("MatMul", ["gelu", "w_ff2"], ["ff2_mm"]),
        helper.make_node("Add", ["ff2_mm", "b_ff2"], ["ff2"]),
        helper.make_node("Add", ["ln1", "ff2"], ["res2"]),
        helper.make_node("LayerNormalization", ["res2", "ln2_g", "ln2_b"], ["y"], axis=-1, epsilon=1e-5),
    ]
    inits += [_ints("four", [4]), _ints("slice_start", [0]), _ints("slice_end", [2])]
    inputs_vi = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", D]),
                 helper.make_tensor_value_info("mask", TensorProto.BOOL, ["batch", "seq"])]
    model = _model(nodes, inputs_vi, [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", D])],
                   inits, "encoder_block")

    def inputs(sizes: dict[str, int]) -> list[np.ndarray]:
        b, s = sizes["batch"], sizes["seq"]
        r = np.random.default_rng(100 * b + s)
        mask = np.ones((b, s), bool)
        for i in range(b):
            if i % s:
                mask[i, s - i % s:] = False  # row i masks its last i % seq keys (never all)
        return [r.standard_normal((b, s, D)).astype(np.float32), mask]
    return model, inputs


CONV_IN, CONV_OUT, HIDDEN = 8, 6, 12


def conv_lstm() -> tuple[onnx.ModelProto, Inputs]:
    rng = np.random.default_rng(3)
    inits = [_weight(rng, "conv_w", (CONV_OUT, CONV_IN, 3)), _weight(rng, "conv_b", (CONV_OUT,)),
             _weight(rng, "lstm_w", (1, 4 * HIDDEN, CONV_OUT)), _weight(rng, "lstm_r", (1, 4 * HIDDEN, HIDDEN)),
             _weight(rng, "lstm_b", (1, 8 * HIDDEN), 0.1)]
    nodes = [helper.make_node("Conv", ["audio", "conv_w", "conv_b"], ["conv"], kernel_shape=[3], pads=[1, 1]),
             helper.make_node("Relu", ["conv"], ["relu"]),
             helper.make_node("Transpose", ["relu"], ["frames"], perm=[2, 0, 1]),
             helper.make_node("LSTM", ["frames", "lstm_w", "lstm_r", "lstm_b", "", "h0", "c0"], ["y", "h_n", "c_n"],
                              hidden_size=HIDDEN)]
    state = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 1, HIDDEN])  # noqa: E731
    model = _model(nodes, [helper.make_tensor_value_info("audio", TensorProto.FLOAT, [1, CONV_IN, "T"]),
                           state("h0"), state("c0")],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["T", 1, 1, HIDDEN]), state("h_n"),
                    state("c_n")], inits, "conv_lstm")

    def inputs(sizes: dict[str, int]) -> list[np.ndarray]:
        r = np.random.default_rng(sizes["T"])
        return [r.standard_normal((1, CONV_IN, sizes["T"])).astype(np.float32),
                (r.standard_normal((1, 1, HIDDEN)) * 0.5).astype(np.float32),
                (r.standard_normal((1, 1, HIDDEN)) * 0.5).astype(np.float32)]
    return model, inputs


def image_net() -> tuple[onnx.ModelProto, Inputs]:
    rng = np.random.default_rng(4)
    inits = [_weight(rng, "c1_w", (8, 3, 3, 3)), _weight(rng, "c1_b", (8,)), _weight(rng, "c2_w", (16, 8, 3, 3)),
             _weight(rng, "c2_b", (16,)), _weight(rng, "fc_w", (16, 5)), _weight(rng, "fc_b", (5,))]
    nodes = [helper.make_node("Conv", ["image", "c1_w", "c1_b"], ["c1"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "c2_w", "c2_b"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("GlobalAveragePool", ["r2"], ["gap"]),
             helper.make_node("Flatten", ["gap"], ["flat"], axis=1),
             helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, "height", "width"])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], inits, "image_net")

    def inputs(sizes: dict[str, int]) -> list[np.ndarray]:
        r = np.random.default_rng(sizes["height"] * 1000 + sizes["width"])
        return [r.standard_normal((1, 3, sizes["height"], sizes["width"])).astype(np.float32)]
    return model, inputs


MODELS = {"mlp": mlp, "encoder_block": encoder_block, "conv_lstm": conv_lstm, "image_net": image_net}
