"""Import errors name what is wrong (file, node, op, opset, input, dim)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from iree_py.errors import CompileError
from iree_py.frontends.onnx import import_onnx
from onnx_models import model


def test_unsupported_op_names_node_op_and_opset() -> None:
    node = helper.make_node("ImageDecoder", ["x"], ["y"], name="foo")
    m = model([node], {"x": (16,)}, ["y"], 20)
    with pytest.raises(CompileError, match=r"^node 'foo' \(op ImageDecoder, opset 20\): op not supported by iree-py$"):
        import_onnx(m)


def test_unsupported_domain_is_named() -> None:
    node = helper.make_node("Relu", ["x"], ["y"], domain="com.example")
    m = model([node], {"x": (2,)}, ["y"], 13)
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(CompileError, match=r"node 'Relu_0' \(op Relu, domain com.example, opset 13\)"):
        import_onnx(m)


def test_not_onnx_bytes(tmp_path) -> None:
    path = tmp_path / "x.onnx"
    path.write_bytes(b"\x00\xffthis is not a protobuf\x13\x37")
    with pytest.raises(CompileError, match=r"x.onnx is not a valid ONNX model: "):
        import_onnx(path)
    with pytest.raises(CompileError, match=r"is not a valid ONNX model"):
        import_onnx(b"hello world")


def test_missing_file(tmp_path) -> None:
    with pytest.raises(CompileError, match=r"missing.onnx is not a valid ONNX model: no such file"):
        import_onnx(tmp_path / "missing.onnx")


def _symbolic_model() -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    return m.SerializeToString()


def test_dim_param_without_dims_is_a_symbol() -> None:
    g = import_onnx(_symbolic_model())
    assert str(g.inputs[0].type) == "tensor<{batch}x3xf32>"


def test_dim_param_with_dims() -> None:
    g = import_onnx(_symbolic_model(), dims={"batch": 4})
    assert g.inputs[0].type.shape == (4, 3)


def test_bad_attribute_value_is_named() -> None:
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", auto_pad="SIDEWAYS")
    m = model([node], {"x": (1, 1, 4, 4)}, ["y"], 11, {"w": np.ones((1, 1, 3, 3), np.float32)})
    with pytest.raises(CompileError, match=r"node 'c' \(op Conv, opset 11\): attribute auto_pad='SIDEWAYS' not supported"):
        import_onnx(m)


def test_3d_conv_unsupported() -> None:
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c3")
    m = model([node], {"x": (1, 1, 4, 4, 4)}, ["y"], 11, {"w": np.ones((1, 1, 3, 3, 3), np.float32)})
    with pytest.raises(CompileError, match=r"node 'c3' \(op Conv, opset 11\): 3-D Conv .* not supported"):
        import_onnx(m)


def test_dropout_mask_used_is_constant_true() -> None:
    node = helper.make_node("Dropout", ["x"], ["y", "mask"])
    g = import_onnx(model([node], {"x": (2, 2)}, ["y", "mask"], 13))
    assert g.outputs[1].is_const and g.outputs[1].const.all()


def test_double_sin_rejected_by_final_check() -> None:  # f64 Exp/Log have kernels now (math_f64.py)
    from iree_py.passes.pipeline import run_pipeline
    x = helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2])
    y = helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)
    g = helper.make_graph([helper.make_node("Sin", ["x"], ["y"], name="r")], "g", [x], [y])
    graph = import_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]))
    with pytest.raises(CompileError, match=r"node 'r' \(Sin\): unsupported dtype f64"):
        run_pipeline(graph)


def test_slice_with_computed_starts_is_refused() -> None:
    nodes = [helper.make_node("Relu", ["s_in"], ["s"]), helper.make_node("Slice", ["x", "s", "e"], ["y"], name="sl")]
    m = model(nodes, {"x": (4, 5), "s_in": (1,)}, ["y"], 13, {"e": np.array([3], np.int64)})
    with pytest.raises(CompileError, match=r"node 'sl' \(op Slice, opset 13\): starts 's' is tensor<1xf32>; a "
                                           r"starts given at run time must be int64 or int32"):
        import_onnx(m)


def test_slice_with_zero_step_is_refused() -> None:
    node = helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"], name="sl")
    inits = {"s": np.array([0], np.int64), "e": np.array([3], np.int64), "a": np.array([1], np.int64),
             "st": np.array([0], np.int64)}
    with pytest.raises(CompileError, match=r"node 'sl' \(op Slice, opset 13\): steps \[0\] contain 0"):
        import_onnx(model([node], {"x": (4, 5)}, ["y"], 13, inits))


def test_split_sizes_must_add_up() -> None:
    node = helper.make_node("Split", ["x", "split"], ["a", "b"], name="sp", axis=1)
    m = model([node], {"x": (2, 6)}, ["a", "b"], 13, {"split": np.array([2, 3], np.int64)})
    with pytest.raises(CompileError, match=r"node 'sp' \(op Split, opset 13\): split sizes \[2, 3\] must be 2 "
                                           r"non-negative sizes summing to axis 1"):
        import_onnx(m)
