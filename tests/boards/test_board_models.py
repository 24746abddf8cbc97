"""Models compiled for each bare-metal target and run on its emulated board over the device
protocol, matching onnxruntime. One board per target for the whole module (running_board)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import iree_py
from iree_py.compiler import CompileOptions, compile_model
from iree_py.fit import footprint
from iree_py.module.reader import read_module
from iree_py.runtime.serial_device import SerialDevice
from tests.boards.kws_model import kws_input, make_kws_model

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RTOL, ATOL = 1e-4, 1e-5


def _reference(model: Path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


@pytest.fixture(scope="module")
def kws_path(tmp_path_factory) -> Path:
    return make_kws_model(tmp_path_factory.mktemp("kws") / "kws_cnn.onnx")


def _model_and_input(name: str, kws: Path) -> tuple[Path, np.ndarray]:
    if name == "kws_cnn":
        return kws, kws_input()
    return EXAMPLES / f"{name}.onnx", np.load(EXAMPLES / f"{name}_input.npy")


@pytest.mark.parametrize("model_name", ["small_cnn", "mlp", "kws_cnn"])
def test_model_on_board_matches_onnxruntime(running_board, model_name, kws_path):
    target = running_board.target
    model, x = _model_and_input(model_name, kws_path)
    data = compile_model(model, CompileOptions(target=target.name))
    module = read_module(data)
    device = SerialDevice(running_board.url)
    try:
        upload = device.upload(data, module.executables[0].arch)
        ram_used = device.info.ram_bytes - upload.ram_left
        result = device.run(module.functions[0].name, [x])
    finally:
        device.close()
    np.testing.assert_allclose(result.outputs[0], _reference(model, x), rtol=RTOL, atol=ATOL)
    assert result.cycles > 0
    # The compile-time fit check's RAM figure bounds what the board really used, and not loosely.
    estimate = footprint(target, module, len(data)).ram_needed
    assert module.memory_plan.arena_size < ram_used <= estimate < ram_used + 4096, (ram_used, estimate)


@pytest.mark.parametrize("name", ["riscv32", "cortex-m7"])
def test_load_with_device_qemu_starts_the_board(name):
    """iree_py.load(module, device="qemu") on a bare-metal module: its board, started and stopped."""
    from tests.boards.conftest import board_target
    target = board_target(name)
    model = EXAMPLES / "mlp.onnx"
    x = np.load(EXAMPLES / "mlp_input.npy")
    loaded = iree_py.load(compile_model(model, CompileOptions(target=target.name)),
                          device="qemu" if name == "riscv32" else f"qemu:{name}")
    process = loaded.device.board.process
    try:
        assert loaded.device.info.board == target.board
        y = getattr(loaded, loaded.module.functions[0].name)(x)
        np.testing.assert_allclose(y, _reference(model, x), rtol=RTOL, atol=ATOL)
    finally:
        loaded.device.board.close()
    assert process.poll() is not None


def test_model_too_big_for_the_board_is_refused_at_compile_time():
    from iree_py.errors import CompileError
    with pytest.raises(CompileError, match=r"does not fit target cortex-m4:\n  RAM: needs [\d,]+ bytes .* but --ram is 65,536"):
        compile_model(EXAMPLES / "small_cnn.onnx", CompileOptions(target="cortex-m4", ram=64 * 1024))
