"""The fault proxy between the host and an emulated board's UART (not the simulator): the link is
cut twice mid-upload and bytes are dropped and flipped on the way; the upload resumes, the board
holds exactly the module sent, and it runs matching onnxruntime."""
from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import onnxruntime as ort

from iree_py.compiler import CompileOptions, compile_model
from iree_py.runtime import protocol as p
from iree_py.runtime.board import QemuBoard
from iree_py.runtime.serial_device import SerialDevice
from tests.boards.conftest import board_target
from tests.device.fault_proxy import FaultPlan, FaultProxy

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_upload_to_a_board_survives_cuts_drops_and_flips():
    target = board_target("cortex-m4")
    model = EXAMPLES / "small_cnn.onnx"
    module = compile_model(model, CompileOptions(target=target.name))
    x = np.load(EXAMPLES / "small_cnn_input.npy")
    plan = FaultPlan(seed=3, drop_rate=6e-5, flip_rate=6e-5, cut_after=[15000, 33000])
    with QemuBoard(target) as board, FaultProxy(board.port, plan) as proxy:
        device = SerialDevice(f"socket://127.0.0.1:{proxy.port}", timeout=0.5, retries=8)
        try:
            report = device.upload(module, "thumbv7em")
            status = device.status()
            y = device.run("main", [x]).outputs[0]
        finally:
            device.close()
    assert proxy.counts.cuts == 2 and proxy.counts.dropped + proxy.counts.flipped > 0, proxy.counts
    assert sum(e.startswith("link dropped during upload at byte") for e in report.events) == 2, report.events
    assert report.sent < len(module) + 4 * 1024  # resumed, not restarted
    assert status.state == p.ModuleState.ACCEPTED
    assert (status.size, status.crc, status.held) == (len(module), zlib.crc32(module), len(module))
    expected = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, {"image": x})[0]
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)
