"""iree-py build-runtime writes the runtime for a bare-metal and for a Linux target."""
from __future__ import annotations

import subprocess

from iree_py.cli.main import main
from tests.boards.conftest import board_target


def test_build_runtime_bare_metal(tmp_path, capsys):
    board_target("cortex-m4")
    assert main(["build-runtime", "--target=cortex-m4", "-o", str(tmp_path)]) == 0
    for path in ("lib/libiree_py_runtime.a", "include/iree_py_runtime.h", "include/kernel_abi.h",
                 "include/device_server.h", "firmware/mps2-an386.elf", "firmware/mps2-an386.bin"):
        assert (tmp_path / path).stat().st_size > 0, path
    out = capsys.readouterr().out
    assert ".text" in out and ".rodata" in out and "cortex-m4" in out and "firmware mps2-an386" in out


def test_build_runtime_host(tmp_path, capsys):
    assert main(["build-runtime", "--target=host", "-o", str(tmp_path)]) == 0
    assert (tmp_path / "lib/libiree_py_runtime.so").stat().st_size > 0
    assert (tmp_path / "bin/irp-run").stat().st_mode & 0o100
    assert (tmp_path / "include/iree_py_runtime.h").exists()


def test_installed_headers_compile_on_their_own(tmp_path):
    """DIR/include/ is all a C program needs: the public header finds iree_py_base.h beside it."""
    assert main(["build-runtime", "--target=host", "-o", str(tmp_path / "out")]) == 0
    source = tmp_path / "uses_runtime.c"
    source.write_text('#include "iree_py_runtime.h"\n#include "kernel_abi.h"\n'
                      "int main(void) { irp_runtime_t* r = 0; return irp_runtime_create(0, &r) == IRP_OK; }\n")
    subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                    f"-I{tmp_path / 'out' / 'include'}", str(source)], check=True)
