"""Shapes are data too: a shape computed from symbolic dims (Shape, Gather, arithmetic) flows into
any op as an ordinary tensor (a DimValues node computes it at run time, ir/ops/dim_values.py) or stays
folded where that keeps more known (a Cast to float feeding a Range, a ReduceProd feeding a
Reshape). Each model compiles once, with its dims symbolic, and runs at two sizes against
onnxruntime on this host and on arm64 under qemu."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import iree_py
from iree_py.ir.ops.dim_values import DIM_VALUES
from iree_py.frontends.onnx import import_onnx
from tests.e2e.harness import DEVICE, assert_close, run_onnxruntime

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes: list[onnx.NodeProto], x_shape: list, outputs: list[str],
           consts: dict[str, np.ndarray] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "shapes_as_data", [helper.make_tensor_value_info("x", F32, x_shape)],
                              [helper.make_empty_tensor_value_info(o) for o in outputs],
                              [numpy_helper.from_array(v, k) for k, v in (consts or {}).items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _scalar(value, dtype=np.int64) -> np.ndarray:
    return np.array(value, dtype)


SHAPE_OF_X = [helper.make_node("Shape", ["x"], ["s"])]

MODELS = {
    # The shape itself as an output, and its sum: integer data from the dims.
    "shape_sum": (SHAPE_OF_X + [helper.make_node("ReduceSum", ["s"], ["total"], keepdims=0)], ["s", "total"], {}),
    # Cast to float, then float arithmetic with data: computed at run time.
    "shape_as_float_data": (SHAPE_OF_X + [helper.make_node("Cast", ["s"], ["sf"], to=F32),
                                          helper.make_node("ReduceMean", ["x"], ["m"], axes=[2, 3], keepdims=0),
                                          helper.make_node("Gather", ["sf", "last"], ["w"], axis=0),
                                          helper.make_node("Div", ["m", "w"], ["y"])],
                            ["y"], {"last": _scalar(3)}),
    # ultralytics' anchor grid: Range(0, float(W), 1) + 0.5, broadcast against float(H) rows.
    "anchor_grid": (SHAPE_OF_X + [helper.make_node("Gather", ["s", "i3"], ["w"], axis=0),
                                  helper.make_node("Gather", ["s", "i2"], ["h"], axis=0),
                                  helper.make_node("Cast", ["w"], ["wf"], to=F32),
                                  helper.make_node("Cast", ["h"], ["hf"], to=F32),
                                  helper.make_node("Range", ["zero", "wf", "one"], ["sx"]),
                                  helper.make_node("Range", ["zero", "hf", "one"], ["sy"]),
                                  helper.make_node("Add", ["sx", "half"], ["cx"]),
                                  helper.make_node("Unsqueeze", ["sy", "ax1"], ["sy_col"]),
                                  helper.make_node("Add", ["sy_col", "cx"], ["grid"]),
                                  helper.make_node("ReduceMean", ["x"], ["plane"], axes=[1], keepdims=0),
                                  helper.make_node("Mul", ["plane", "grid"], ["y"])],
                    ["y"], {"i3": _scalar(3), "i2": _scalar(2), "zero": _scalar(0, np.float32),
                            "one": _scalar(1, np.float32), "half": _scalar(0.5, np.float32),
                            "ax1": np.array([1], np.int64)}),
    # tf2onnx's Keras Reshape: the product of some dims, folded, then a Reshape to it.
    "reduce_prod_reshape": (SHAPE_OF_X + [helper.make_node("Slice", ["s", "from1", "to4"], ["hw"]),
                                          helper.make_node("ReduceProd", ["hw"], ["chw"], keepdims=1),
                                          helper.make_node("Concat", ["minus1", "chw"], ["target"], axis=0),
                                          helper.make_node("Reshape", ["x", "target"], ["y"])],
                            ["y"], {"from1": np.array([1], np.int64), "to4": np.array([4], np.int64),
                                    "minus1": np.array([-1], np.int64)}),
    # Whether H == 1 is up to the symbols: the Equal and Where run at run time.
    "undecided_equal": (SHAPE_OF_X + [helper.make_node("Equal", ["s", "ones"], ["e"]),
                                      helper.make_node("Where", ["e", "twos", "s"], ["t"]),
                                      helper.make_node("Cast", ["t"], ["y"], to=F32)],
                        ["y"], {"ones": np.ones(4, np.int64), "twos": np.full(4, 2, np.int64)}),
}
SIZES = [(1, 2, 3, 5), (2, 2, 1, 4)]


@pytest.mark.parametrize("target", ["host", "arm64"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_computed_shape_flows_into_any_op(name: str, target: str):
    nodes, outputs, consts = MODELS[name]
    m = _model(nodes, ["n", "c", "h", "w"], outputs, consts)
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target=target), device=DEVICE[target])
    for shape in SIZES:
        x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
        got, want = module.main.call(x), run_onnxruntime(m, [x])
        assert [g.dtype for g in got] == [w.dtype for w in want]
        assert_close(got, want, tolerance=1e-6)


def test_folding_keeps_a_float_grid_size_known():
    """Cast to float and Range keep W: the grid's type says w, no run-time length symbol."""
    nodes, outputs, consts = MODELS["anchor_grid"]
    graph = import_onnx(_model(nodes, ["n", "c", "h", "w"], outputs, consts))
    assert [str(d) for d in graph.outputs[0].type.shape] == ["n", "h", "w"]
    assert not graph.symbol_sources


def test_data_use_makes_one_dim_values_node():
    nodes, outputs, consts = MODELS["shape_as_float_data"]
    graph = import_onnx(_model(nodes, ["n", "c", "h", "w"], outputs, consts))
    assert [n.op for n in graph.nodes].count(DIM_VALUES) == 1
