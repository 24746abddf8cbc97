import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "e2e"))  # harness.py, test_ops.CASES


def _has_vulkan() -> bool:
    return Path("/usr/include/vulkan/vulkan.h").exists() and any(
        Path(p).exists() for p in ("/usr/lib/x86_64-linux-gnu/libvulkan.so.1", "/usr/lib/aarch64-linux-gnu/libvulkan.so.1"))


needs_vulkan = pytest.mark.skipif(not _has_vulkan(), reason="no Vulkan loader/headers (scripts/setup.sh installs them)")
needs_spirv_val = pytest.mark.skipif(shutil.which("spirv-val") is None, reason="spirv-val (spirv-tools) not installed")
