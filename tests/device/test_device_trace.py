"""TRACE (docs/device_protocol.md) on device-sim, built with ASan: a traced RUN keeps each dispatch
in order, inside the call, with the profile's names; the trace's room (in the RAM after the inputs)
is given back before anything else reuses that RAM, so a TRACE after BENCHMARK or an untraced RUN
is refused, not read from reused memory; `iree-py run --device=socket://... --trace` writes it as
Chrome trace events."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from iree_py.cli.main import main as cli
from iree_py.runtime import protocol as p
from iree_py.runtime.serial_device import SerialDevice
from tests.device.models import example_input, onnxruntime_outputs
from tests.runtime.test_trace import check_trace_format


def test_traced_run_has_every_dispatch_in_order(sim, host_modules) -> None:
    board = SerialDevice(sim.url)
    board.upload(host_modules["small_cnn"], "x86_64")
    x = example_input("small_cnn")
    result = board.run("main", [x], trace=True)
    np.testing.assert_allclose(result.outputs[0], onnxruntime_outputs("small_cnn", x)[0], rtol=1e-4, atol=1e-5)
    trace = result.trace
    assert trace is not None and trace.dropped == 0 and trace.total == len(trace.dispatches) >= 3
    names = [result.profile[d.entry_point].entry_point for d in trace.dispatches]
    assert names == [e.entry_point for e in result.profile]  # each kernel once, in the order they ran
    assert trace.start <= trace.dispatches[0].start
    for before, after in zip(trace.dispatches, trace.dispatches[1:]):
        assert before.start <= before.end <= after.start
    assert trace.dispatches[-1].end <= trace.end
    assert all(d.binding_bytes > 0 and min(d.workgroup_count) >= 1 for d in trace.dispatches)


def test_trace_is_refused_after_an_untraced_run_or_a_benchmark(sim, host_modules) -> None:
    board = SerialDevice(sim.url)
    board.upload(host_modules["mlp"], "x86_64")
    x = example_input("mlp")
    board.run("main", [x])
    with pytest.raises(p.DeviceRefused, match="NO_RUN: the latest run was not traced"):
        board.request(p.Msg.TRACE, p.trace_request(0))
    board.run("main", [x], trace=True)
    assert board.benchmark(3).runs == 3
    with pytest.raises(p.DeviceRefused, match="NO_RUN: the latest run was not traced"):
        board.request(p.Msg.TRACE, p.trace_request(0))
    again = board.run("main", [x], trace=True)
    np.testing.assert_allclose(again.outputs[0], onnxruntime_outputs("mlp", x)[0], rtol=1e-4, atol=1e-5)
    assert len(again.trace.dispatches) == again.trace.total >= 2


def test_cli_run_trace_over_a_socket(sim, host_modules, tmp_path: Path) -> None:
    path, x_path = tmp_path / "cnn.vmfb", tmp_path / "x.npy"
    path.write_bytes(host_modules["small_cnn"])
    np.save(x_path, example_input("small_cnn"))
    assert cli(["run", str(path), f"--device={sim.url}", f"--input=@{x_path}", f"--trace={tmp_path / 't.json'}"]) == 0
    trace = json.loads((tmp_path / "t.json").read_text())
    check_trace_format(trace)
    assert trace["otherData"]["board"] == "device-sim" and trace["otherData"]["cycles per second"] == 10 ** 9
    kernels = [e["name"] for e in trace["traceEvents"] if e.get("cat") == "dispatch"]
    assert kernels[:2] == ["k0_conv", "k1_maxpool"]  # as this host's runtime names them (tests/runtime/test_trace.py)
