"""Fixtures for the board tests: the bare-metal targets (a missing cross compiler or qemu-system
fails the test: scripts/setup.sh installs them), and one emulated board per target per test module."""
from __future__ import annotations

import shutil

import pytest

from iree_py.targets import Target, load_target
from iree_py.runtime.board import QemuBoard

BOARD_TARGETS = ("cortex-m4", "cortex-m7", "riscv32")


def board_target(name: str) -> Target:
    target = load_target(name)
    missing = [tool for tool in (target.cross_cc, target.qemu) if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"{name}: {', '.join(missing)} not installed (scripts/setup.sh installs them)")
    return target


@pytest.fixture(params=BOARD_TARGETS)
def target(request) -> Target:
    return board_target(request.param)


@pytest.fixture(scope="module", params=BOARD_TARGETS)
def running_board(request):
    """A board with the real firmware, started once per test module and target."""
    with QemuBoard(board_target(request.param)) as board:
        yield board
