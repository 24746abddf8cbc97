"""The C runtime's own tests (runtime_c/tests): under AddressSanitizer + UBSan on this host, and
cross-built for aarch64 and riscv64 and run under qemu-aarch64 / qemu-riscv64. Each prints what it
checked; failures show it."""
import subprocess
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[2] / "runtime_c"


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", "-C", str(RUNTIME), *args], capture_output=True, text=True, timeout=600)


def test_c_tests_under_asan_and_ubsan(tmp_path):
    result = make(f"BUILD_DIR={tmp_path}", "test")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "runtime_tests: all passed" in result.stdout and "runner_tests: all passed" in result.stdout


def test_c_tests_on_aarch64_under_qemu(tmp_path):
    result = make("CC=aarch64-linux-gnu-gcc", "STATIC=1", f"BUILD_DIR={tmp_path}", "test-qemu")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "runtime_tests: all passed" in result.stdout and "runner_tests: all passed" in result.stdout


def test_c_tests_on_riscv64_under_qemu(tmp_path):
    result = make("CC=riscv64-linux-gnu-gcc", "STATIC=1", f"BUILD_DIR={tmp_path}", "QEMU=qemu-riscv64", "test-qemu")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "runtime_tests: all passed" in result.stdout and "runner_tests: all passed" in result.stdout


def test_runtime_builds_without_status_messages(tmp_path):
    """The tiny-build knob: messages compiled out, still -Wall -Wextra -Werror clean."""
    result = make(f"BUILD_DIR={tmp_path}", "CFLAGS_EXTRA=-DIRP_STATUS_MESSAGES=0", "all")
    assert result.returncode == 0, result.stderr[-4000:]
