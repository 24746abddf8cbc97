"""A program from the system that is missing (a cross compiler, qemu, ld.lld) is an IreePyError
naming the Debian package to install, never a traceback; the table of packages agrees with what
scripts/setup.sh installs and names every program the targets use."""
from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from iree_py.cli import build_runtime as build_runtime_cli
from iree_py.cli.main import main
from iree_py.codegen.llvm.link import find_linker
from iree_py.targets import available_targets, load_target
from iree_py.errors import IreePyError, ToolNotFoundError
from iree_py.runtime.board import QemuBoard
from iree_py.runtime.build import build_runtime
from iree_py.runtime.devices import QemuDevice, user_mode_stand_in
from iree_py.system_tools import DEBIAN_PACKAGES

ROOT = Path(__file__).resolve().parents[1]


def setup_packages() -> set[str]:
    block = re.search(r"^APT_PACKAGES=\((.*?)^\)", (ROOT / "scripts" / "setup.sh").read_text(), re.M | re.S).group(1)
    return {word for line in block.splitlines() for word in line.split("#", 1)[0].split()}


@pytest.fixture
def path_with_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Sets PATH to a folder holding only the named programs (linked to the real ones)."""
    def restrict(*programs: str) -> None:
        folder = tmp_path / "bin"
        folder.mkdir()
        for program in programs:
            (folder / program).symlink_to(shutil.which(program))
        monkeypatch.setenv("PATH", str(folder))
    return restrict


def test_every_package_named_is_one_setup_installs():
    installed = setup_packages()
    assert {"gcc-aarch64-linux-gnu", "qemu-user", "lld"} <= installed
    named = {p for packages in DEBIAN_PACKAGES.values() for p in packages.split()}
    assert named - installed == set()


def test_every_program_a_target_runs_has_its_package():
    targets = [load_target(name) for name in available_targets()]
    targets.append(user_mode_stand_in("thumbv7em"))
    programs = {t.cross_cc for t in targets if t.cross_cc} | {t.qemu for t in targets if t.qemu}
    programs |= {t.cross_cc.removesuffix("gcc") + "size" for t in targets if t.run == "qemu-system"}  # board.elf_size
    assert {"aarch64-linux-gnu-gcc", "arm-none-eabi-gcc", "qemu-system-arm"} <= programs
    assert programs - set(DEBIAN_PACKAGES) == set()
    for program in programs:
        assert shutil.which(program), f"{program} is in the table but not installed here"


def test_a_missing_cross_compiler_names_its_package(installed_package: Path, path_with_only, capsys):
    path_with_only("make")
    with pytest.raises(ToolNotFoundError) as error:
        build_runtime("arm64", "aarch64-linux-gnu-gcc")
    message = str(error.value)
    assert "building the runtime for arm64 needs aarch64-linux-gnu-gcc, which is not on PATH" in message
    assert "apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross" in message
    assert isinstance(error.value, IreePyError)

    assert main(["build-runtime", "--target=arm64", "-o", str(installed_package.parent / "out")]) == 1
    err = capsys.readouterr().err
    assert "apt-get install gcc-aarch64-linux-gnu" in err and "Traceback" not in err
    assert main(["build-runtime", "--target=cortex-m4", "-o", str(installed_package.parent / "out")]) == 1
    assert "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi" in capsys.readouterr().err


def test_a_target_whose_compiler_does_not_exist_says_so(installed_package: Path):
    target = dataclasses.replace(load_target("arm64"), name="arm64-custom", cross_cc="no-such-linux-gcc")
    with pytest.raises(ToolNotFoundError, match=r"building the runtime for arm64-custom needs no-such-linux-gcc, "
                                                r"which is not on PATH: install it, or name a program"):
        build_runtime_cli._linux(target, installed_package.parent / "out")


def test_missing_qemu_names_its_package(path_with_only):
    path_with_only()
    with pytest.raises(ToolNotFoundError, match=r"needs qemu-aarch64, .*apt-get install qemu-user\b"):
        QemuDevice(np.zeros(16, np.uint8), "aarch64")
    with pytest.raises(ToolNotFoundError, match=r"needs qemu-system-arm, .*apt-get install qemu-system-arm\b"):
        QemuBoard(load_target("cortex-m4"))


def test_a_missing_linker_names_lld(path_with_only):
    path_with_only()
    with pytest.raises(ToolNotFoundError, match=r"linking kernel libraries needs ld.lld, .*apt-get install lld\b"):
        find_linker()
