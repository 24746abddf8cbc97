"""`iree-py debug` on TFLite models: every operator's output tensor against LiteRT's (with
experimental_preserve_all_tensors), in NHWC as both keep them. A fault injected into one named
operator (its IR nodes are named OP_INDEX) is found there and nowhere else, for a float
MobileNet-like model (on this host and on arm64 under qemu-user) and an int8 CNN (host, arm64, and
a Cortex-M4 board under qemu-system), whose values are compared in quantized steps; correct models
show no divergence."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tflite"))  # the TFLite test model builders
from test_tflite_models import mobilenet_like  # noqa: E402
from test_tflite_quant import small_cnn  # noqa: E402
from tflite_harness import complete_shapes, random_inputs  # noqa: E402
import tflite_quant_harness  # noqa: E402

from iree_py.cli.main import main  # noqa: E402
from iree_py.layer_debug import debug_model  # noqa: E402

FLOAT_OPS = ["conv_2d_0", "depthwise_conv_2d_1", "conv_2d_2", "add_3", "depthwise_conv_2d_4", "conv_2d_5",
             "average_pool_2d_6", "reshape_7", "fully_connected_8", "softmax_9"]
INT8_OPS = ["quantize_0", "conv_2d_1", "depthwise_conv_2d_2", "add_3", "average_pool_2d_4", "max_pool_2d_5",
            "reshape_6", "fully_connected_7", "dequantize_8"]


def _float_model() -> tuple[bytes, list[np.ndarray]]:
    m = mobilenet_like()
    return complete_shapes(m), random_inputs(m)


def _int8_model() -> tuple[bytes, list[np.ndarray]]:
    m = small_cnn()
    return complete_shapes(m), tflite_quant_harness.random_inputs(m)


def _check_found(report, faulty: str, order: list[str]) -> None:
    first = report.first_divergence
    assert first is not None and first.layer.node == faulty, report.verdict
    assert all(r.within for r in report.layers[:order.index(faulty)])  # everything before it matches
    assert all(e is None or e.within for e in report.first_inputs.values())
    assert report.verdict == f"node '{faulty}' ({first.layer.op}) diverges while all its inputs match: its kernel is wrong"


def test_a_correct_float_model_has_no_divergence_in_nhwc() -> None:
    data, inputs = _float_model()
    report = debug_model(data, inputs)
    assert [r.layer.node for r in report.layers] == FLOAT_OPS
    assert report.layers[1].layer.op == "DEPTHWISE_CONV_2D" and report.layers[1].values[0].shape == (1, 8, 8, 8)
    assert report.first_divergence is None and all(v.relative < 1e-5 for r in report.layers for v in r.values)


@pytest.mark.parametrize("target,faulty", [("host", "depthwise_conv_2d_1"), ("host", "add_3"),
                                           ("host", "fully_connected_8"), ("arm64", "conv_2d_5")])
def test_the_faulty_float_operator_is_named(target: str, faulty: str) -> None:
    data, inputs = _float_model()
    _check_found(debug_model(data, inputs, target=target, inject_fault=faulty), faulty, FLOAT_OPS)


def test_a_correct_int8_model_matches_in_quantized_steps() -> None:
    data, inputs = _int8_model()
    report = debug_model(data, inputs)
    assert [r.layer.node for r in report.layers] == INT8_OPS and report.first_divergence is None
    int8 = [v for r in report.layers for v in r.values if v.dtype == "int8"]
    assert len(int8) == 8 and all(v.max_abs == 0 for v in int8)  # bit for bit: LiteRT's reference kernels


@pytest.mark.parametrize("target,faulty", [("host", "conv_2d_1"), ("host", "max_pool_2d_5"), ("arm64", "add_3")])
def test_the_faulty_int8_operator_is_named(target: str, faulty: str) -> None:
    data, inputs = _int8_model()
    report = debug_model(data, inputs, target=target, inject_fault=faulty)
    _check_found(report, faulty, INT8_OPS)
    error = report.first_divergence.values[0]
    assert error.dtype == "int8" and error.max_abs >= 4  # the fault adds 4 steps


def test_a_board_reads_back_every_tflite_tensor() -> None:
    data, inputs = _int8_model()
    correct = debug_model(data, inputs, target="cortex-m4")
    assert correct.device == "qemu" and correct.first_divergence is None
    assert [r.layer.node for r in correct.layers] == INT8_OPS
    faulty = debug_model(data, inputs, target="cortex-m4", inject_fault="depthwise_conv_2d_2")
    _check_found(faulty, "depthwise_conv_2d_2", INT8_OPS)


def test_cli_on_a_tflite_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, inputs = _float_model()
    (tmp_path / "m.tflite").write_bytes(data)
    np.save(tmp_path / "x.npy", inputs[0])
    assert main(["debug", str(tmp_path / "m.tflite"), f"--input=@{tmp_path / 'x.npy'}", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [layer["node"] for layer in report["layers"]] == FLOAT_OPS and report["first_divergence"] is None
    assert report["layers"][0]["outputs"][0]["name"] == "stem" and report["layers"][0]["inputs"][0] == "image"
    (tmp_path / "broken.tflite").write_bytes(b"\x10\x00\x00\x00XXXXgarbage")
    assert main(["debug", str(tmp_path / "broken.tflite"), f"--input=@{tmp_path / 'x.npy'}"]) == 1
    assert f"{tmp_path / 'broken.tflite'} is not a TFLite model" in capsys.readouterr().err
    assert main(["debug", str(tmp_path / "m.tflite")]) == 1
    assert "main: expected 1 inputs ('image' [1, 16, 16, 3] f32), got 0" in capsys.readouterr().err
