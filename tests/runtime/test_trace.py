"""`--trace=FILE` (iree_py/cli/trace.py): the file is valid Chrome trace-event JSON (required fields,
slices nested on each track, timestamps in order per track), the slices of each call add up to the
runtime's call time, that time is most of the call as measured from Python, and with threads the
workers' spans account for every workgroup of each dispatch; under qemu-user the runner's trace
has the same kernels. (Board traces: tests/boards/test_board_trace.py, tests/device/test_device_trace.py.)"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import iree_py
from iree_py.cli.trace import chrome_trace, start_tracing
from tests.runtime.test_threads import _wide_model

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
# The runtime's call time (the call slice) against the wall time of the same call from Python: the
# difference is the Python binding (argument checks, the ctypes call, copying outputs out).
PYTHON_SHARE = 0.25   # at most this share of the measured call ...
PYTHON_US = 30.0      # ... plus this many microseconds


def check_trace_format(trace: dict) -> None:
    events = trace["traceEvents"]
    by_track: dict[int, list[dict]] = {}
    for e in events:
        assert {"ph", "name", "pid", "tid"} <= e.keys(), e
        if e["ph"] == "M":
            continue
        assert isinstance(e["ts"], float) and e["ts"] >= 0, e
        if e["ph"] == "X":
            assert e["dur"] >= 0 and isinstance(e["args"], dict), e
            by_track.setdefault(e["tid"], []).append(e)
        else:
            assert e["ph"] == "C" and all(isinstance(v, int) for v in e["args"].values()), e
    for tid, slices in by_track.items():
        starts = [s["ts"] for s in slices]
        assert starts == sorted(starts), f"track {tid}: timestamps go back"
        open_ends: list[float] = []  # the ends of the slices enclosing the current one
        for s in slices:
            while open_ends and s["ts"] >= open_ends[-1] - 1e-3:
                open_ends.pop()
            end = s["ts"] + s["dur"]
            assert not open_ends or end <= open_ends[-1] + 1e-3, f"track {tid}: {s['name']} overlaps its parent"
            open_ends.append(end)


def test_benchmark_trace_file_is_valid_and_shows_the_workers(tmp_path: Path) -> None:
    model, x = _wide_model()
    module = tmp_path / "m.vmfb"
    module.write_bytes(iree_py.compile(model, target="host"))
    np.save(tmp_path / "x.npy", x)
    result = subprocess.run([sys.executable, "-m", "iree_py.cli.main", "benchmark", str(module), f"--input=@{tmp_path / 'x.npy'}",
                             "--repeat=4", "--threads=2", f"--trace={tmp_path / 't.json'}"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    trace = json.loads((tmp_path / "t.json").read_text())
    check_trace_format(trace)
    events = trace["traceEvents"]
    assert trace["otherData"]["calls"] == 4 and trace["otherData"]["dropped dispatches"] == 0
    assert sum(e["ph"] == "X" and e["cat"] == "call" for e in events) == 4
    assert any(e["ph"] == "M" and e["args"]["name"] == "worker 1" for e in events)
    # whether the worker got workgroups depends on the scheduler (the caller may take them all first
    # on a busy machine); that the spans account for every workgroup is test_slices_add_up_to_the_call's
    assert all(e["cat"] == "workgroups" and e["args"]["workgroups run"] > 0 for e in events
               if e["ph"] == "X" and e["tid"] == 1)
    dispatches = [e for e in events if e["ph"] == "X" and e["cat"] == "dispatch"]
    assert dispatches and all(e["args"]["source nodes"] and e["args"]["binding bytes"] > 0 for e in dispatches)


@pytest.mark.parametrize("threads", [1, 3])
def test_slices_add_up_to_the_call(threads: int) -> None:
    model, x = _wide_model()
    loaded = iree_py.load(iree_py.compile(model, target="host"), threads=threads)
    (fn,) = loaded.functions.values()
    fn(x)
    device = start_tracing(loaded)
    calls, walls = [], []
    for _ in range(20):
        start = time.perf_counter()
        fn(x)
        walls.append(time.perf_counter() - start)
        calls.append(device.trace())
    call_us = [(c.end_ns - c.start_ns) / 1000 for c in calls]
    assert all(c <= w * 1e6 for c, w in zip(call_us, walls))
    # the best of each, so that a preempted call (the machine is shared) does not decide it
    assert min(call_us) >= min(walls) * 1e6 * (1 - PYTHON_SHARE) - PYTHON_US, (min(call_us), min(walls) * 1e6)
    for call in calls:
        for d in call.dispatches:
            assert call.start_ns <= d.start_ns <= d.end_ns <= call.end_ns
            assert len(d.threads) == threads
            assert sum(t.workgroups for t in d.threads) == int(np.prod(d.workgroup_count))
    trace = chrome_trace(loaded, fn.__name__, calls, device.arena_size())
    check_trace_format(trace)
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["tid"] == 0]
    call_slices = [e for e in slices if e["cat"] == "call"]
    for call in call_slices:
        inside = [e for e in slices if e["cat"] in ("vm", "dispatch") and call["ts"] <= e["ts"] < call["ts"] + call["dur"]]
        assert sum(e["dur"] for e in inside) == pytest.approx(call["dur"], rel=1e-6, abs=1e-3 * len(inside))


def test_run_trace_and_its_errors(tmp_path: Path) -> None:
    module = tmp_path / "m.vmfb"
    module.write_bytes(iree_py.compile(EXAMPLES / "small_cnn.onnx", target="host"))
    run = lambda *a: subprocess.run([sys.executable, "-m", "iree_py.cli.main", "run", str(module),
                                     f"--input=@{EXAMPLES / 'small_cnn_input.npy'}", *a], capture_output=True, text=True,
                                    cwd=ROOT)
    result = run(f"--trace={tmp_path / 'run.json'}")
    assert result.returncode == 0, result.stderr
    trace = json.loads((tmp_path / "run.json").read_text())
    check_trace_format(trace)
    kernels = [e["name"] for e in trace["traceEvents"] if e.get("cat") == "dispatch"]
    assert kernels[:2] == ["k0_conv", "k1_maxpool"] and trace["otherData"]["calls"] == 1
    # under qemu-user the runner records the timeline (irp-run --trace): the same kernels, workers included
    module.write_bytes(iree_py.compile(EXAMPLES / "small_cnn.onnx", target="arm64"))
    result = run("--device=qemu", "--threads=2", f"--trace={tmp_path / 'q.json'}")
    assert result.returncode == 0, result.stderr
    trace = json.loads((tmp_path / "q.json").read_text())
    check_trace_format(trace)
    assert [e["name"] for e in trace["traceEvents"] if e.get("cat") == "dispatch"] == kernels
    assert any(e["ph"] == "M" and e["args"]["name"] == "worker 1" for e in trace["traceEvents"])
    memory = [e for e in trace["traceEvents"] if e["ph"] == "C"]
    assert memory and all(e["args"]["arena bytes"] > 0 for e in memory)


def test_trace_is_refused_where_nothing_records_it() -> None:
    class Elsewhere:  # a device with no timeline (neither this host's runtime nor the qemu-user runner)
        pass
    module = iree_py.load(iree_py.compile(EXAMPLES / "small_cnn.onnx", target="host"))
    module.device = Elsewhere()
    with pytest.raises(iree_py.IreePyError, match="--trace needs this host's runtime .* not Elsewhere"):
        start_tracing(module)
