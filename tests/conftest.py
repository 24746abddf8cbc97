"""Suite-wide options and fixtures. `--heavy` also runs the tests marked `heavy`: cases that take
minutes under emulation (VGG-19 under qemu-aarch64), left out of the default run so the suite stays
within CI's time. They are deselected, not skipped: run them with `python3 -m pytest --heavy -m heavy`."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Modules load with one thread unless a test asks for more (tests/runtime/test_threads.py): the suite
# already runs on every core through pytest-xdist, and more threads than cores only wait for each
# other. The C runtime's own tests (make test) run with its default, one thread per physical core.
os.environ.setdefault("IREE_PY_THREADS", "1")


@pytest.fixture
def installed_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """iree-py in this process behaves as an installed package: its data staged as setup.py stages
    it into a wheel (without the prebuilt host runtime), found by iree_py.resources as an installed
    layout, and a fresh per-user cache (IREE_PY_CACHE_DIR). Returns the staged package folder."""
    from iree_py import resources
    package = tmp_path / "site-packages" / "iree_py"
    resources.stage_package_data(ROOT, package)
    layout = resources.find_layout(package)
    monkeypatch.setattr(resources, "layout", lambda: layout)
    monkeypatch.setenv("IREE_PY_CACHE_DIR", str(tmp_path / "cache"))
    return package


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--heavy", action="store_true", help="also run the tests marked heavy (minutes each)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "heavy: takes minutes under emulation; runs only with --heavy")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--heavy"):
        return
    heavy = [item for item in items if item.get_closest_marker("heavy")]
    if heavy:
        config.hook.pytest_deselected(items=heavy)
        items[:] = [item for item in items if not item.get_closest_marker("heavy")]
