"""ir/limits.py: a model that declares a tensor past MAX_TENSOR_ELEMENTS is refused naming the
value, from either frontend, before anything of that size is allocated."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from onnx import TensorProto, helper

import iree_py
from iree_py.errors import CompileError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tflite"))
from tflite_writer import TfliteModel  # noqa: E402

HUGE = (1_000_000, 1_000_000)  # 10^12 elements


def test_onnx_input_of_1e12_elements_is_refused() -> None:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(HUGE))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(HUGE))])
    with pytest.raises(CompileError, match=r"input 'x' \[1000000, 1000000\]: 1000000000000 elements is more than"):
        iree_py.compile(helper.make_model(graph).SerializeToString())


def test_onnx_result_of_1e12_elements_is_refused() -> None:
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], list(HUGE))
    graph = helper.make_graph([helper.make_node("Expand", ["x", "shape"], ["y"], name="grow")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(HUGE))], [shape])
    with pytest.raises(CompileError, match=r"grow.*1000000000000 elements, more than the 4294967296"):
        iree_py.compile(helper.make_model(graph).SerializeToString())


def test_tflite_tensor_of_1e12_elements_is_refused() -> None:
    m = TfliteModel()
    x = m.input("x", HUGE)
    r = m.tensor("r", HUGE)
    m.op("RELU", [x], [r])
    m.output(r)
    with pytest.raises(CompileError, match=r"value 'x' tensor<1000000x1000000xf32> \(a model input or constant\) has "
                                           r"1000000000000 elements"):
        iree_py.compile(m.build())
