"""`iree-py debug`: every layer against onnxruntime, and the first that diverges. A fault injected
into one named node's kernel (CompileOptions.inject_fault) must be found there and nowhere else, on
this host, on arm64 under qemu-user and on a board under qemu-system."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from iree_py.cli.main import main
from iree_py.layer_debug import Tolerance, debug_model, format_report
from iree_py.layer_debug.compare import compare_layers
from iree_py.layer_debug.onnx_intermediates import Layer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SMALL_CNN = EXAMPLES / "small_cnn.onnx"
SMALL_CNN_NODES = ["conv1", "bn1", "relu1", "pool1", "conv2", "relu2", "depthwise", "relu6", "residual", "gap",
                   "flatten", "fc", "softmax"]


def small_cnn_input() -> np.ndarray:
    return np.load(EXAMPLES / "small_cnn_input.npy")


def test_a_correct_model_has_no_divergence_and_lists_every_node() -> None:
    report = debug_model(SMALL_CNN, [small_cnn_input()])
    assert [r.layer.node for r in report.layers] == SMALL_CNN_NODES
    assert report.first_divergence is None
    assert all(v.relative < 1e-4 for r in report.layers for v in r.values)
    assert report.verdict.startswith("no divergence")


@pytest.mark.parametrize("target", ["host", "arm64"])
@pytest.mark.parametrize("faulty", ["bn1", "depthwise", "softmax"])
def test_the_faulty_node_is_named(target: str, faulty: str) -> None:
    report = debug_model(SMALL_CNN, [small_cnn_input()], target=target, inject_fault=faulty)
    first = report.first_divergence
    assert first is not None and first.layer.node == faulty
    position = SMALL_CNN_NODES.index(faulty)
    assert all(r.within for r in report.layers[:position])  # everything before it matches
    assert all(e is None or e.within for e in report.first_inputs.values())
    assert report.verdict == f"node '{faulty}' ({first.layer.op}) diverges while all its inputs match: its kernel is wrong"


def test_a_board_reads_back_every_intermediate() -> None:
    model, x = _mlp()
    correct = debug_model(model, [x], target="cortex-m4")
    assert correct.device == "qemu" and correct.first_divergence is None
    assert len(correct.layers) == 3
    faulty = debug_model(model, [x], target="cortex-m4", inject_fault="act")
    assert faulty.first_divergence is not None and faulty.first_divergence.layer.node == "act"


def test_int8_errors_are_counted_in_quantized_steps() -> None:
    model, x = _qdq_conv()
    report = debug_model(model, [x])
    assert report.first_divergence is None
    int8_values = [v for r in report.layers for v in r.values if v.dtype == "int8"]
    assert int8_values and all(v.max_abs <= 1 for v in int8_values)
    faulty = debug_model(model, [x], inject_fault="quantize_conv")
    first = faulty.first_divergence
    assert first is not None and first.layer.node == "quantize_conv"
    assert [v.max_abs for v in first.values] == [4]
    assert "steps" in format_report(faulty)


def test_a_wrong_kernel_is_told_apart_from_error_it_may_inherit() -> None:
    ones, twos = np.ones(4, np.float32), np.full(4, 2, np.float32)
    reference = {"t0": ones, "t1": ones, "t2": ones}
    ours = {"t0": ones, "t1": twos, "t2": twos}
    layers = [Layer(0, "a", "Relu", ("t0",), ("x",)), Layer(1, "b", "Relu", ("t1",), ("t0",)),
              Layer(2, "c", "Relu", ("t2",), ("t1",))]
    report = compare_layers(layers, frozenset({"x"}), ours, reference, Tolerance(), "host", "local")
    assert report.first_divergence.layer.node == "b" and report.first_inputs["t0"].within
    assert "its kernel is wrong" in report.verdict
    # b's input comes from a node whose output has no known type: b is only the first node *compared*
    # to diverge, and the verdict says so rather than blaming b's kernel
    layers[1] = Layer(1, "b", "Relu", ("t1",), ("hidden",))
    report = compare_layers(layers, frozenset({"x"}), ours, reference, Tolerance(), "host", "local")
    assert report.first_inputs["hidden"].problem == "not compared"
    assert "was not compared" in report.verdict and "kernel is wrong" not in report.verdict
    assert compare_layers(layers, frozenset({"x"}), ours, reference, Tolerance(relative=10.0), "host",
                          "local").first_divergence is None


def test_the_command_prints_the_table_or_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "x.npy", small_cnn_input())
    assert main(["debug", str(SMALL_CNN), f"--input=@{tmp_path / 'x.npy'}"]) == 0
    text = capsys.readouterr().out
    assert all(name in text for name in SMALL_CNN_NODES) and "no divergence" in text
    assert main(["debug", str(SMALL_CNN), f"--input=@{tmp_path / 'x.npy'}", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [layer["node"] for layer in data["layers"]] == SMALL_CNN_NODES and data["first_divergence"] is None


def test_bad_input_gets_an_error_not_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "broken.onnx").write_bytes(b"\x08\x07garbage")
    assert main(["debug", str(tmp_path / "broken.onnx")]) != 0
    assert "not an ONNX model" in capsys.readouterr().err
    assert main(["debug", str(SMALL_CNN)]) != 0
    assert "main: expected 1 inputs ('image' [1, 3, 32, 32] f32), got 0" in capsys.readouterr().err


def _mlp() -> tuple[bytes, np.ndarray]:
    rng = np.random.default_rng(1)
    w1, w2 = (numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
              for s, n in (((8, 16), "w1"), ((16, 4), "w2")))
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"), helper.make_node("Tanh", ["h"], ["a"], name="act"),
         helper.make_node("MatMul", ["a", "w2"], ["y"], name="fc2")], "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w1, w2])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString(), rng.standard_normal((1, 8)).astype(np.float32)


def _qdq_conv() -> tuple[bytes, np.ndarray]:
    """float in, int8 QDQ around a conv (as a quantization tool writes it), float out."""
    rng = np.random.default_rng(2)
    w = rng.integers(-100, 100, (4, 3, 3, 3)).astype(np.int8)
    inits = [numpy_helper.from_array(w, "w_q"), numpy_helper.from_array(np.array(0.01, np.float32), "w_scale"),
             numpy_helper.from_array(np.array(0, np.int8), "w_zero"),
             numpy_helper.from_array(np.array(0.02, np.float32), "x_scale"),
             numpy_helper.from_array(np.array(3, np.int8), "x_zero"),
             numpy_helper.from_array(np.array(0.05, np.float32), "y_scale"),
             numpy_helper.from_array(np.array(-2, np.int8), "y_zero")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero"], ["xq"], name="quantize_input"),
             helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zero"], ["xd"], name="dequantize_input"),
             helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zero"], ["wd"], name="dequantize_weights"),
             helper.make_node("Conv", ["xd", "wd"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "y_scale", "y_zero"], ["cq"], name="quantize_conv"),
             helper.make_node("DequantizeLinear", ["cq", "y_scale", "y_zero"], ["y"], name="dequantize_conv")]
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString(), rng.uniform(-1, 1, (1, 3, 8, 8)).astype(np.float32)
