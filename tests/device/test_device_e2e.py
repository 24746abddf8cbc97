"""Modules uploaded to and run on device-sim (the C device server with the hosted runtime) through
SerialDevice, iree_py.load(device="socket://...") and the CLI; outputs against onnxruntime."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import iree_py
from iree_py.cli.main import main as cli
from iree_py.errors import IreeRuntimeError
from iree_py.runtime import protocol as p
from iree_py.runtime.serial_device import SerialDevice
from tests.device.models import example_input, onnxruntime_outputs

TOLERANCE = dict(rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["small_cnn", "mlp"])
def test_load_on_a_board_matches_onnxruntime(name, sim, host_modules):
    x = example_input(name)
    m = iree_py.load(host_modules[name], device=sim.url)
    y = m.main(x)
    np.testing.assert_allclose(y, onnxruntime_outputs(name, x)[0], **TOLERANCE)
    status = m.device.status()
    assert status.state == p.ModuleState.ACCEPTED
    assert (status.size, status.crc) == (len(host_modules[name]), zlib.crc32(host_modules[name]))


def test_upload_is_skipped_when_the_board_holds_the_module(sim, host_modules):
    module = host_modules["mlp"]
    board = SerialDevice(sim.url)
    first = board.upload(module, "x86_64")
    assert (first.skipped, first.sent, first.size) == (False, len(module), len(module))
    again = SerialDevice(sim.url).upload(module, "x86_64")
    assert (again.skipped, again.sent) == (True, 0)


def test_inputs_and_outputs_bigger_than_a_frame(sim, host_modules):
    board = SerialDevice(sim.url)
    board.upload(host_modules["small_cnn"], "x86_64")
    x = np.random.default_rng(0).standard_normal(example_input("small_cnn").shape).astype(np.float32)
    assert x.nbytes > board.info.max_payload
    result = board.run("main", [x])
    np.testing.assert_allclose(result.outputs[0], onnxruntime_outputs("small_cnn", x)[0], **TOLERANCE)
    assert result.cycles > 0


def test_profile_and_benchmark(sim, host_modules):
    board = SerialDevice(sim.url)
    board.upload(host_modules["small_cnn"], "x86_64")
    result = board.run("main", [example_input("small_cnn")], profile=True)
    names = [e.entry_point for e in result.profile]
    assert len(names) >= 3 and len(set(names)) == len(names)
    assert all(e.dispatches == 1 for e in result.profile)
    assert sum(e.cycles for e in result.profile) <= result.cycles
    bench = board.benchmark(7)
    assert bench.runs == 7 and 0 < bench.min_cycles <= bench.median_cycles <= bench.max_cycles


def test_wrong_arch_is_refused(sim, host_modules):
    arm64 = iree_py.compile("examples/mlp.onnx", target="arm64")
    with pytest.raises(IreeRuntimeError, match="board refused module: built for aarch64, board is x86_64"):
        SerialDevice(sim.url).upload(arm64, "aarch64")
    with pytest.raises(IreeRuntimeError, match="built for aarch64, board is x86_64"):
        iree_py.load(arm64, device=sim.url)


def test_arch_named_by_the_board(start_sim, host_modules):
    board_sim = start_sim("--arch=thumbv7em", "--name=mps2-an386")
    with pytest.raises(IreeRuntimeError, match="built for riscv32, board is thumbv7em \\(mps2-an386\\)"):
        SerialDevice(board_sim.url).upload(host_modules["mlp"], "riscv32")


def test_too_big_says_by_how_much(start_sim, host_modules):
    small = start_sim("--module-capacity=50000")
    module = host_modules["mlp"]
    with pytest.raises(IreeRuntimeError, match=f"does not fit: module is {len(module)} bytes; module storage holds "
                                               f"50000 \\({len(module) - 50000} bytes too many\\)"):
        SerialDevice(small.url).upload(module, "x86_64")


def test_bad_whole_module_crc_is_never_accepted(sim, host_modules):
    board = SerialDevice(sim.url)
    module = host_modules["mlp"]
    with pytest.raises(IreeRuntimeError, match="whole-module CRC mismatch: .*upload discarded"):
        board.upload(module, "x86_64", crc=zlib.crc32(module) ^ 1)
    assert board.status().state == p.ModuleState.EMPTY
    with pytest.raises(p.DeviceRefused, match="NO_MODULE"):
        board.run("main", [example_input("mlp")])


def test_a_module_the_runtime_refuses_is_not_accepted(sim, host_modules):
    corrupt = bytearray(host_modules["mlp"])
    corrupt[4:8] = b"XXXX"  # not an iree-py module; its CRC is sent as is, so only the runtime can tell
    board = SerialDevice(sim.url)
    with pytest.raises(IreeRuntimeError, match="board refused module: the runtime refused the module: .*LOAD_FAILED"):
        board.upload(bytes(corrupt), "x86_64")
    assert board.status().state == p.ModuleState.EMPTY


def test_not_enough_ram_is_reported_by_the_runtime(start_sim, host_modules):
    tiny = start_sim("--ram=8192")
    with pytest.raises(IreeRuntimeError, match="out of memory"):
        SerialDevice(tiny.url).upload(host_modules["small_cnn"], "x86_64")


def test_run_refusals_carry_the_runtime_message(sim, host_modules):
    board = SerialDevice(sim.url)
    board.upload(host_modules["mlp"], "x86_64")
    with pytest.raises(p.DeviceRefused, match="NO_FUNCTION: the module has no function 'nope'"):
        board.run("nope", [example_input("mlp")])
    wrong = np.zeros((3, 3), np.float32)
    with pytest.raises(p.DeviceRefused, match="RUN_FAILED: main: .*"):
        board.run("main", [wrong])
    with pytest.raises(p.DeviceRefused, match="NO_RUN"):
        board.benchmark(3)


def test_cli_flash_run_and_benchmark(sim, host_modules, tmp_path, capsys):
    path = tmp_path / "cnn.vmfb"
    path.write_bytes(host_modules["small_cnn"])
    x_path = tmp_path / "x.npy"
    x = example_input("small_cnn")
    np.save(x_path, x)
    assert cli(["flash", str(path), f"--port={sim.url}"]) == 0
    assert f"{len(host_modules['small_cnn'])} bytes flashed to device-sim (x86_64)" in capsys.readouterr().out
    assert cli(["flash", str(path), f"--port={sim.url}"]) == 0
    assert "already on device-sim" in capsys.readouterr().out
    out_path = tmp_path / "y.npy"
    assert cli(["run", str(path), f"--device={sim.url}", f"--input=@{x_path}", f"--output=@{out_path}", "--profile"]) == 0
    out = capsys.readouterr().out
    assert "total: " in out and "k0_" in out
    np.testing.assert_allclose(np.load(out_path), onnxruntime_outputs("small_cnn", x)[0], **TOLERANCE)
    assert cli(["benchmark", str(path), f"--device={sim.url}", f"--input=@{x_path}", "--repeat=5"]) == 0
    assert "main: 5 runs on device-sim, median " in capsys.readouterr().out


def test_cli_refusal_is_an_error_message(sim, tmp_path, capsys):
    path = tmp_path / "arm.vmfb"
    path.write_bytes(iree_py.compile("examples/mlp.onnx", target="arm64"))
    assert cli(["flash", str(path), f"--port={sim.url}"]) == 1
    assert "iree-py flash: error: board refused module: built for aarch64, board is x86_64" in capsys.readouterr().err
