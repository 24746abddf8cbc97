"""ONNX quantized ops (QuantizeLinear, DequantizeLinear, QLinearConv, QLinearMatMul) against the
oracle of tests/e2e/harness.run_reference (the specification for integer products, onnxruntime for
the rest), bit-exact for integer outputs (float outputs of DequantizeLinear: exact too, one f32
multiply). The imported graph runs through the IR reference kernels; a few also compiled for the host."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import iree_py
from iree_py.errors import CompileError
from iree_py.frontends.onnx import import_onnx
from iree_py.ir.reference import evaluate
from tests.e2e.harness import run_reference, run_spec

ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int8): TensorProto.INT8,
        np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int32): TensorProto.INT32,
        np.dtype(np.int16): TensorProto.INT16}
RNG = np.random.default_rng(5)


def qmodel(node: onnx.NodeProto, feeds: dict[str, np.ndarray], consts: dict[str, np.ndarray], opset: int,
           out_dtype) -> onnx.ModelProto:
    graph = helper.make_graph(
        [node], "test",
        [helper.make_tensor_value_info(n, ELEM[a.dtype], a.shape) for n, a in feeds.items()],
        [helper.make_tensor_value_info(node.output[0], ELEM[np.dtype(out_dtype)], None)],
        [numpy_helper.from_array(a, n) for n, a in consts.items()])
    opset_id = helper.make_opsetid("", opset)
    m = helper.make_model(graph, opset_imports=[opset_id])
    m.ir_version = helper.find_min_ir_version_for([opset_id])
    return m


def check(m: onnx.ModelProto, feeds: dict[str, np.ndarray], targets: tuple[str, ...] = ("reference", "host"),
          onnx_reference: bool = False) -> None:
    """Compare with the oracle (or, for what onnxruntime does not implement, the specification)."""
    inputs = list(feeds.values())
    expected = (run_spec(m, inputs) if onnx_reference else run_reference(m, inputs))[0]
    for target in targets:
        if target == "reference":
            got = np.asarray(evaluate(import_onnx(m), feeds)[0])
        else:
            module = iree_py.load(iree_py.compile(m.SerializeToString(), target=target), device="local")
            got = module.main.call(*feeds.values())[0]
        assert got.dtype == expected.dtype and got.shape == expected.shape, f"{target}: {got.dtype}{got.shape}"
        wrong = np.argwhere(got != expected)
        assert wrong.size == 0, (f"{target}: {len(wrong)} of {got.size} differ, first at {tuple(wrong[0])}: "
                                 f"{got[tuple(wrong[0])]} != {expected[tuple(wrong[0])]}")


def qrandom(dtype, shape) -> np.ndarray:
    low = -128 if np.dtype(dtype) == np.int8 else 0
    return RNG.integers(low, low + 256, size=shape).astype(dtype)


# ------------------------------------------------------------------------------ QuantizeLinear / DequantizeLinear

@pytest.mark.parametrize("opset,dtype,zp", [(10, np.uint8, 128), (13, np.int8, -3), (19, np.int8, 0),
                                            (21, np.uint8, 7)])
def test_quantize_linear(opset, dtype, zp):
    x = (RNG.standard_normal((3, 40)) * 2).astype(np.float32)
    scale = np.float32(0.0173)
    x[0, :20] = (np.arange(20) - 10 + 0.5).astype(np.float32) * scale   # ties: rounded half to even
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])
    check(qmodel(node, {"x": x}, {"s": np.array(scale), "z": np.array(zp, dtype)}, opset, dtype), {"x": x})


def test_quantize_linear_without_zero_point_is_uint8():
    x = RNG.standard_normal((2, 9)).astype(np.float32)
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"])
    check(qmodel(node, {"x": x}, {"s": np.array(0.02, np.float32)}, 13, np.uint8), {"x": x})


@pytest.mark.parametrize("axis", [1, -1, 0])
def test_quantize_linear_per_axis(axis):
    x = RNG.standard_normal((4, 3, 5)).astype(np.float32)
    count = x.shape[axis]
    scales = RNG.uniform(0.005, 0.05, count).astype(np.float32)
    zps = RNG.integers(-10, 10, count).astype(np.int8)
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=axis)
    check(qmodel(node, {"x": x}, {"s": scales, "z": zps}, 13, np.int8), {"x": x})


@pytest.mark.parametrize("opset,dtype,zp", [(10, np.uint8, 131), (13, np.int8, -3), (21, np.int8, 4)])
def test_dequantize_linear(opset, dtype, zp):
    x = qrandom(dtype, (5, 17))
    node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"])
    check(qmodel(node, {"x": x}, {"s": np.array(0.0371, np.float32), "z": np.array(zp, dtype)}, opset, np.float32),
          {"x": x})


def test_dequantize_linear_per_axis_and_int32():
    x = qrandom(np.uint8, (2, 4, 3))
    node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=1)
    consts = {"s": RNG.uniform(0.01, 0.1, 4).astype(np.float32), "z": RNG.integers(0, 255, 4).astype(np.uint8)}
    check(qmodel(node, {"x": x}, consts, 13, np.float32), {"x": x})
    acc = RNG.integers(-100000, 100000, (3, 8)).astype(np.int32)
    node = helper.make_node("DequantizeLinear", ["x", "s"], ["y"])
    check(qmodel(node, {"x": acc}, {"s": np.array(0.00037, np.float32)}, 13, np.float32), {"x": acc})


# ------------------------------------------------------------------------------ QLinearConv / QLinearMatMul

def _qlinear_consts(x_dtype, w, w_scales, y_dtype):
    return {"xs": np.array(0.031, np.float32), "xz": np.array(3 if x_dtype == np.int8 else 131, x_dtype),
            "w": w, "ws": w_scales, "wz": np.zeros(w_scales.shape, w.dtype),
            "ys": np.array(0.27, np.float32), "yz": np.array(-5 if y_dtype == np.int8 else 120, y_dtype)}


@pytest.mark.parametrize("x_dtype,per_channel,attrs", [
    (np.uint8, False, {"pads": [1, 1, 1, 1]}),
    (np.uint8, True, {"strides": [2, 2], "pads": [0, 1, 1, 0]}),
    (np.int8, True, {"dilations": [2, 1], "pads": [2, 1, 2, 1]}),
    (np.int8, False, {"strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    (np.uint8, True, {"group": 4})])
def test_qlinear_conv(x_dtype, per_channel, attrs):
    group = attrs.get("group", 1)
    m_out = 8
    w = qrandom(np.int8, (m_out, 4 // group, 3, 3))
    w_scales = (RNG.uniform(0.002, 0.02, m_out) if per_channel else np.array([0.01])).astype(np.float32)
    x = qrandom(x_dtype, (1, 4, 9, 8))
    consts = _qlinear_consts(x_dtype, w, w_scales, x_dtype)
    consts["b"] = RNG.integers(-5000, 5000, m_out).astype(np.int32)
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], **attrs)
    check(qmodel(node, {"x": x}, consts, 13, x_dtype), {"x": x})


@pytest.mark.parametrize("a_dtype,a_shape,per_column", [(np.uint8, (5, 16), False), (np.int8, (2, 3, 16), True),
                                                        (np.uint8, (4, 16), True)])
def test_qlinear_matmul(a_dtype, a_shape, per_column):
    b = qrandom(np.int8, (16, 6))
    b_scales = (RNG.uniform(0.002, 0.02, 6) if per_column else np.array(0.01)).astype(np.float32)
    a = qrandom(a_dtype, a_shape)
    consts = _qlinear_consts(a_dtype, b, b_scales, a_dtype)
    node = helper.make_node("QLinearMatMul", ["a", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])
    check(qmodel(node, {"a": a}, consts, 21, a_dtype), {"a": a})


# ------------------------------------------------------------------------------ refusals

def _runtime_model(op: str, feeds: dict[str, np.ndarray], out_dtype, opset: int = 13, **attrs) -> onnx.ModelProto:
    node = helper.make_node(op, list(feeds), ["y"], **attrs)
    return qmodel(node, feeds, {}, opset, out_dtype)


@pytest.mark.parametrize("dtype,axis", [(np.uint8, None), (np.int8, 1), (np.int16, None)])
def test_quantize_linear_run_time_parameters(dtype, axis):
    """Scale and zero point as graph inputs (and int16 output): Div, Round, Add, Clip, Cast."""
    x = (RNG.standard_normal((2, 3, 6)) * 3).astype(np.float32)
    count = 1 if axis is None else x.shape[axis]
    scale = RNG.uniform(0.01, 0.03, count).astype(np.float32)
    x[0, 0, :4] = (np.arange(4) + 0.5).astype(np.float32) * scale[0]   # ties
    zp = RNG.integers(-3, 4, count).astype(dtype) if dtype != np.uint8 else RNG.integers(120, 130, count).astype(dtype)
    if axis is None:
        scale, zp = scale.reshape(()), zp.reshape(())
    feeds = {"x": x, "s": scale, "z": zp}
    opset = 21 if dtype == np.int16 else 13    # int16 quantization: opset 21
    check(_runtime_model("QuantizeLinear", feeds, dtype, opset, **({} if axis is None else {"axis": axis})), feeds)


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_dequantize_linear_run_time_parameters(dtype):
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max + 1, (4, 5)).astype(dtype)
    feeds = {"x": x, "s": np.array(0.0123, np.float32), "z": np.array(-7, dtype)}
    check(_runtime_model("DequantizeLinear", feeds, np.float32, 21 if dtype == np.int16 else 13), feeds)


@pytest.mark.parametrize("scale", [1.0, 0.0])
def test_dynamic_quantize_linear(scale):
    """Three outputs (y, scale, zero point); an all-zero input takes scale 1 as onnxruntime does."""
    x = (RNG.standard_normal((3, 7)) * scale + (0.5 if scale else 0.0)).astype(np.float32)
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "y_scale", "y_zp"])
    graph = helper.make_graph([node], "test", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, None),
                               helper.make_tensor_value_info("y_scale", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("y_zp", TensorProto.UINT8, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    m.ir_version = 7
    expected = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device="local")
    for got in (evaluate(import_onnx(m), {"x": x}), module.main.call(x)):
        for g, e in zip(got, expected):
            assert np.asarray(g).dtype == e.dtype and np.array_equal(np.asarray(g).reshape(e.shape), e)


def test_qlinear_conv_run_time_scale_is_refused():
    x, w = qrandom(np.uint8, (1, 2, 4, 4)), qrandom(np.uint8, (3, 2, 1, 1))
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])
    consts = {"xz": np.array(0, np.uint8), "w": w, "ws": np.array(0.1, np.float32), "wz": np.array(0, np.uint8),
              "ys": np.array(0.2, np.float32), "yz": np.array(0, np.uint8)}
    m = qmodel(node, {"x": x, "xs": np.array(0.1, np.float32)}, consts, 10, np.uint8)
    with pytest.raises(CompileError, match=r"op QLinearConv, opset 10\): x_scale \(input 1, 'xs'\) must be a constant"):
        import_onnx(m)


# ------------------------------------------------------------------------------ ConvInteger / MatMulInteger

@pytest.mark.parametrize("attrs,w_zp", [({"pads": [1, 0, 1, 2]}, np.array(3, np.uint8)),
                                        ({"strides": [2, 1], "group": 2}, np.array([1, 200, 7, 0], np.uint8))])
def test_conv_integer(attrs, w_zp):
    x, w = qrandom(np.uint8, (1, 4, 6, 7)), qrandom(np.uint8, (4, 4 // attrs.get("group", 1), 3, 3))
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], **attrs)
    check(qmodel(node, {"x": x}, {"w": w, "xz": np.array(131, np.uint8), "wz": w_zp}, 10, np.int32), {"x": x},
          onnx_reference=w_zp.size > 1)    # onnxruntime: per-tensor zero points only


def test_matmul_integer():
    a, b = qrandom(np.uint8, (4, 20)), qrandom(np.uint8, (20, 3))
    feeds = {"a": a, "b": b, "az": np.array(120, np.uint8), "bz": np.array([3, 0, 255], np.uint8)}
    check(_runtime_model("MatMulInteger", feeds, np.int32, 10), feeds)


def test_matmul_integer_per_row_zero_point():
    """Per-row zero points of a (neither onnxruntime nor onnx's reference computes them: numpy)."""
    a, b = qrandom(np.int8, (2, 4, 20)), qrandom(np.int8, (20, 3))
    az = np.array([5, -5, 0, 127], np.int8)
    m = _runtime_model("MatMulInteger", {"a": a, "b": b, "az": az}, np.int32, 10)
    expected = (a.astype(np.int32) - az[:, None]) @ b.astype(np.int32)
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device="local")
    for got in (evaluate(import_onnx(m), [a, b, az])[0], module.main.call(a, b, az)[0]):
        assert np.asarray(got).dtype == np.int32 and np.array_equal(got, expected)


