"""Fixtures for the device protocol tests: the device simulator (runtime_c/tools/device_sim.c,
built with ASan + UBSan), started per test with the board options it needs, and host modules."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import iree_py
from tests.device.models import EXAMPLES

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def device_sim_binary(tmp_path_factory) -> Path:
    build = tmp_path_factory.mktemp("device-sim")
    result = subprocess.run(["make", "-s", "-C", str(ROOT / "runtime_c"), f"BUILD_DIR={build}", "device-sim-asan"],
                            capture_output=True, text=True, env={**os.environ, "MAKEFLAGS": ""})
    assert result.returncode == 0, result.stdout + result.stderr
    return build / "device-sim-asan"


class Sim:
    """One device-sim process; `url` reaches it."""

    def __init__(self, binary: Path, *options: str) -> None:
        env = {**os.environ, "ASAN_OPTIONS": "allocator_may_return_null=1:detect_leaks=0"}
        self.process = subprocess.Popen([str(binary), *options], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=env)
        line = self.process.stdout.readline()
        assert line.startswith("listening on "), f"device-sim did not start: {line!r} {self.process.stderr.read()}"
        self.port = int(line.rsplit(":", 1)[1])
        self.url = f"socket://127.0.0.1:{self.port}"

    def stop(self) -> str:
        """Stops the simulator; returns its stderr (sanitizer reports land there)."""
        if self.process.poll() is None:
            self.process.terminate()
        _, err = self.process.communicate(timeout=10)
        return err


@pytest.fixture
def start_sim(device_sim_binary):
    sims: list[Sim] = []

    def start(*options: str) -> Sim:
        sims.append(Sim(device_sim_binary, *options))
        return sims[-1]

    yield start
    for sim in sims:
        crashed = sim.process.poll() is not None
        err = sim.stop()
        assert not crashed, f"device-sim exited by itself:\n{err}"
        assert "runtime error" not in err and "AddressSanitizer" not in err, err


@pytest.fixture
def sim(start_sim) -> Sim:
    return start_sim()


@pytest.fixture(scope="session")
def host_modules() -> dict[str, bytes]:
    return {name: iree_py.compile(str(EXAMPLES / f"{name}.onnx")) for name in ("small_cnn", "mlp")}
