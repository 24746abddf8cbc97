"""serial://: the board's UART on a real tty device (qemu's pseudo-terminal, as a USB serial
adapter appears), opened by pyserial as a serial port; upload, run, and the CLI's flash command."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort

from iree_py.compiler import CompileOptions, compile_model
from iree_py.runtime.board import QemuBoard
from iree_py.runtime.serial_device import SerialDevice
from tests.boards.conftest import board_target

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_serial_port_upload_and_run(tmp_path):
    target = board_target("cortex-m7")
    model = EXAMPLES / "mlp.onnx"
    x = np.load(EXAMPLES / "mlp_input.npy")
    module_path = tmp_path / "mlp.vmfb"
    module_path.write_bytes(compile_model(model, CompileOptions(target=target.name)))
    with QemuBoard(target, link="pty") as board:
        assert board.url.startswith("serial:///dev/pts/")
        flashed = subprocess.run([sys.executable, "-m", "iree_py.cli.main", "flash", str(module_path),
                                  f"--port={board.url}"], capture_output=True, text=True, timeout=120)
        assert flashed.returncode == 0, flashed.stderr
        device = SerialDevice(board.url)
        try:
            assert device.info.arch == "thumbv7em" and device.info.board == "mps2-an500"
            assert device.holds(module_path.read_bytes())  # flashed by the CLI: no second upload
            y = device.run("main", [x]).outputs[0]
        finally:
            device.close()
    expected = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)
