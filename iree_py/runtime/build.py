"""Build the C runtime for a target with runtime_c/Makefile.

Where it is built (docs/decisions.md, "Runtime"):
- in a checkout, into build/runtime/<target>/ beside the sources, again whenever a source is newer
  than the product (make then recompiles only what changed);
- from an installed package, the host runtime is the one built with the wheel
  (iree_py/_data/runtime/host/, see iree_py/resources.py): nothing is compiled on the user's
  machine to run on this host. Cross runtimes (and board firmware, runtime/board.py) are built on
  first use into the per-user cache (iree_py/user_cache.py), under builds/<version>-<hash of the
  runtime sources>/: an upgrade builds anew, two versions never share a build, and site-packages
  (which may be read-only) is never written.
A missing make or C compiler is a ToolNotFoundError naming the Debian package to install.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from iree_py import __version__, resources
from iree_py.errors import IreePyError
from iree_py.system_tools import require
from iree_py.user_cache import user_cache_dir

LIBRARY_NAME = "libiree_py_runtime.so"
RUNNER_NAME = "irp-run"
PREBUILT_HOST_FILES = (LIBRARY_NAME, RUNNER_NAME)  # what a wheel carries of the host runtime


def cache_key(sources: Path, version: str) -> str:
    """`version`-<hash of the runtime source files in `sources`>: the cache folder of one build."""
    digest = hashlib.sha256()
    for path in resources.runtime_source_files(sources):
        data = path.read_bytes()
        digest.update(f"{path.relative_to(sources).as_posix()}\0{len(data)}\0".encode())
        digest.update(data)
    return f"{version}-{digest.hexdigest()[:16]}"


def build_root() -> Path:
    """The folder runtimes (runtime/<target>/) and board firmware (firmware/<target>/) are built in:
    the checkout's build/, or the per-user cache folder of this version and these sources."""
    checkout = resources.checkout_root()
    if checkout is not None:
        return checkout / "build"
    return user_cache_dir() / "builds" / cache_key(resources.runtime_sources(), __version__)


def newest_source_mtime() -> float:
    return max((p.stat().st_mtime for p in resources.runtime_source_files(resources.runtime_sources())), default=0.0)


def _up_to_date(path: Path) -> bool:
    return path.exists() and path.stat().st_mtime >= newest_source_mtime()


def _make(out: Path, what: str, cross_cc: str = "", cflags: str = "", sources: Path | None = None) -> None:
    """make the runtime into `out` (host: library + runner; cross: static runner); `what` names the build."""
    compiler = cross_cc or "cc"
    require(compiler.split()[0], f"building the runtime for {what}")
    make = require("make", f"building the runtime for {what}")
    cmd = [make, "-s", "-C", str(sources or resources.runtime_sources()), f"BUILD_DIR={out}"]
    cmd += [f"CC={cross_cc}", "STATIC=1", "runner"] if cross_cc else ["all"]
    cmd += [f"CFLAGS_EXTRA={cflags}"] if cflags else []
    result = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "MAKEFLAGS": ""})
    if result.returncode != 0:
        raise IreePyError(f"building the runtime for {what} failed ({' '.join(cmd)}):\n{result.stdout}{result.stderr}")


def build_runtime(target_name: str, cross_cc: str = "", force: bool = False, cflags: str = "") -> Path:
    """Build the runtime for `target_name` (host: shared library + runner; cross: static runner),
    with `cflags` added to every compile (make's CFLAGS_EXTRA). Returns the build directory."""
    prebuilt = resources.prebuilt_host_runtime()
    if prebuilt is not None and not (cross_cc or cflags or force) and (prebuilt / LIBRARY_NAME).is_file():
        return prebuilt
    root = build_root() / "runtime"
    out = root / target_name
    product = out / (RUNNER_NAME if cross_cc else LIBRARY_NAME)
    if not force and _up_to_date(product):
        return out
    out.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two processes (pytest workers) may build at once
        if not force and _up_to_date(product):
            return out
        _make(out, target_name, cross_cc, cflags)
        os.utime(product)
    return out


def build_host_runtime_into(sources: Path, dest: Path) -> None:
    """The host library and runner built from `sources` into `dest`, without the objects and the
    static library: the prebuilt host runtime setup.py puts in a wheel."""
    with tempfile.TemporaryDirectory(prefix="iree-py-host-runtime-") as tmp:
        _make(Path(tmp), "host", sources=sources)
        dest.mkdir(parents=True, exist_ok=True)
        for name in PREBUILT_HOST_FILES:
            shutil.copy2(Path(tmp) / name, dest / name)


def host_library() -> Path:
    return build_runtime("host") / LIBRARY_NAME


def runner_for(target_name: str, cross_cc: str, cflags: str = "") -> Path:
    return build_runtime(target_name, cross_cc, cflags=cflags) / RUNNER_NAME
