"""Bytes taken by each part of a module file, for `dump` and the benchmark."""
from __future__ import annotations

from iree_py.module.model import Module


def section_sizes(module: Module, total: int) -> dict[str, int]:
    sizes = {
        "bytecode": sum(len(f.bytecode) for f in module.functions),
        "constants": sum(len(c.data) for c in module.constants),
        "kernels": sum(len(e.code) for e in module.executables),
    }
    sizes["metadata"] = total - sum(sizes.values())  # tables, names, signatures, plan, padding
    return sizes
