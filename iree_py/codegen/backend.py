"""The backend interface: what the compiler asks of the code generator a target names in its data
(`backend = "llvm"` or `"spirv"` in targets/*.toml). Nothing above codegen/ imports a backend's package; the
compiler gets the backend here and calls its two steps:

- plan(dispatch, target): the backend's choice of kernel variant and constant-weight layout for one
  dispatch (codegen/dispatch.py has made the generic one);
- build_executable(specs, target, jobs): every kernel of the list in one executable for the target.

Each backend declares the kernel kinds it builds; tests/codegen/test_backends.py checks every
backend's table against KERNEL_KINDS (codegen/kernel_kinds.py), so a kind a backend lacks is listed
there, not met at compile time.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

from iree_py.codegen.dispatch import Dispatch
from iree_py.codegen.kernel_spec import ExecutableBlob, KernelSpec
from iree_py.errors import CompileError
from iree_py.targets import Target

# backend name (a target's `backend`) -> the package that defines its BACKEND
BACKENDS: dict[str, str] = {
    "llvm": "iree_py.codegen.llvm",
    "spirv": "iree_py.codegen.spirv",
}


@dataclass(frozen=True)
class Backend:
    name: str
    kernel_kinds: frozenset[str]  # the kinds of KERNEL_KINDS it has a builder for
    plan: Callable[[Dispatch, Target], Dispatch]
    build_executable: Callable[[list[KernelSpec], Target, int | None], ExecutableBlob]


def backend_for(target: Target) -> Backend:
    package = BACKENDS.get(target.backend)
    if package is None:
        raise CompileError(f"target {target.name}: unknown backend {target.backend!r}; "
                           f"known backends: {', '.join(sorted(BACKENDS))}")
    return importlib.import_module(package).BACKEND
