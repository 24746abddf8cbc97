"""Each kernel is compiled on its own: its LLVM IR text -> LLVM's O3 pipeline -> one relocatable
object for the target, kept in a per-user cache keyed by what the object depends on.

A kernel's IR is built under its spec's name and then written with that name replaced by a fixed
one (`canonical_text`), so two models with the same kernel under different names (k3_conv, k7_conv)
share one object. The entry point of the object is `irp_k<digest>`: hidden (the kernel library
exports only its query function), and every other function and global of the object is internal,
so objects never clash when they are linked into one library.

The cache (`$IREE_PY_CACHE_DIR`/kernels, iree_py/user_cache.py; `IREE_PY_KERNEL_CACHE=0` turns it
off) keys an object by the SHA-256 of the IR text, the LLVM version and everything the target
machine is made from (triple, resolved CPU name and features, ABI, optimization settings). Each file
holds the object's own SHA-256 beside it, so a damaged file is recompiled, never linked; files are
written to a temporary name and renamed, so concurrent compilers never see half a file.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from iree_py.codegen.llvm.target_machine import abi_name, cpu_features, cpu_name, create_target_machine
from iree_py.codegen.target import Target
from iree_py.user_cache import user_cache_dir

CANONICAL_NAME = "irp_kernel"   # the kernel's name in its canonical IR text
SPEED_LEVEL = 3
CACHE_ENABLED_VARIABLE = "IREE_PY_KERNEL_CACHE"
CACHE_MAGIC = b"IRPKOBJ1"


@dataclass(frozen=True)
class KernelObject:
    symbol: str   # the entry point's symbol in `code`
    code: bytes   # ELF relocatable object for the target


def canonical_text(text: str, name: str) -> str:
    """`text` with every global identifier that starts with `name` (the kernel, its body, helpers
    named after it) renamed to start with CANONICAL_NAME instead: a consistent renaming, so the
    code means the same."""
    return text.replace(f'@"{name}', f'@"{CANONICAL_NAME}').replace(f"@{name}", f"@{CANONICAL_NAME}")


def _target_key(target: Target) -> str:
    return "|".join([target.triple, cpu_name(target), cpu_features(target), abi_name(target),
                     f"O{SPEED_LEVEL}+loop-vectorize+slp-vectorize", f"llvmlite {llvmlite.__version__}",
                     "llvm " + ".".join(map(str, llvm.llvm_version_info))])


def object_digest(text: str, target: Target) -> str:
    return hashlib.sha256(f"{_target_key(target)}\n{text}".encode()).hexdigest()


def entry_symbol(digest: str) -> str:
    return f"irp_k{digest[:24]}"


@cache
def target_machine(target: Target) -> llvm.TargetMachine:
    return create_target_machine(target)


def data_layout(target: Target) -> str:
    return str(target_machine(target).target_data)


def optimized_module(text: str, target: Target, symbol: str) -> llvm.ModuleRef:
    """Parse, verify and optimize one kernel's canonical IR; its entry point becomes `symbol`."""
    try:
        mod = llvm.parse_assembly(text)
        mod.verify()
    except RuntimeError as err:
        raise RuntimeError(f"generated LLVM IR for kernel {symbol} is invalid: {err}") from err
    for fn in mod.functions:
        if fn.is_declaration:
            continue
        if fn.name == CANONICAL_NAME:
            fn.name, fn.linkage, fn.visibility = symbol, "external", "hidden"
        else:
            fn.linkage = "internal"
    for g in mod.global_variables:
        if not g.is_declaration:
            g.linkage = "internal"
    tuning = llvm.create_pipeline_tuning_options(speed_level=SPEED_LEVEL)
    tuning.loop_vectorization = True
    tuning.slp_vectorization = True
    passes = llvm.create_pass_builder(target_machine(target), tuning)
    passes.getModulePassManager().run(mod, passes)
    return mod


def compile_kernel(text: str, target: Target) -> KernelObject:
    """The object for canonical IR `text`, from the cache when it has it."""
    digest = object_digest(text, target)
    symbol = entry_symbol(digest)
    path = _cache_path(digest)
    if path is not None:
        code = _read_cached(path)
        if code is not None:
            return KernelObject(symbol, code)
    code = target_machine(target).emit_object(optimized_module(text, target, symbol))
    if path is not None:
        _write_cached(path, code)
    return KernelObject(symbol, code)


def emit_kernel_assembly(text: str, target: Target) -> str:
    symbol = entry_symbol(object_digest(text, target))
    return target_machine(target).emit_assembly(optimized_module(text, target, symbol))


# --- the cache --------------------------------------------------------------------------------------
def cache_enabled() -> bool:
    return os.environ.get(CACHE_ENABLED_VARIABLE, "1") != "0"


def cache_folder() -> Path:
    return user_cache_dir() / "kernels"


def _cache_path(digest: str) -> Path | None:
    return cache_folder() / digest[:2] / f"{digest}.o" if cache_enabled() else None


def _read_cached(path: Path) -> bytes | None:
    """The object stored at `path`, or None when there is none or it is damaged."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    header = len(CACHE_MAGIC) + 32
    if len(data) < header or not data.startswith(CACHE_MAGIC):
        return None
    code = data[header:]
    return code if hashlib.sha256(code).digest() == data[len(CACHE_MAGIC):header] else None


def _write_cached(path: Path, code: bytes) -> None:
    """Store `code` at `path`; a cache that cannot be written (read-only, full) is only slower."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(CACHE_MAGIC + hashlib.sha256(code).digest() + code)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass
