"""Link the kernels' object files into the kernel library: an ELF shared object whose entry point
is irp_kernel_library_query, importing nothing."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from iree_py.codegen.kernel_abi import LIBRARY_QUERY_SYMBOL
from iree_py.system_tools import tool_not_found

LINKER_FLAGS = (
    "-shared", f"--entry={LIBRARY_QUERY_SYMBOL}", "-Bsymbolic", "--no-undefined", "--strip-all",
    "-z", "norelro", "--hash-style=sysv", "--build-id=none", "-z", "noexecstack",
)


def find_linker() -> str:
    for name in ("ld.lld", "ld.lld-14"):
        path = shutil.which(name)
        if path:
            return path
    raise tool_not_found("ld.lld", "linking kernel libraries")


def write_objects(objects: list[bytes], folder: Path) -> list[str]:
    """Each object written to `folder` as k<i>.o; their paths, in order."""
    paths = []
    for i, obj in enumerate(objects):
        path = folder / f"k{i}.o"
        path.write_bytes(obj)
        paths.append(str(path))
    return paths


def link_shared_object(objects: list[bytes], what: str) -> bytes:
    """Link `objects` into a shared object and return its bytes; `what` names it in errors."""
    with tempfile.TemporaryDirectory(prefix="irp-link-") as tmp:
        so_path = Path(tmp) / "kernels.so"
        cmd = [find_linker(), *LINKER_FLAGS, *write_objects(objects, Path(tmp)), "-o", str(so_path)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"linking kernel library for {what} failed:\n{' '.join(cmd)}\n{proc.stderr}")
        return so_path.read_bytes()
