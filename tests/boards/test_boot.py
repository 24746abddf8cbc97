"""Each board boots the real firmware and answers HELLO with what its target says it has."""
from __future__ import annotations

import subprocess

import pytest

from iree_py.runtime.board import BOARDS, QemuBoard, board_cycles_per_second
from iree_py.runtime.serial_device import SerialDevice


def test_board_answers_hello(running_board):
    target = running_board.target
    device = SerialDevice(running_board.url)
    try:
        info = device.info
        assert (info.board, info.arch) == (target.board, target.arch)
        assert info.ram_bytes == target.ram_bytes
        assert info.module_capacity == target.flash_bytes
        assert info.cycles_per_second == board_cycles_per_second(target)
        assert running_board.boot_seconds < 10
    finally:
        device.close()


def test_qemu_stops_on_close_and_on_error(target):
    with QemuBoard(target) as emulator:
        process = emulator.process
        assert process.poll() is None
    assert process.poll() is not None
    with pytest.raises(RuntimeError, match="inside"):
        with QemuBoard(target) as emulator:
            process = emulator.process
            raise RuntimeError("a failure inside the with block")
    assert process.poll() is not None
    left = subprocess.run(["pgrep", "-f", f"tcp:127.0.0.1:{emulator.port},"], capture_output=True, text=True)
    assert left.stdout == ""


def test_every_board_of_a_target_is_known():
    from iree_py.targets import available_targets, load_target
    boards = {load_target(n).board for n in available_targets() if load_target(n).runtime == "bare-metal"}
    assert boards <= set(BOARDS)
