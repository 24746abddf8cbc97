"""iree_py.resources finds the data files in a checkout and in an installed package (issue 15)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from iree_py import resources
from iree_py.cli.main import main
from iree_py.targets import available_targets, load_target
from iree_py.errors import IreePyError

ROOT = Path(__file__).resolve().parents[1]
TARGET_NAMES = sorted(p.stem for p in (ROOT / "targets").glob("*.toml"))


def makefile_sources() -> set[str]:
    """The .c files runtime_c/Makefile compiles into the runtime, the runner and the firmware."""
    text = (ROOT / "runtime_c" / "Makefile").read_text().replace("\\\n", " ")
    names = set()
    for variable in ("SOURCES", "DEVICE_SOURCES", "FIRMWARE_SOURCES"):
        names |= set(re.search(rf"^{variable} := (.*)$", text, re.M).group(1).split())
    return {n for n in names if not n.startswith("$")} | {"tools/runner.c", "firmware/main.c", "firmware/echo_main.c"}


def board_files() -> set[str]:
    """The sources and linker scripts the boards' makefiles name (firmware/boards/*.mk)."""
    names = set()
    for mk in (ROOT / "runtime_c" / "firmware" / "boards").glob("*.mk"):
        for variable in ("BOARD_SOURCES", "BOARD_LDSCRIPT"):
            for match in re.finditer(rf"^{variable} :?= (.*)$", mk.read_text(), re.M):
                names |= set(match.group(1).split())
    return names


def test_a_checkout_finds_its_top_level_folders():
    layout = resources.layout()
    assert layout.checkout == ROOT
    assert resources.targets_dir() == ROOT / "targets" and resources.runtime_sources() == ROOT / "runtime_c"
    assert resources.prebuilt_host_runtime() is None  # a checkout builds it in build/runtime/host
    assert available_targets() == TARGET_NAMES and "host" in TARGET_NAMES


def test_runtime_source_files_are_what_a_build_reads():
    sources = ROOT / "runtime_c"
    files = {p.relative_to(sources).as_posix() for p in resources.runtime_source_files(sources)}
    wanted = makefile_sources() | board_files() | {"Makefile", "vm/isa_generated.h", "api/iree_py_runtime.h"}
    assert board_files() and wanted - files == set()
    assert {f"firmware/boards/{p.name}" for p in (sources / "firmware" / "boards").glob("*.mk")} <= files
    assert not [f for f in files if f.startswith(("tests/", "fuzz/", "build/"))]


def test_staged_package_data_is_an_installed_layout(installed_package: Path):
    data = installed_package / "_data"
    layout = resources.layout()
    assert layout == resources.find_layout(installed_package)
    assert layout.checkout is None and layout.data == data
    assert resources.targets_dir() == data / "targets" and resources.runtime_sources() == data / "runtime_c"
    assert resources.prebuilt_host_runtime() == data / "runtime" / "host"
    assert available_targets() == TARGET_NAMES
    for name in TARGET_NAMES:
        assert load_target(name).name == name
    copied = {p.relative_to(data / "runtime_c") for p in (data / "runtime_c").rglob("*") if p.is_file()}
    assert copied == {p.relative_to(ROOT / "runtime_c") for p in resources.runtime_source_files(ROOT / "runtime_c")}
    assert (data / "runtime_c" / "vm" / "interp.c").read_bytes() == (ROOT / "runtime_c" / "vm" / "interp.c").read_bytes()


def test_installed_data_comes_first(tmp_path: Path):
    """A package folder with _data/ is installed even when a checkout's folders sit beside it."""
    package = tmp_path / "iree_py"
    resources.stage_package_data(ROOT, package)
    (tmp_path / "targets").symlink_to(ROOT / "targets")
    (tmp_path / "runtime_c").symlink_to(ROOT / "runtime_c")
    assert resources.find_layout(package).checkout is None


def test_missing_data_is_an_error_that_says_to_reinstall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys):
    (tmp_path / "iree_py").mkdir()
    with pytest.raises(IreePyError, match="data files .* are missing.*Reinstall iree-py"):
        resources.find_layout(tmp_path / "iree_py")
    monkeypatch.setattr(resources, "layout", lambda: resources.find_layout(tmp_path / "iree_py"))
    assert main(["compile", "m.onnx", "-o", str(tmp_path / "m.vmfb")]) == 1
    err = capsys.readouterr().err
    assert "Reinstall iree-py" in err and "Traceback" not in err
