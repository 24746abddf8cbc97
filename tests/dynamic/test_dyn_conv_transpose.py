"""ONNX ConvTranspose on symbolic N, C, H, W: one module per target (host in-process, arm64 under
qemu-aarch64) serves every size and matches onnxruntime within 1e-4 of the largest reference value;
what the shapes cannot satisfy at run time is an error naming the node, and what cannot be imported
with symbolic dims is a CompileError naming node, op and opset."""
from __future__ import annotations

import functools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import iree_py
from iree_py.errors import CompileError, IreeRuntimeError

from tests.e2e.harness import DEVICE, assert_close, run_onnxruntime

OPSET = 17
RNG = np.random.default_rng(21)

# output -> (input shape, weight shape, bias?, attributes); every case one ConvTranspose node
CASES = {
    "strided_group_dilated": (["n", 4, "h", "w"], (4, 3, 2, 3), True,
                              {"strides": [2, 2], "pads": [1, 0, 1, 2], "output_padding": [1, 0],
                               "dilations": [1, 2], "group": 2}),
    "fpn_upsample": (["n", 8, "h", "w"], (8, 4, 2, 2), True, {"strides": [2, 2], "pads": [0, 0, 0, 0]}),
    "same_upper": (["n", 2, "h", "w"], (2, 3, 3, 3), False, {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    "same_lower_output_padding": (["n", 2, "h", "w"], (2, 2, 4, 2), True,
                                  {"strides": [2, 3], "auto_pad": "SAME_LOWER", "output_padding": [1, 0]}),
    "one_d": (["n", 3, "w"], (3, 2, 3), True, {"strides": [2], "pads": [1, 2], "output_padding": [1]}),
    "three_d": ([1, 2, "d", "h", "w"], (2, 2, 2, 3, 2), False,
                {"strides": [2, 1, 2], "pads": [0, 1, 1, 1, 0, 0], "dilations": [1, 2, 1]}),
    "channels_symbolic_depthwise": (["n", "c", "h", "w"], (4, 1, 3, 3), True,
                                    {"group": 4, "pads": [1, 1, 1, 1], "strides": [2, 1]}),
}
SIZES = [{"n": 1, "c": 4, "d": 2, "h": 5, "w": 7}, {"n": 2, "c": 4, "d": 3, "h": 9, "w": 4},
         {"n": 3, "c": 4, "d": 1, "h": 12, "w": 16}]
ARM64_SIZES = SIZES[:2]  # qemu is slow: two sizes


def _model(cases: dict[str, tuple]) -> onnx.ModelProto:
    """One ConvTranspose node per case, each on its own input; weights from a fixed seed."""
    rng = np.random.default_rng(5)
    nodes, inputs, outputs, inits = [], [], [], []
    for name, (x_shape, w_shape, bias, attrs) in cases.items():
        w = (rng.standard_normal(w_shape) * 0.5).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"{name}_w"))
        operands = [f"{name}_x", f"{name}_w"]
        if bias:
            inits.append(numpy_helper.from_array(rng.standard_normal(w_shape[1] * attrs.get("group", 1))
                                                 .astype(np.float32), f"{name}_b"))
            operands.append(f"{name}_b")
        nodes.append(helper.make_node("ConvTranspose", operands, [name], name=f"{name}_node", **attrs))
        inputs.append(helper.make_tensor_value_info(f"{name}_x", TensorProto.FLOAT, x_shape))
        outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "conv_transpose", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model


def _inputs(model: onnx.ModelProto, sizes: dict[str, int]) -> list[np.ndarray]:
    arrays = []
    for i in model.graph.input:
        shape = [sizes[d.dim_param] if d.dim_param else d.dim_value for d in i.type.tensor_type.shape.dim]
        arrays.append(RNG.standard_normal(shape).astype(np.float32))
    return arrays


@functools.cache
def _compiled(target: str) -> bytes:
    return iree_py.compile(_model(CASES).SerializeToString(), target=target)


@pytest.mark.parametrize("target,sizes", [("host", SIZES), ("arm64", ARM64_SIZES)])
def test_one_module_serves_every_size(target: str, sizes: list[dict[str, int]]) -> None:
    model = _model(CASES)
    module = iree_py.load(_compiled(target), device=DEVICE[target])
    for size in sizes:
        inputs = _inputs(model, size)
        assert_close(module.main.call(*inputs), run_onnxruntime(model, inputs))


def test_output_dims_are_expressions_of_the_input_dims() -> None:
    """SAME_* padding does not depend on the input size, so the output is in * stride exactly."""
    sig = repr(iree_py.load(_compiled("host")).main)
    for output in ("fpn_upsample: [n, 4, 2*h, 2*w]", "same_upper: [n, 3, 2*h, 2*w]",
                   "same_lower_output_padding: [n, 2, 2*h, -1 + 3*w]", "one_d: [n, 2, -1 + 2*w]"):
        assert output in sig, sig


def test_wrong_channel_count_is_a_run_time_error_naming_the_node() -> None:
    module = iree_py.load(_compiled("host"))
    model = _model(CASES)
    inputs = _inputs(model, SIZES[0])
    index = [i.name for i in model.graph.input].index("channels_symbolic_depthwise_x")
    inputs[index] = np.zeros((1, 3, 5, 7), np.float32)  # c = 3, the weight has 4 input channels
    with pytest.raises(IreeRuntimeError, match=r"channels_symbolic_depthwise_node.*ConvTranspose.*channels"):
        module.main.call(*inputs)


def test_an_output_cropped_to_nothing_is_a_run_time_error() -> None:
    """Along h the 5-tap result has h + 4 positions; pads 3 and 2 crop it to h - 1: h = 1 leaves nothing."""
    model = _model({"crop": (["n", 2, "h", 4], (2, 2, 5, 5), False, {"pads": [3, 4, 2, 1]})})
    module = iree_py.load(iree_py.compile(model.SerializeToString()))
    x = RNG.standard_normal((1, 2, 6, 4)).astype(np.float32)
    assert_close(module.main.call(x), run_onnxruntime(model, [x]))
    with pytest.raises(IreeRuntimeError, match=r"crop_node.*ConvTranspose.*output axis 0.*at least one position"):
        module.main.call(np.zeros((1, 2, 1, 4), np.float32))


def test_output_shape_on_a_symbolic_axis_is_refused_naming_the_node() -> None:
    model = _model({"sized": (["n", 2, "h", 4], (2, 1, 3, 3), False, {"strides": [2, 2], "output_shape": [8, 7]})})
    with pytest.raises(CompileError, match=r"sized_node.*ConvTranspose.*opset 17.*output_shape.*depends on"):
        iree_py.compile(model.SerializeToString())
