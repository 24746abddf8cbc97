"""Truncated and byte-flipped modules: the C runtime returns an error or runs, never crashes.

The C tests (runtime_c/tests, under AddressSanitizer and UBSan) cover every offset of small
hand-made modules; this covers a module from the real compiler, with every section."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import iree_py

ROOT = Path(__file__).resolve().parents[2]


def test_truncations_and_byte_flips_never_crash(tmp_path):
    data = iree_py.compile(str(ROOT / "examples" / "small_cnn.onnx"))
    path = tmp_path / "m.vmfb"
    path.write_bytes(data)
    # Every 7th byte, up to five values each (kernel code included); truncations every byte or so.
    result = subprocess.run([sys.executable, str(Path(__file__).parent / "corrupt_module_check.py"), str(path), "7"],
                            capture_output=True, text=True, timeout=900, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, f"crashed (exit {result.returncode}):\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    loaded, rejected = (int(w) for w in result.stdout.split()[1::2])
    assert rejected > 0 and loaded > 0  # most truncations fail; most flips of constant data still load
