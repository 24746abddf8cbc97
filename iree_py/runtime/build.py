"""Build the C runtime for a target with runtime_c/Makefile.

The host build (the shared library the Python binding loads, and the runner) happens when the
package is installed and again whenever a runtime source is newer than the built library; cross
builds (the static runner for a foreign target) happen on first use.
"""
from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path

from iree_py.errors import IreePyError

ROOT = Path(__file__).resolve().parents[2]
RUNTIME_SRC = ROOT / "runtime_c"
BUILD_ROOT = ROOT / "build" / "runtime"
LIBRARY_NAME = "libiree_py_runtime.so"
RUNNER_NAME = "irp-run"


def _newest_source_mtime() -> float:
    files = [p for p in RUNTIME_SRC.rglob("*") if p.suffix in (".c", ".h") or p.name == "Makefile"]
    return max((p.stat().st_mtime for p in files if "build" not in p.parts), default=0.0)


def _up_to_date(path: Path) -> bool:
    return path.exists() and path.stat().st_mtime >= _newest_source_mtime()


def build_runtime(target_name: str, cross_cc: str = "", force: bool = False, cflags: str = "") -> Path:
    """Build the runtime for `target_name` (host: shared library + runner; cross: static runner),
    with `cflags` added to every compile (make's CFLAGS_EXTRA). Returns the build directory."""
    out = BUILD_ROOT / target_name
    product = out / (RUNNER_NAME if cross_cc else LIBRARY_NAME)
    if not force and _up_to_date(product):
        return out
    out.mkdir(parents=True, exist_ok=True)
    with open(BUILD_ROOT / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two processes (pytest workers) may build at once
        if not force and _up_to_date(product):
            return out
        cmd = ["make", "-s", "-C", str(RUNTIME_SRC), f"BUILD_DIR={out}"]
        cmd += [f"CC={cross_cc}", "STATIC=1", "runner"] if cross_cc else ["all"]
        cmd += [f"CFLAGS_EXTRA={cflags}"] if cflags else []
        result = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "MAKEFLAGS": ""})
        if result.returncode != 0:
            raise IreePyError(f"building the runtime for {target_name} failed ({' '.join(cmd)}):\n"
                              f"{result.stdout}{result.stderr}")
        os.utime(product)
    return out


def host_library() -> Path:
    return build_runtime("host") / LIBRARY_NAME


def runner_for(target_name: str, cross_cc: str, cflags: str = "") -> Path:
    return build_runtime(target_name, cross_cc, cflags=cflags) / RUNNER_NAME
