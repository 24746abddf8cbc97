"""Suite-wide options. `--heavy` also runs the tests marked `heavy`: cases that take minutes under
emulation (VGG-19 under qemu-aarch64), left out of the default run so the suite stays within CI's
time. They are deselected, not skipped: run them with `python3 -m pytest --heavy -m heavy`."""
from __future__ import annotations

import pytest


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
