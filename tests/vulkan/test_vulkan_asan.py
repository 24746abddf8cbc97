"""The Vulkan driver under AddressSanitizer + UBSan: irp-run built with the sanitizers runs small_cnn
on the Vulkan device with no error. LeakSanitizer may report leaks inside the driver stack (lavapipe
and its LLVM, unloaded by the Vulkan loader at vkDestroyInstance, so their frames show as
<unknown module>); any leak with a frame of the runtime fails the test (tests/lsan_vulkan.supp
suppresses what can be named)."""
import os
import re
import subprocess
from pathlib import Path

import numpy as np

import iree_py

ROOT = Path(__file__).parents[2]
RUNTIME = ROOT / "runtime_c"


def _leaks_outside_the_driver_stack(stderr: str) -> list[str]:
    blocks = re.findall(r"(?:Direct|Indirect) leak of .*?(?=\n\n|\Z)", stderr, re.S)
    frames = lambda block: [line for line in block.splitlines()[1:] if re.match(r"\s+#\d+ ", line)]
    return [b for b in blocks if any("interceptor" not in f and "<unknown module>" not in f for f in frames(b))]


def test_small_cnn_on_vulkan_is_clean_under_asan(tmp_path: Path):
    build = tmp_path / "build"
    make = subprocess.run(["make", "-s", "-C", str(RUNTIME), f"BUILD_DIR={build}", f"{build}/irp-run-asan"],
                          capture_output=True, text=True, env={**os.environ, "MAKEFLAGS": ""})
    assert make.returncode == 0, make.stdout + make.stderr
    module = tmp_path / "cnn.vmfb"
    module.write_bytes(iree_py.compile(str(ROOT / "examples" / "small_cnn.onnx"), target="vulkan"))
    np.load(ROOT / "examples" / "small_cnn_input.npy").tofile(tmp_path / "in.bin")
    env = {**os.environ, "LSAN_OPTIONS": f"suppressions={RUNTIME / 'tests' / 'lsan_vulkan.supp'}",
           "ASAN_OPTIONS": "exitcode=0"}  # leaks are judged below
    run = subprocess.run([str(build / "irp-run-asan"), str(module), "--device=vulkan", f"--input={tmp_path / 'in.bin'}",
                          "--repeat=2", f"--output={tmp_path / 'out.bin'}"], capture_output=True, text=True, env=env)
    assert "ERROR: AddressSanitizer" not in run.stderr and "runtime error:" not in run.stderr, run.stderr
    assert run.returncode == 0, run.stderr
    assert not _leaks_outside_the_driver_stack(run.stderr), run.stderr
    assert np.fromfile(tmp_path / "out.bin", dtype=np.float32).sum() > 0.99
