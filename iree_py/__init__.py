"""iree-py: compile ONNX models into compact modules and run them in a tiny C runtime.

    import iree_py
    m = iree_py.load(iree_py.compile("model.onnx", target="host"))
    y = m.main(x)
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from iree_py.errors import CompileError, IreePyError, IreeRuntimeError, ModuleFormatError

if TYPE_CHECKING:
    from iree_py.targets import Target

# The one place the version is written: pyproject.toml reads it (dynamic version), and the per-user
# build cache keys cross runtimes by it (iree_py/runtime/build.py).
__version__ = "0.1.0"

__all__ = ["compile", "load", "CompileError", "IreePyError", "IreeRuntimeError", "ModuleFormatError"]


def compile(model: str | Path | bytes, target: str | Target = "host", *, dims: dict[str, int] | None = None,
            dim_bounds: dict[str, tuple[int, int]] | None = None, pool_bytes: int | None = None,
            debug_info: bool = True, jobs: int | None = None) -> bytes:
    """Compile an ONNX model (path or bytes) for `target` (a name in targets/, or a Target record
    from iree_py.targets); returns the module (.vmfb) bytes. Input dims named in `dims` are
    fixed to those values; other symbolic dims stay dynamic (one module serves every size), planned
    at the upper bound of their `dim_bounds` range when given, else from a run-time pool of
    `pool_bytes`. A big model's LLVM work runs in `jobs` processes (None: one per core)."""
    from iree_py.compiler import CompileOptions, compile_model
    return compile_model(model, CompileOptions(target=target, dims=dims, dim_bounds=dim_bounds, pool_bytes=pool_bytes,
                                               debug_info=debug_info, jobs=jobs))


def load(module: bytes | str | Path, device: str = "local", threads: int | None = None):
    """Load module bytes or a .vmfb path; `device` is "local" (this host), "vulkan" or "qemu".
    `threads` run each dispatch (0: one per physical core; None: $IREE_PY_THREADS, else 0)."""
    from iree_py.runtime.module import load as _load
    return _load(module, device, threads)
