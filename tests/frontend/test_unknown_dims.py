"""Every way exporters write an unknown input dim becomes a symbol (frontends/onnx/symbolic.py: InputSymbols):
a dim_param name (one symbol per distinct name, whatever characters it has), "?" or "" (Paddle2ONNX;
a symbol per dim), a negative dim_value (-1), or neither field. A dim_value of 0 is a size of 0, as
onnxruntime reads it. Each model compiles once and runs at two sizes against onnxruntime."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import iree_py
from iree_py.frontends.onnx import import_onnx
from iree_py.ir.symbols import Expr
from tests.e2e.harness import run_onnxruntime


def with_dims(dims: list[dict]) -> onnx.ValueInfoProto:
    """An f32 input 'x' whose dims are given as the fields of TensorShapeProto.Dimension."""
    vi = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)
    shape = vi.type.tensor_type.shape
    for fields in dims:
        d = shape.dim.add()
        for name, value in fields.items():
            setattr(d, name, value)
    return vi


def model(inputs: list[onnx.ValueInfoProto], nodes: list[onnx.NodeProto]) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "unknown_dims", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


# Flatten to [-1, 4] and sum the rows: the symbolic dim flows through shape arithmetic.
FLATTEN_AND_SUM = [helper.make_node("Reshape", ["x", "shape"], ["r"]),
                   helper.make_node("ReduceSum", ["r"], ["y"], keepdims=0)]
SHAPE = onnx.numpy_helper.from_array(np.array([-1, 4], np.int64), "shape")

CONVENTIONS = {
    "dim_param": {"dim_param": "batch"},
    "tf2onnx_unk": {"dim_param": "unk__12"},
    "paddle_dotted": {"dim_param": "p2o.DynamicDimension.0"},
    "with_space": {"dim_param": "batch size"},
    "question_mark": {"dim_param": "?"},
    "empty_param": {"dim_param": ""},
    "minus_one": {"dim_value": -1},
    "no_field": {},
}


@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_an_unknown_dim_is_a_symbol_and_one_module_serves_every_size(convention: str):
    m = model([with_dims([CONVENTIONS[convention], {"dim_value": 4}])], FLATTEN_AND_SUM)
    m.graph.initializer.append(SHAPE)
    (x,) = import_onnx(m).inputs
    assert isinstance(x.type.shape[0], Expr) and x.type.shape[1] == 4
    module = iree_py.load(iree_py.compile(m.SerializeToString()))
    for rows in (3, 7):
        data = np.random.default_rng(rows).standard_normal((rows, 4)).astype(np.float32)
        np.testing.assert_allclose(module.main(data), run_onnxruntime(m, [data])[0], rtol=1e-5)


def test_anonymous_dims_are_symbols_of_their_own():
    """[1, ?, ?] (Paddle2ONNX): height and width differ; one shared symbol would refuse 2 x 3."""
    m = model([with_dims([{"dim_value": 1}, {"dim_param": "?"}, {"dim_param": "?"}])],
              [helper.make_node("Relu", ["x"], ["y"])])
    _, h, w = import_onnx(m).inputs[0].type.shape
    assert isinstance(h, Expr) and isinstance(w, Expr) and h != w
    data = np.random.default_rng(0).standard_normal((1, 2, 3)).astype(np.float32)
    np.testing.assert_array_equal(iree_py.load(iree_py.compile(m.SerializeToString())).main(data),
                                  run_onnxruntime(m, [data])[0])


def test_equal_names_are_one_symbol_across_inputs():
    a = with_dims([{"dim_param": "n"}, {"dim_value": 3}])
    b = with_dims([{"dim_param": "n"}, {"dim_value": 3}])
    b.name = "z"
    g = import_onnx(model([a, b], [helper.make_node("Add", ["x", "z"], ["y"])]))
    assert g.inputs[0].type.shape[0] == g.inputs[1].type.shape[0]


def test_names_that_sanitize_alike_stay_distinct():
    m = model([with_dims([{"dim_param": "a.b"}, {"dim_param": "a_b"}])], [helper.make_node("Relu", ["x"], ["y"])])
    rows, cols = import_onnx(m).inputs[0].type.shape
    assert isinstance(rows, Expr) and isinstance(cols, Expr) and rows != cols


def test_dim_value_zero_is_a_size():
    m = model([with_dims([{"dim_value": 0}, {"dim_value": 4}])], [helper.make_node("Relu", ["x"], ["y"])])
    assert import_onnx(m).inputs[0].type.shape == (0, 4)


@pytest.mark.parametrize("key", ["x:0", "x_d0"])
def test_an_anonymous_dim_can_be_fixed_by_its_key_or_its_symbol(key: str):
    m = model([with_dims([{"dim_value": -1}, {"dim_value": 4}])], [helper.make_node("Relu", ["x"], ["y"])])
    assert import_onnx(m, dims={key: 5}).inputs[0].type.shape == (5, 4)


def test_an_input_without_a_shape_says_what_to_do():
    vi = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)
    with pytest.raises(iree_py.CompileError, match=r"input 'x' has no shape.*update_inputs_outputs_dims"):
        import_onnx(model([vi], [helper.make_node("Relu", ["x"], ["y"])]))
