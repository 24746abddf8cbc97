"""Where iree-py finds its data files: the target records (targets/*.toml), the C runtime's sources
and Makefile (runtime_c/), and, in an installed package, the host runtime built with the wheel.

One lookup, two layouts:
- a checkout (an editable install, or PYTHONPATH pointing at one): the folders beside the iree_py
  package, as they are in the repository;
- an installed package (a wheel): the same folders under iree_py/_data/, copied there when the
  wheel was built (setup.py calls stage_package_data), and iree_py/_data/runtime/host/ with the
  host library and runner built then, so running on this host compiles nothing on the user's machine.

Every other module asks this one; none computes a data path from its own __file__.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from iree_py.errors import IreePyError

PACKAGE_DIR = Path(__file__).resolve().parent
DATA_DIR_NAME = "_data"              # iree_py/_data/ in an installed package
TARGETS = "targets"
RUNTIME_SOURCES = "runtime_c"
PREBUILT_HOST_RUNTIME = Path("runtime") / "host"   # under _data/: the host library and runner

# What of runtime_c/ a build reads: C and assembly sources, headers, linker scripts, the boards'
# makefiles and the Makefile. Its tests/ (C tests, test kernels, test-module generators), fuzz/ (the
# fuzz harnesses and their regression inputs) and any build/ output folder are neither shipped nor
# hashed into the cache key.
RUNTIME_SOURCE_SUFFIXES = (".c", ".h", ".S", ".ld", ".mk")
RUNTIME_LEFT_OUT = ("tests", "fuzz", "build")


@dataclass(frozen=True)
class Layout:
    data: Path                # the folder that holds targets/ and runtime_c/
    checkout: Path | None     # the repository root when running from a checkout; None when installed

    @property
    def targets(self) -> Path:
        return self.data / TARGETS

    @property
    def runtime_sources(self) -> Path:
        return self.data / RUNTIME_SOURCES

    @property
    def prebuilt_host_runtime(self) -> Path | None:
        """The host library and runner that came with an installed package; None in a checkout."""
        return None if self.checkout is not None else self.data / PREBUILT_HOST_RUNTIME


def find_layout(package_dir: Path) -> Layout:
    """The layout of the iree_py package at `package_dir`: installed data first, else a checkout."""
    installed = package_dir / DATA_DIR_NAME
    if (installed / TARGETS).is_dir():
        return Layout(installed, None)
    checkout = package_dir.parent
    if (checkout / TARGETS).is_dir() and (checkout / RUNTIME_SOURCES / "Makefile").is_file():
        return Layout(checkout, checkout)
    raise IreePyError(f"iree-py's data files (targets, C runtime sources) are missing: neither {installed} "
                      f"(an installed package) nor {checkout / TARGETS} and {checkout / RUNTIME_SOURCES} "
                      f"(a checkout) exist. Reinstall iree-py (pip install --force-reinstall iree-py), or "
                      f"run it from a complete checkout")


@cache
def layout() -> Layout:
    return find_layout(PACKAGE_DIR)


def targets_dir() -> Path:
    return layout().targets


def runtime_sources() -> Path:
    return layout().runtime_sources


def checkout_root() -> Path | None:
    """The repository root when iree-py runs from a checkout, None when it is installed."""
    return layout().checkout


def prebuilt_host_runtime() -> Path | None:
    return layout().prebuilt_host_runtime


def runtime_source_files(sources: Path) -> list[Path]:
    """The files of the runtime source folder `sources` that a build reads, sorted: what the wheel
    carries, what a staleness check compares and what the cache key hashes."""
    files = []
    for path in sources.rglob("*"):
        relative = path.relative_to(sources)
        if set(relative.parts[:-1]) & set(RUNTIME_LEFT_OUT) or not path.is_file():
            continue
        if path.suffix in RUNTIME_SOURCE_SUFFIXES or path.name == "Makefile":
            files.append(path)
    return sorted(files)


def stage_package_data(source_root: Path, package_dir: Path) -> Path:
    """Copies the data of the checkout (or unpacked sdist) at `source_root` into `package_dir`/_data/,
    the installed layout: targets/*.toml and the runtime sources. Returns that folder. setup.py
    calls it when it builds a wheel (and then puts the host runtime in _data/runtime/host/)."""
    data = package_dir / DATA_DIR_NAME
    if data.exists():
        shutil.rmtree(data)
    (data / TARGETS).mkdir(parents=True)
    for path in sorted((source_root / TARGETS).glob("*.toml")):
        shutil.copy2(path, data / TARGETS / path.name)
    sources = source_root / RUNTIME_SOURCES
    for path in runtime_source_files(sources):
        dest = data / RUNTIME_SOURCES / path.relative_to(sources)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)
    return data
