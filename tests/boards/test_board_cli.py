"""The CLI on an emulated board: `iree-py run --device=qemu --profile` boots the bare-metal module's
board, uploads, runs, prints the outputs (matching onnxruntime) and the cycles of each kernel;
`iree-py benchmark --device=qemu` reports cycles counted on the board."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort

ROOT = Path(__file__).resolve().parents[2]
MODEL, INPUT = ROOT / "examples" / "mlp.onnx", ROOT / "examples" / "mlp_input.npy"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "iree_py.cli.main", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_run_with_profile_and_benchmark_on_the_riscv32_board(tmp_path):
    module = tmp_path / "mlp.vmfb"
    assert _cli("compile", str(MODEL), "--target=riscv32", "-o", str(module)).returncode == 0
    out = tmp_path / "y.npy"
    run = _cli("run", str(module), "--device=qemu", f"--input=@{INPUT}", f"--output=@{out}", "--profile")
    assert run.returncode == 0, run.stderr
    x = np.load(INPUT)
    expected = ort.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(np.load(out), expected, rtol=1e-4, atol=1e-5)
    total = int(re.search(r"total: (\d+) cycles", run.stdout).group(1))
    kernel_cycles = [int(m) for m in re.findall(r"^k\w+\s+1\s+(\d+)\s", run.stdout, re.MULTILINE)]
    assert kernel_cycles and 0 < sum(kernel_cycles) <= total, run.stdout
    bench = _cli("benchmark", str(module), "--device=qemu", f"--input=@{INPUT}", "--repeat=3")
    assert bench.returncode == 0, bench.stderr
    assert re.search(r"main: 3 runs on riscv32-virt, median \d+ cycles", bench.stdout), bench.stdout
