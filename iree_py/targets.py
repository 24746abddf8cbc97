"""Targets are data: one TOML file per target in targets/, loaded into a frozen Target record.
The folder is found by iree_py/resources.py (the checkout's targets/, or the installed package's copy).

Backends branch on a target's fields (arch, triple, vector_bits, run, ...), never on its name.
A target whose features are "host" may say "host" for vector_bits and vector_registers too: they
are then read from this machine's CPU features (AVX-512: 512 bits × 32 registers).
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache

from iree_py.errors import CompileError
from iree_py.resources import targets_dir


@dataclass(frozen=True)
class Target:
    name: str
    arch: str              # architecture of kernels and runtime: "x86_64", "aarch64", "riscv64", "thumbv7em", "riscv32"
    backend: str           # the code generator that builds its kernels: "llvm" | "spirv" (iree_py/codegen/backend.py)
    triple: str            # LLVM target triple
    cpu: str               # LLVM CPU name; "host" means this machine's
    features: str          # LLVM feature string; "host" means this machine's
    vector_bits: int       # preferred SIMD width for kernels
    pointer_bits: int
    executable_format: str # "elf" (loaded and relocated) | "flat" (used in place) | "spirv" (shaders)
    runtime: str           # how the runtime is built: "native" | "cross-linux" | "bare-metal"
    run: str               # how modules run from the host harness: "local" | "qemu-user" | "qemu-system"
    cross_cc: str = ""     # C cross compiler, for runtime = "cross-linux" | "bare-metal"
    cross_cflags: str = "" # flags that select the CPU and float ABI for cross_cc
    qemu: str = ""         # qemu binary: user mode for run = "qemu-user", system for "qemu-system"
    qemu_cpu: str = ""     # qemu -cpu value for run = "qemu-user"; "" = qemu's default CPU
    board: str = ""        # bare metal: the emulated board the firmware is built for (runtime_c/firmware/)
    ram_bytes: int = 0     # bare metal: the runtime's RAM region in the firmware (the default for compile --ram)
    flash_bytes: int = 0   # bare metal: module storage in the firmware (the default for compile --flash)
    runtime_ram_bytes: int = 0  # bare metal: RAM of ram_bytes the device server and runtime records take
    vector_registers: int = 16  # SIMD registers kernels may tile for (x86 AVX: 16, AVX-512/NEON: 32)
    # GPU targets (backend = "spirv"): the device limits kernels are built for (docs/vulkan.md)
    device: str = ""            # the runtime device that runs its modules: "" (the CPU) | "vulkan"
    spirv_env: str = ""         # spirv-val --target-env every shader must pass ("vulkan1.2")
    workgroup_size: int = 0     # invocations per workgroup kernels are written for (<= max_workgroup_invocations)
    max_workgroup_invocations: int = 0
    max_workgroup_count: int = 0  # per grid axis
    shared_memory_bytes: int = 0  # workgroup-shared memory per workgroup
    push_constant_bytes: int = 0  # push constants per dispatch
    subgroup_size: int = 0
    storage_buffer_offset_alignment: int = 0  # minStorageBufferOffsetAlignment the driver binds at
    max_storage_buffer_range: int = 0         # bytes one binding may span
    # device features shaders may use (the driver checks the device has them at load)
    shader_int64: bool = False          # 64-bit integers (SPIR-V Int64): i64/u64 elementwise
    storage_buffer_8bit: bool = False   # 1-byte buffer elements (StorageBuffer8BitAccess): bool, i8, u8
    storage_buffer_16bit: bool = False  # 2-byte buffer elements (StorageBuffer16BitAccess): f16, i16, u16
    shader_float64: bool = False        # 64-bit floats (SPIR-V Float64): f64 cumsum, resize_rt's double steps

    @property
    def vector_lanes_f32(self) -> int:
        return self.vector_bits // 32


def available_targets() -> list[str]:
    return sorted(p.stem for p in targets_dir().glob("*.toml"))


@cache
def load_target(name: str) -> Target:
    path = targets_dir() / f"{name}.toml"
    if not path.exists():
        raise CompileError(f"unknown target {name!r}; known targets: {', '.join(available_targets())}")
    data = tomllib.loads(path.read_text())
    if "host" in (data.get("vector_bits"), data.get("vector_registers")):
        if data.get("features") != "host":
            raise CompileError(f"target {name!r}: vector_bits/vector_registers = \"host\" needs "
                             f"features = \"host\", got features = {data.get('features')!r}")
        bits, registers = host_vector_shape()
        data["vector_bits"] = bits if data.get("vector_bits") == "host" else data["vector_bits"]
        if data.get("vector_registers") == "host":
            data["vector_registers"] = registers
    return Target(**data)


def vector_shape_from_features(features: set[str], arch: str) -> tuple[int, int]:
    """(vector bits, vector register count) for a CPU with LLVM `features` (names without +/-)."""
    if arch == "aarch64":
        return 128, 32
    if "avx512f" in features:
        return 512, 32
    if "avx" in features:
        return 256, 16
    return 128, 16


@cache
def host_vector_shape() -> tuple[int, int]:
    """vector_shape_from_features for this machine (llvmlite's host CPU features)."""
    import platform

    import llvmlite.binding as llvm

    enabled = {name for name, on in llvm.get_host_cpu_features().items() if on}
    arch = "aarch64" if platform.machine() in ("aarch64", "arm64") else "x86_64"
    return vector_shape_from_features(enabled, arch)
