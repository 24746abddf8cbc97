"""The threaded CPU driver (runtime_c/hal/threaded_device.c) from Python: outputs are the same bits
at any thread count, on this host and on arm64 under qemu-user; the thread count's range; and the
C tests of the threaded device under ThreadSanitizer (make test-tsan)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import iree_py
from iree_py.errors import IreePyError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
THREAD_COUNTS = (1, 2, 3, 4, 7)


def _wide_model() -> tuple[bytes, np.ndarray]:
    """A conv and a matmul big enough for many workgroups."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((32, 8, 3, 3)).astype(np.float32), "w")
    m = numpy_helper.from_array(rng.standard_normal((32 * 16 * 16, 64)).astype(np.float32) * 0.01, "m")
    shape = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("Reshape", ["r", "shape"], ["f"]), helper.make_node("MatMul", ["f", "m"], ["y"])], "wide",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])], [w, m, shape])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString(), rng.standard_normal((1, 8, 16, 16)).astype(np.float32)


@pytest.mark.parametrize("name", ["small_cnn", "mlp", "wide"])
def test_outputs_are_the_same_bits_at_any_thread_count(name: str) -> None:
    if name == "wide":
        model, x = _wide_model()
    else:
        model, x = (EXAMPLES / f"{name}.onnx").read_bytes(), np.load(EXAMPLES / f"{name}_input.npy")
    module = iree_py.compile(model, target="host")
    outputs = {}
    for threads in THREAD_COUNTS:
        loaded = iree_py.load(module, threads=threads)
        assert loaded.device.thread_count() == threads
        (fn,) = loaded.functions.values()
        outputs[threads] = [fn(x) for _ in range(3)]
    for threads in THREAD_COUNTS:
        for got in outputs[threads]:
            assert got.tobytes() == outputs[1][0].tobytes(), f"{threads} threads"


def test_arm64_under_qemu_with_threads() -> None:
    x = np.load(EXAMPLES / "small_cnn_input.npy")
    host = iree_py.load(iree_py.compile(EXAMPLES / "small_cnn.onnx", target="host"), threads=1)
    module = iree_py.compile(EXAMPLES / "small_cnn.onnx", target="arm64")
    one = iree_py.load(module, device="qemu", threads=1).functions["main"](x)
    three = iree_py.load(module, device="qemu", threads=3).functions["main"](x)
    assert one.tobytes() == three.tobytes()
    np.testing.assert_allclose(three, host.functions["main"](x), rtol=1e-5, atol=1e-6)


def test_thread_count_range_and_default(monkeypatch: pytest.MonkeyPatch) -> None:
    module = iree_py.compile(EXAMPLES / "mlp.onnx", target="host")
    assert iree_py.load(module, threads=0).device.thread_count() >= 1  # one per physical core
    for bad in (-1, 257, 1.5, True):
        with pytest.raises(IreePyError, match="expected 0 \\(one per physical core\\) to 256"):
            iree_py.load(module, threads=bad)
    monkeypatch.setenv("IREE_PY_THREADS", "3")
    assert iree_py.load(module).device.thread_count() == 3
    monkeypatch.setenv("IREE_PY_THREADS", "many")
    with pytest.raises(IreePyError, match="IREE_PY_THREADS='many': expected a thread count"):
        iree_py.load(module)


def test_cli_threads(tmp_path: Path) -> None:
    module = tmp_path / "m.vmfb"
    module.write_bytes(iree_py.compile(EXAMPLES / "small_cnn.onnx", target="host"))
    run = lambda *a: subprocess.run([sys.executable, "-m", "iree_py.cli.main", *a], capture_output=True, text=True,
                                    cwd=ROOT)
    one = run("run", str(module), f"--input=@{EXAMPLES / 'small_cnn_input.npy'}", "--threads=1")
    two = run("run", str(module), f"--input=@{EXAMPLES / 'small_cnn_input.npy'}", "--threads=2")
    assert one.returncode == 0 and two.returncode == 0 and one.stdout == two.stdout, one.stderr + two.stderr
    bench = run("benchmark", str(module), f"--input=@{EXAMPLES / 'small_cnn_input.npy'}", "--threads=2", "--repeat=3")
    assert bench.returncode == 0 and bench.stdout.startswith("main: 3 runs"), bench.stderr
    bad = run("run", str(module), f"--input=@{EXAMPLES / 'small_cnn_input.npy'}", "--threads=-1")
    assert bad.returncode == 1 and "threads=-1: expected 0 (one per physical core) to 256" in bad.stderr


def test_threaded_device_under_thread_sanitizer(tmp_path: Path) -> None:
    result = subprocess.run(["make", "-s", "-C", str(ROOT / "runtime_c"), f"BUILD_DIR={tmp_path}", "test-tsan"],
                            capture_output=True, text=True, env={**os.environ, "MAKEFLAGS": ""}, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    assert "runtime_tests: all passed (threads only)" in result.stdout
