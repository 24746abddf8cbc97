"""Which qemu-user target runs a module: a module records only its arch, so riscv64 and
riscv64-rvv must run modules alike (one runner, one emulated CPU with V enabled)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from iree_py.targets import load_target
from iree_py.errors import IreePyError
from iree_py.runtime import devices


def test_riscv64_modules_run_on_a_cpu_with_vectors() -> None:
    target = devices.qemu_target_for("riscv64")
    assert target.qemu == "qemu-riscv64" and target.cross_cc == "riscv64-linux-gnu-gcc"
    assert "v=true" in target.qemu_cpu and "vlen=128" in target.qemu_cpu
    assert load_target("riscv64-rvv").vector_bits == 128  # what vlen=128 must cover


def test_aarch64_modules_keep_qemus_default_cpu() -> None:
    assert devices.qemu_target_for("aarch64").qemu_cpu == ""


def test_targets_sharing_an_arch_must_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    scalar = load_target("riscv64")
    other = replace(scalar, name="riscv64-other", qemu_cpu="rv64")
    targets = {"riscv64": scalar, "riscv64-other": other}
    monkeypatch.setattr(devices, "available_targets", lambda: sorted(targets))
    monkeypatch.setattr(devices, "load_target", targets.__getitem__)
    with pytest.raises(IreePyError, match="riscv64 and riscv64-other both run riscv64 modules.*qemu_cpu"):
        devices.qemu_target_for("riscv64")


def test_no_qemu_target_for_an_unknown_arch() -> None:
    with pytest.raises(IreePyError, match="no target runs mips64 modules under qemu"):
        devices.qemu_target_for("mips64")