def test_deep_conv_integer_accumulates_in_int32():
    """Depth 5 * 8 * 8 = 320 products reach 320 * 255**2 > 2**24 (float32 would round; the old
    float path refused it): int32 accumulation is exact."""
    x, w = qrandom(np.uint8, (1, 5, 9, 9)), qrandom(np.uint8, (2, 5, 8, 8))
    m = qmodel(helper.make_node("ConvInteger", ["x", "w"], ["y"]), {"x": x}, {"w": w}, 10, np.int32)
    check(m, {"x": x}, onnx_reference=True)


def test_conv_integer_run_time_weight_and_zero_points():
    """Every input at run time (as the ONNX node tests give them): zero points become kernel bindings."""
    feeds = {"x": qrandom(np.int8, (2, 6, 5, 7)), "w": qrandom(np.int8, (4, 3, 3, 3)),
             "xz": np.array(-7, np.int8), "wz": np.array([-128, 127, 0, 5], np.int8)}
    check(_runtime_model("ConvInteger", feeds, np.int32, 10, group=2, pads=[0, 1, 2, 1], dilations=[1, 2]), feeds,
          onnx_reference=True)


def test_matmul_integer_broadcasts_batch_dims():
    """a [2, 1, 3, K] x b [4, K, N]: both are expanded to the batch dims [2, 4] (numpy's matmul rule)."""
    feeds = {"a": qrandom(np.uint8, (2, 1, 3, 40)), "b": qrandom(np.int8, (4, 40, 5)),
             "az": np.array(255, np.uint8), "bz": np.array(-128, np.int8)}
    check(_runtime_model("MatMulInteger", feeds, np.int32, 10), feeds, onnx_reference=True)


@pytest.mark.parametrize("op,feeds,message", [
    ("ConvInteger", {"x": qrandom(np.uint8, (1, 2, 4, 4)), "w": qrandom(np.uint8, (3, 2, 1, 1)),
                     "xz": np.array([1, 2], np.uint8)}, r"ConvInteger x_zero_point must have 1 value"),
    ("ConvInteger", {"x": qrandom(np.uint8, (1, 2, 4, 4)), "w": qrandom(np.uint8, (3, 2, 1, 1)),
                     "xz": np.array(1, np.int8)}, r"x_zero_point 'xz' is tensor<i8>; expected a scalar or 1-D u8"),
    ("MatMulInteger", {"a": qrandom(np.uint8, (3, 8)), "b": qrandom(np.uint8, (8, 5)), "az": np.array(0, np.uint8),
                       "bz": np.zeros(4, np.uint8)}, r"MatMulInteger b_zero_point length: 4 != 5"),
])
def test_integer_op_refusals_name_the_node(op, feeds, message):
    with pytest.raises(CompileError, match=rf"\(op {op}, opset 10\): .*{message}"):
        import_onnx(_runtime_model(op, feeds, np.int32, 10))
