"""Every op case of tests/e2e/test_ops.py compiled for riscv32 and run on the emulated riscv32
board (qemu-system-riscv32 -M virt) over the device protocol, against the reference
(harness.run_reference). Cortex-M kernels run every op case under qemu-arm user mode (tests/e2e/test_flat_targets.py); riscv32
kernels have no user-mode path, so the board runs them. Tolerance as in test_ops: 1e-4 of the
reference's largest magnitude."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import iree_py
from iree_py.module.reader import read_module
from iree_py.runtime.board import QemuBoard
from iree_py.runtime.serial_device import SerialDevice
from tests.boards.conftest import board_target

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from harness import assert_close, random_inputs, run_reference  # noqa: E402
from test_ops import CASES  # noqa: E402


@pytest.fixture(scope="module")
def riscv32_board():
    with QemuBoard(board_target("riscv32")) as board:
        device = SerialDevice(board.url, timeout=1.0)
        try:
            yield device
        finally:
            device.close()


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_on_riscv32_board(riscv32_board, case):
    onnx_model = CASES[case]
    data = iree_py.compile(onnx_model.SerializeToString(), target="riscv32")
    module = read_module(data)
    inputs = random_inputs(onnx_model)
    riscv32_board.upload(data, "riscv32")
    outputs = riscv32_board.run(module.functions[0].name, inputs).outputs
    assert_close(outputs, run_reference(onnx_model, inputs))
