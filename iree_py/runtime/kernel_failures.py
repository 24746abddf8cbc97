"""A kernel that fails its dispatch, told in the model's terms.

The C runtime reports "main: kernel 'k3_gather' failed with code 3 (an index is outside the range of
its axis) at workgroup (0, 0, 0)" (runtime_c/vm/interp.c): it knows the kernel status table
(codegen/kernel_abi.py, runtime_c/hal/kernel_abi.h) but not the model, which a board has no room
for. The module's debug info names each entry point's source nodes and their ops, so every device
(local, the runner under qemu-user, a board) turns that report into

    node 'Gather_3' (op Gather): an index is outside the range of its axis (kernel k3_gather, code 3)

A module without debug info (compiled with it stripped), an entry point it does not describe, or a
code outside the table keeps the runtime's text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from iree_py.codegen.kernel_abi import STATUS_OK, kernel_status
from iree_py.module.model import Module

# What runtime_c/vm/interp.c writes for a kernel that returned a nonzero status.
KERNEL_FAILURE = re.compile(r"kernel '(?P<entry>[^']+)' failed with code (?P<code>-?\d+)")


@dataclass(frozen=True)
class KernelSources:
    """Entry point name -> its source nodes as (name, IR op); the op is "" when the module does
    not record it (modules written before source_ops existed)."""

    entries: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, module: Module) -> "KernelSources":
        entries: dict[str, tuple[tuple[str, str], ...]] = {}
        for d in module.debug_info or []:
            if d.executable >= len(module.executables):
                continue
            points = module.executables[d.executable].entry_points
            if d.entry_point >= len(points) or not d.source_nodes:
                continue
            ops = list(d.source_ops) + [""] * (len(d.source_nodes) - len(d.source_ops))
            entries.setdefault(points[d.entry_point].name, tuple(zip(d.source_nodes, ops)))
        return cls(entries)

    def explain(self, message: str) -> str | None:
        """The model's account of runtime error text `message` when it reports a kernel failure
        this module can name; None otherwise."""
        found = KERNEL_FAILURE.search(message)
        if found is None:
            return None
        status = kernel_status(int(found["code"]))
        nodes = self.entries.get(found["entry"])
        if status is None or status.code == STATUS_OK or not nodes:
            return None
        named = [f"'{name}' (op {op})" if op else f"'{name}'" for name, op in nodes]
        where = f"node {named[0]}" if len(named) == 1 else f"nodes {', '.join(named)}"
        return f"{where}: {status.meaning} (kernel {found['entry']}, code {status.code})"
