"""`--trace` from an emulated board: `iree-py run|benchmark --device=qemu --trace=FILE` on a
Cortex-M4 module writes the same Chrome trace events as this host's runtime (the format checks of
tests/runtime/test_trace.py), a slice per dispatch in the order they ran, named by kernel, timed
from the board's cycle counter at the cycles per second of its HELLO."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runtime.test_trace import check_trace_format

ROOT = Path(__file__).resolve().parents[2]
MODEL, INPUT = ROOT / "examples" / "mlp.onnx", ROOT / "examples" / "mlp_input.npy"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "iree_py.cli.main", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_run_and_benchmark_trace_on_the_cortex_m4_board(tmp_path: Path) -> None:
    module = tmp_path / "mlp.vmfb"
    assert _cli("compile", str(MODEL), "--target=cortex-m4", "-o", str(module)).returncode == 0
    run = _cli("run", str(module), "--device=qemu", f"--input=@{INPUT}", f"--trace={tmp_path / 'run.json'}",
               "--profile")
    assert run.returncode == 0, run.stderr
    trace = json.loads((tmp_path / "run.json").read_text())
    check_trace_format(trace)
    assert trace["otherData"]["calls"] == 1 and trace["otherData"]["dropped dispatches"] == 0
    rate = trace["otherData"]["cycles per second"]
    assert rate > 0 and trace["otherData"]["board"]
    dispatches = [e for e in trace["traceEvents"] if e.get("cat") == "dispatch"]
    assert [e["name"] for e in dispatches] == ["k0_matmul", "k1_matmul", "k2_matmul"]
    assert all(e["args"]["source nodes"] for e in dispatches)
    # the same cycles as the profile of that run, made microseconds
    profiled = {m[0]: int(m[1]) for m in re.findall(r"^(k\w+)\s+1\s+(\d+)\s", run.stdout, re.MULTILINE)}
    for e in dispatches:
        assert e["dur"] == pytest.approx(profiled[e["name"]] * 1e6 / rate, abs=0.1)
    bench = _cli("benchmark", str(module), "--device=qemu", f"--input=@{INPUT}", "--repeat=3",
                 f"--trace={tmp_path / 'bench.json'}")
    assert bench.returncode == 0, bench.stderr
    trace = json.loads((tmp_path / "bench.json").read_text())
    check_trace_format(trace)
    assert trace["otherData"]["calls"] == 3
    assert sum(e.get("cat") == "dispatch" for e in trace["traceEvents"]) == 9
