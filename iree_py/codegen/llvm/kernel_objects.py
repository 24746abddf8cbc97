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
import pickle
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from iree_py.codegen.llvm.target_machine import abi_name, cpu_features, cpu_name, create_target_machine
from iree_py.targets import Target
from iree_py.user_cache import user_cache_dir

CANONICAL_NAME = "irp_kernel"   # the kernel's name in its canonical IR text
SPEED_LEVEL = 3
CACHE_ENABLED_VARIABLE = "IREE_PY_KERNEL_CACHE"
CACHE_MAGIC = b"IRPKOBJ1"
PARALLEL_MIN_TEXT_BYTES = 2 << 20   # about 3 s of LLVM work: worth starting worker processes


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


def cached_kernel(text: str, target: Target) -> KernelObject | None:
    """The object for canonical IR `text` if the cache has it."""
    digest = object_digest(text, target)
    path = _cache_path(digest)
    code = _read_cached(path) if path is not None else None
    return KernelObject(entry_symbol(digest), code) if code is not None else None


def compile_kernel(text: str, target: Target) -> KernelObject:
    """The object for canonical IR `text`, from the cache when it has it."""
    cached = cached_kernel(text, target)
    if cached is not None:
        return cached
    digest = object_digest(text, target)
    symbol = entry_symbol(digest)
    code = target_machine(target).emit_object(optimized_module(text, target, symbol))
    path = _cache_path(digest)
    if path is not None:
        _write_cached(path, code)
    return KernelObject(symbol, code)


def compile_kernels(texts: list[str], target: Target, jobs: int | None = None) -> list[KernelObject]:
    """The object of each text, in order. Kernels the cache lacks are compiled in `jobs` worker
    processes (None: one per core) when there is enough work to pay for starting them (llvmlite
    holds one lock around LLVM, so threads would not help)."""
    objects: dict[str, KernelObject | None] = {t: cached_kernel(t, target) for t in texts}
    missing = [t for t, obj in objects.items() if obj is None]
    workers = min(default_jobs() if jobs is None else max(1, jobs), len(missing))
    if workers > 1 and sum(map(len, missing)) >= PARALLEL_MIN_TEXT_BYTES:
        compiled = _compile_in_workers(missing, target, workers)
    else:
        compiled = [compile_kernel(t, target) for t in missing]
    objects.update(zip(missing, compiled))
    return [objects[t] for t in texts]  # type: ignore[misc]


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _compile_in_workers(texts: list[str], target: Target, workers: int) -> list[KernelObject]:
    """Each worker is a plain process (iree_py/codegen/llvm/compile_worker.py), so nothing of this
    one (its threads, its __main__) is copied or re-run. Work is shared out by IR size."""
    shares: list[list[int]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for i in sorted(range(len(texts)), key=lambda i: -len(texts[i])):
        w = loads.index(min(loads))
        shares[w].append(i)
        loads[w] += len(texts[i])
    package_root = str(Path(__file__).resolve().parents[3])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    procs = [subprocess.Popen([sys.executable, "-m", "iree_py.codegen.llvm.compile_worker"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in shares]
    with ThreadPoolExecutor(len(procs)) as pipes:   # feed and drain every worker at once
        outputs = list(pipes.map(lambda job: job[0].communicate(pickle.dumps((target, [texts[i] for i in job[1]]))),
                                 zip(procs, shares)))
    results: list[KernelObject | None] = [None] * len(texts)
    for proc, share, (out, err) in zip(procs, shares, outputs):
        what = f"compiling kernels for {target.name} in a worker process"
        if proc.returncode != 0 or not out:
            raise RuntimeError(f"{what} failed (exit status {proc.returncode}):\n"
                               f"{err.decode(errors='replace')[-3000:]}")
        status, payload = pickle.loads(out)
        if status != "ok":
            raise RuntimeError(f"{what} failed: {payload}")
        for i, obj in zip(share, payload):
            results[i] = obj
    return results  # type: ignore[return-value]


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
