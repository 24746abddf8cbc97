"""What the Vulkan tests need is installed by scripts/setup.sh; a missing piece fails here by name
(the tests are never skipped for it)."""
import shutil
from pathlib import Path


def test_the_vulkan_loader_headers_and_spirv_val_are_installed() -> None:
    assert Path("/usr/include/vulkan/vulkan.h").exists(), "libvulkan-dev (scripts/setup.sh installs it)"
    assert any(Path(p).exists() for p in ("/usr/lib/x86_64-linux-gnu/libvulkan.so.1",
                                          "/usr/lib/aarch64-linux-gnu/libvulkan.so.1")), "libvulkan1 / mesa-vulkan-drivers"
    assert list(Path("/usr/share/vulkan/icd.d").glob("lvp_icd*.json")), "mesa-vulkan-drivers (lavapipe)"
    assert shutil.which("spirv-val"), "spirv-tools"
