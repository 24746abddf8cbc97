"""An installed iree-py builds cross runtimes and firmware on first use into the per-user cache,
keyed by its version and a hash of the runtime sources, takes the host runtime from the wheel, and
never writes beside its sources (issue 15). The installed layout is the one setup.py stages
(tests/conftest.py::installed_package); scripts/check_wheel.sh does the same with a real wheel."""
from __future__ import annotations

import ctypes
import os
import shutil
from pathlib import Path

import iree_py
from iree_py.targets import load_target
from iree_py.resources import runtime_sources, stage_package_data
from iree_py.runtime import board
from iree_py.runtime.build import build_host_runtime_into, build_root, cache_key, host_library, runner_for

ROOT = Path(__file__).resolve().parents[2]
EM_AARCH64, EM_ARM = 183, 40


def snapshot(folder: Path) -> dict[str, float]:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime for p in folder.rglob("*")}


def elf_machine(path: Path) -> int:
    return int.from_bytes(path.read_bytes()[18:20], "little")


def test_cross_runtime_and_firmware_are_built_into_the_keyed_cache(installed_package: Path, tmp_path: Path):
    before = snapshot(installed_package)
    key = cache_key(installed_package / "_data" / "runtime_c", iree_py.__version__)
    folder = tmp_path / "cache" / "builds" / key
    assert build_root() == folder

    runner = runner_for("arm64", "aarch64-linux-gnu-gcc")
    assert runner == folder / "runtime" / "arm64" / "irp-run"
    assert os.access(runner, os.X_OK) and elf_machine(runner) == EM_AARCH64
    firmware = board.build_firmware(load_target("cortex-m4"))
    assert firmware == folder / "firmware" / "cortex-m4" / "firmware.elf" and elf_machine(firmware) == EM_ARM

    assert runner_for("arm64", "aarch64-linux-gnu-gcc") == runner  # a second use builds nothing
    assert snapshot(installed_package) == before  # nothing written beside the sources
    assert sorted(p.name for p in (tmp_path / "cache" / "builds").iterdir()) == [key]


def test_the_cache_key_follows_the_version_and_the_sources(tmp_path: Path):
    sources = stage_package_data(ROOT, tmp_path / "iree_py") / "runtime_c"
    key = cache_key(sources, "0.1.0")
    assert key.startswith("0.1.0-") and key == cache_key(runtime_sources(), "0.1.0")  # the same sources
    assert cache_key(sources, "0.2.0").startswith("0.2.0-") and cache_key(sources, "0.2.0") != key
    (sources / "tests").mkdir()
    (sources / "tests" / "extra_test.c").write_text("int x;\n")  # not a runtime source: no new build
    assert cache_key(sources, "0.1.0") == key
    interp = sources / "vm" / "interp.c"
    interp.write_text(interp.read_text() + "\n")
    edited = cache_key(sources, "0.1.0")
    assert edited != key
    shutil.move(sources / "vm" / "pool.c", sources / "vm" / "pool2.c")  # same bytes, another file
    assert cache_key(sources, "0.1.0") not in (key, edited)


def test_an_installed_package_runs_on_the_host_runtime_it_came_with(installed_package: Path, tmp_path: Path):
    data = installed_package / "_data"
    build_host_runtime_into(data / "runtime_c", data / "runtime" / "host")  # what setup.py does for a wheel
    assert sorted(p.name for p in (data / "runtime" / "host").iterdir()) == ["irp-run", "libiree_py_runtime.so"]
    library = host_library()
    assert library == data / "runtime" / "host" / "libiree_py_runtime.so"
    assert hasattr(ctypes.CDLL(str(library)), "irp_runtime_create")
    assert not (tmp_path / "cache").exists()  # nothing was built on first use
