"""fuse-qdq: ONNX QDQ-form Conv / MatMul (+ Relu) become QConv / QMatMul, whose results match
onnxruntime's (which fuses the same patterns) exactly; patterns that do not match keep float ops."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

import iree_py
from iree_py.frontends.onnx import import_onnx
from iree_py.passes.pipeline import run_pipeline

RNG = np.random.default_rng(0)


def qdq_model(kind: str, relu: bool, per_channel: bool, bias: bool = True) -> onnx.ModelProto:
    """x (float) -> Q -> DQ -> Conv/MatMul (DQ int8 weight, DQ int32 bias) -> [Relu] -> Q -> DQ."""
    cout = 6
    w_shape = (cout, 4, 3, 3) if kind == "Conv" else (8, cout)
    x_shape = (1, 4, 7, 7) if kind == "Conv" else (3, 8)
    w_q = RNG.integers(-127, 128, w_shape).astype(np.int8)
    w_scale = (RNG.uniform(0.002, 0.01, cout) if per_channel else np.array([0.005])).astype(np.float32)
    x_scale, y_scale = np.float32(0.02), np.float32(0.05)
    inits = [nh.from_array(w_q, "w_q"), nh.from_array(w_scale, "w_scale"),
             nh.from_array(np.zeros(len(w_scale), np.int8), "w_zp"),
             nh.from_array(np.array(x_scale), "x_scale"), nh.from_array(np.array(3, np.uint8), "x_zp"),
             nh.from_array(np.array(y_scale), "y_scale"), nh.from_array(np.array(128, np.uint8), "y_zp")]
    axis = {"axis": 0 if kind == "Conv" else 1} if per_channel else {}
    nodes = [h.make_node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["xq"]),
             h.make_node("DequantizeLinear", ["xq", "x_scale", "x_zp"], ["xd"]),
             h.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zp"], ["wd"], **axis)]
    op_inputs = ["xd", "wd"]
    if bias and kind == "Conv":
        b_q = RNG.integers(-500, 500, cout).astype(np.int32)
        inits += [nh.from_array(b_q, "b_q"), nh.from_array((x_scale * w_scale).astype(np.float32), "b_scale"),
                  nh.from_array(np.zeros(len(w_scale), np.int32), "b_zp")]
        nodes.append(h.make_node("DequantizeLinear", ["b_q", "b_scale", "b_zp"], ["bd"], **({"axis": 0} if per_channel else {})))
        op_inputs.append("bd")
    nodes.append(h.make_node(kind, op_inputs, ["y"], **({"pads": [1, 1, 1, 1]} if kind == "Conv" else {})))
    last = "y"
    if relu:
        nodes.append(h.make_node("Relu", ["y"], ["r"]))
        last = "r"
    nodes += [h.make_node("QuantizeLinear", [last, "y_scale", "y_zp"], ["yq"]),
              h.make_node("DequantizeLinear", ["yq", "y_scale", "y_zp"], ["out"])]
    g = h.make_graph(nodes, "qdq", [h.make_tensor_value_info("x", T.FLOAT, list(x_shape))],
                     [h.make_tensor_value_info("out", T.FLOAT, None)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def ops_after_pipeline(m: onnx.ModelProto) -> list[str]:
    return [n.op for n in run_pipeline(import_onnx(m)).nodes]


@pytest.mark.parametrize("kind", ["Conv", "MatMul"])
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("per_channel", [False, True])
def test_qdq_patterns_become_int8_kernels_matching_onnxruntime(kind, relu, per_channel):
    m = qdq_model(kind, relu, per_channel)
    ops = ops_after_pipeline(m)
    assert ("QConv" if kind == "Conv" else "QMatMul") in ops and kind not in ops and "Relu" not in ops
    x = RNG.standard_normal([d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]).astype(np.float32)
    # onnxruntime runs the fused u8 x s8 kernel, which on x86 without VNNI adds pairs of products in
    # saturating 16-bit arithmetic (tests/e2e/test_integer_oracle.py): quantized inputs up to 129
    # (x <= 2.52 at scale 0.02, zero point 3) keep every pair within int16 (2 * 129 * 127 < 2**15),
    # so its answer is exact on every CPU.
    x = np.minimum(x, 2.5)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = iree_py.load(iree_py.compile(m.SerializeToString(), target="host")).main(x)
    np.testing.assert_array_equal(got, want)


def test_a_bias_with_another_scale_keeps_the_float_ops():
    m = qdq_model("Conv", relu=False, per_channel=False)
    for t in m.graph.initializer:
        if t.name == "b_scale":
            t.CopyFrom(nh.from_array(np.array([0.5], np.float32), "b_scale"))
    assert "Conv" in ops_after_pipeline(m) and "QConv" not in ops_after_pipeline(m)
