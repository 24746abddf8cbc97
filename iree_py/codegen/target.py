"""Targets are data: one TOML file per target in targets/, loaded into a frozen Target record.

Backends branch on a target's fields (arch, triple, vector_bits, run, ...), never on its name.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

TARGETS_DIR = Path(__file__).resolve().parents[2] / "targets"


@dataclass(frozen=True)
class Target:
    name: str
    arch: str              # ELF architecture of kernels and runtime: "x86_64", "aarch64"
    triple: str            # LLVM target triple
    cpu: str               # LLVM CPU name; "host" means this machine's
    features: str          # LLVM feature string; "host" means this machine's
    vector_bits: int       # preferred SIMD width for kernels
    pointer_bits: int
    executable_format: str # "elf"
    runtime: str           # how the runtime is built: "native" | "cross-linux"
    run: str               # how modules run from the host harness: "local" | "qemu-user"
    cross_cc: str = ""     # C cross compiler, for runtime = "cross-linux"
    qemu: str = ""         # qemu-user binary, for run = "qemu-user"

    @property
    def vector_lanes_f32(self) -> int:
        return self.vector_bits // 32


def available_targets() -> list[str]:
    return sorted(p.stem for p in TARGETS_DIR.glob("*.toml"))


@cache
def load_target(name: str) -> Target:
    path = TARGETS_DIR / f"{name}.toml"
    if not path.exists():
        raise ValueError(f"unknown target {name!r}; known targets: {', '.join(available_targets())}")
    data = tomllib.loads(path.read_text())
    return Target(**data)
