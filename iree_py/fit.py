"""Will a compiled module fit a board? Checked at compile time for bare-metal targets (and for any
target given --ram/--flash), so a model too big for the board fails on the developer's machine
with the numbers, not on the board.

--ram is the RAM the firmware gives the runtime (its one region: device-server and runtime state,
the module's state, the arena; constants and kernels stay in flash, used in place). --flash is
the flash for modules (the board's module storage). The firmware's own code, stack and globals
come on top; `iree-py build-runtime` reports them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from iree_py.targets import Target
from iree_py.errors import CompileError
from iree_py.module import model as mod

_SIZE = re.compile(r"^\s*(0x[0-9a-fA-F]+|\d+)\s*([kKmM]i?[bB]?|[bB])?\s*$")
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024 * 1024}


def parse_size(text: str | int) -> int:
    """'256K', '1M', '4096', '0x40000' -> bytes (K and M are binary: 1K = 1024)."""
    if isinstance(text, int):
        return text
    match = _SIZE.match(text)
    if not match:
        raise CompileError(f"{text!r} is not a size: use bytes, or K / M suffixes (e.g. 256K, 1M)")
    number, unit = match.groups()
    return int(number, 0) * _UNITS[(unit or "")[:1].lower()]


@dataclass(frozen=True)
class Footprint:
    ram_needed: int      # arena + runtime state for this module
    flash_needed: int    # the module
    arena: int
    runtime_ram: int


# Upper bounds of what the runtime allocates per item of a module when it loads it
# (runtime_c/vm/module.h, api/api.c), with room for alignment padding; checked against what a
# board reports in tests/boards.
_SIGNATURE_BYTES = 96
_FUNCTION_BYTES = 64
_CONSTANT_BYTES = 16
_EXECUTABLE_BYTES = 64
_ENTRY_POINT_BYTES = 64          # record, kernel pointer, profile slot
_BINDING_BYTES = 8               # one minimum length
_I64_REGISTER_BYTES = 8
_REF_REGISTER_BYTES = 24
_ALLOCATION_PADDING = 64         # the arena's alignment, and slack per allocation
_MAX_CALL_DEPTH = 32             # IRP_MAX_CALL_DEPTH's default (runtime_c/base/config.h)
_POOL_BLOCK_TABLE_BYTES = 256 * 24  # the pool's block table (runtime_c/vm/pool.h), when there is a pool


def module_state_bytes(module: mod.Module) -> int:
    """RAM the runtime allocates for `module` besides the arena."""
    entries = [e for x in module.executables for e in x.entry_points]
    signatures = sum(len(f.inputs) + len(f.outputs) for f in module.functions)
    i64_registers = max((f.i64_register_count for f in module.functions), default=0)
    ref_registers = max((f.ref_register_count for f in module.functions), default=0)
    # The runtime keeps one register window per call level: one for a module without callees (every
    # function exported), at most IRP_MAX_CALL_DEPTH otherwise (the bound it uses for recursion).
    levels = 1 if all(f.exported for f in module.functions) else _MAX_CALL_DEPTH
    allocations = 8 + 2 * len(module.functions) + len(entries)
    return (signatures * _SIGNATURE_BYTES + len(module.functions) * _FUNCTION_BYTES
            + len(module.constants) * _CONSTANT_BYTES + len(module.executables) * _EXECUTABLE_BYTES
            + len(entries) * _ENTRY_POINT_BYTES + sum(e.binding_count for e in entries) * _BINDING_BYTES
            + levels * (i64_registers * _I64_REGISTER_BYTES + ref_registers * _REF_REGISTER_BYTES)
            + allocations * _ALLOCATION_PADDING)


def footprint(target: Target, module: mod.Module, module_bytes: int) -> Footprint:
    """What `module` (serialized to `module_bytes` bytes) needs on a board of `target`."""
    runtime_ram = target.runtime_ram_bytes + module_state_bytes(module)
    pool = module.memory_plan.pool_size
    # The run-time pool (symbolic sizes without a bound) is RAM like the arena.
    arena = module.memory_plan.arena_size + (pool + _POOL_BLOCK_TABLE_BYTES if pool else 0)
    return Footprint(ram_needed=arena + runtime_ram, flash_needed=module_bytes, arena=arena, runtime_ram=runtime_ram)


def check_fit(target: Target, fp: Footprint, ram: int | None, flash: int | None) -> None:
    """Raise CompileError naming each budget the module exceeds and by how much."""
    problems = []
    if ram is not None and fp.ram_needed > ram:
        problems.append(f"RAM: needs {fp.ram_needed:,} bytes (arena {fp.arena:,} + runtime {fp.runtime_ram:,}) "
                        f"but --ram is {ram:,}: {fp.ram_needed - ram:,} bytes over")
    if flash is not None and fp.flash_needed > flash:
        problems.append(f"flash: the module needs {fp.flash_needed:,} bytes but --flash is {flash:,}: "
                        f"{fp.flash_needed - flash:,} bytes over")
    if problems:
        raise CompileError(f"the model does not fit target {target.name}:\n  " + "\n  ".join(problems))
