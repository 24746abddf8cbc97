"""The link injured on purpose (tests/device/fault_proxy.py between SerialDevice and device-sim):
uploads recover (retry, resume) or fail with a clear message, the board never accepts a module
other than the one sent, and the client never hangs. All faults are seeded."""
from __future__ import annotations

import time
import zlib

import numpy as np
import pytest

from iree_py.errors import IreeRuntimeError
from iree_py.runtime import protocol as p
from iree_py.runtime.serial_device import SerialDevice
from tests.device.fault_proxy import FaultPlan, FaultProxy
from tests.device.models import example_input, onnxruntime_outputs

FAST = dict(timeout=0.2, retries=8)  # > the board's 100 ms inter-byte timeout


def _board_holds_exactly(board: SerialDevice, module: bytes) -> None:
    status = board.status()
    assert status.state == p.ModuleState.ACCEPTED
    assert (status.size, status.crc, status.held) == (len(module), zlib.crc32(module), len(module))


def test_upload_resumes_after_the_link_is_cut(sim, host_modules):
    module = host_modules["small_cnn"]
    with FaultProxy(sim.port, FaultPlan(cut_after=[20000, 41000])) as proxy:
        board = SerialDevice(f"socket://127.0.0.1:{proxy.port}", **FAST)
        report = board.upload(module, "x86_64")
        assert proxy.counts.cuts == 2
        resumed = [e for e in report.events if e.startswith("link dropped during upload at byte")]
        assert len(resumed) == 2, report.events
        assert all(f"of {len(module)}; resumed at byte" in e for e in resumed)
        assert report.sent < len(module) + 2 * 1024  # resumed, not restarted
        _board_holds_exactly(board, module)
        x = example_input("small_cnn")
        np.testing.assert_allclose(board.run("main", [x]).outputs[0], onnxruntime_outputs("small_cnn", x)[0],
                                   rtol=1e-4, atol=1e-5)


def test_dropped_bytes_and_flipped_bits_are_retried(sim, host_modules):
    module = host_modules["small_cnn"]
    plan = FaultPlan(seed=5, drop_rate=5e-5, flip_rate=5e-5)
    with FaultProxy(sim.port, plan) as proxy:
        board = SerialDevice(f"socket://127.0.0.1:{proxy.port}", **FAST)
        board.upload(module, "x86_64")
        x = example_input("small_cnn")
        outputs = [board.run("main", [x]).outputs[0] for _ in range(3)]
        assert proxy.counts.dropped > 0 and proxy.counts.flipped > 0, proxy.counts
    _board_holds_exactly(SerialDevice(sim.url), module)
    for y in outputs:
        np.testing.assert_allclose(y, onnxruntime_outputs("small_cnn", x)[0], rtol=1e-4, atol=1e-5)


def test_a_mangled_upload_is_never_accepted(sim, host_modules):
    """Heavy corruption on the way to the board: the upload either completes with exactly the
    module sent or fails with a message; the board never accepts anything else."""
    module = host_modules["mlp"]
    plan = FaultPlan(seed=3, flip_rate=1e-4, drop_rate=5e-5, to_board_only=True)
    with FaultProxy(sim.port, plan) as proxy:
        board = SerialDevice(f"socket://127.0.0.1:{proxy.port}", timeout=0.2, retries=3)
        try:
            board.upload(module, "x86_64")
        except IreeRuntimeError as e:
            assert "did not answer" in str(e) or "board refused" in str(e), e
        assert proxy.counts.flipped > 0
    status = SerialDevice(sim.url).status()
    if status.state == p.ModuleState.ACCEPTED:
        assert (status.size, status.crc) == (len(module), zlib.crc32(module))


def test_upload_gives_up_with_a_message_when_the_link_keeps_dropping(sim, host_modules):
    module = host_modules["small_cnn"]
    with FaultProxy(sim.port, FaultPlan(cut_after=[9000 + 300 * i for i in range(10)])) as proxy:
        board = SerialDevice(f"socket://127.0.0.1:{proxy.port}", timeout=0.3, retries=2, reconnects=2)
        with pytest.raises(IreeRuntimeError, match=f"link dropped during upload at byte \\d+ of {len(module)}; "
                                                   "gave up after 3 drops"):
            board.upload(module, "x86_64")
    assert SerialDevice(sim.url).status().state != p.ModuleState.ACCEPTED


def test_a_silent_board_times_out(sim):
    with FaultProxy(sim.port, FaultPlan(blackhole=True)) as proxy:
        start = time.monotonic()
        with pytest.raises(IreeRuntimeError, match="did not answer HELLO after 3 tries"):
            SerialDevice(f"socket://127.0.0.1:{proxy.port}", timeout=0.2, retries=2, reconnects=0)
        assert time.monotonic() - start < 5


def test_a_board_that_is_gone_is_a_clear_error():
    with pytest.raises(IreeRuntimeError, match="cannot reach the board at socket://127.0.0.1:1"):
        SerialDevice("socket://127.0.0.1:1", timeout=0.2, reconnects=1)
