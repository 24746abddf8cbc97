"""Modules from the real compiler, run by the runner built with AddressSanitizer + UBSan.

The C tests use hand-made kernels; this runs compiled models (LLVM kernels, real bytecode and
memory plans) through a sanitized runtime and checks the outputs against onnxruntime.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest

import iree_py
from tests.e2e.harness import assert_close, run_onnxruntime

ROOT = Path(__file__).resolve().parents[2]
SANITIZE = "CFLAGS_EXTRA=-fsanitize=address,undefined -fno-sanitize-recover=all -g"


@pytest.fixture(scope="module")
def sanitized_runner(tmp_path_factory) -> Path:
    build = tmp_path_factory.mktemp("asan")
    result = subprocess.run(["make", "-s", "-C", str(ROOT / "runtime_c"), f"BUILD_DIR={build}", SANITIZE, "runner"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return build / "irp-run"


@pytest.mark.parametrize("name", ["small_cnn", "mlp"])
def test_models_run_clean_under_sanitizers(name: str, sanitized_runner: Path, tmp_path: Path):
    m = onnx.load(str(ROOT / "examples" / f"{name}.onnx"))
    x = np.load(ROOT / "examples" / f"{name}_input.npy")
    module = tmp_path / "m.vmfb"
    module.write_bytes(iree_py.compile(str(ROOT / "examples" / f"{name}.onnx")))
    (tmp_path / "x.bin").write_bytes(x.tobytes())
    result = subprocess.run([str(sanitized_runner), str(module), f"--input={tmp_path / 'x.bin'}",
                             f"--output={tmp_path / 'y.bin'}", "--repeat=3"],
                            capture_output=True, text=True, env={**os.environ, "ASAN_OPTIONS": "detect_leaks=1"})
    assert result.returncode == 0, result.stderr[-4000:]
    expected = run_onnxruntime(m, [x])[0]
    y = np.fromfile(tmp_path / "y.bin", dtype=np.float32).reshape(expected.shape)
    assert_close([y], [expected])
