"""How module state shows in a module: each state slot (and the "initialized" flag) is a buffer of
the memory plan whose name starts with STATE_BUFFER_PREFIX ("state acc: tensor<1x4xf32>"), so
`iree-py dump` lists them and a device can tell that calls of the module depend on earlier calls."""
from __future__ import annotations

from iree_py.module.model import Module, PlannedBuffer

STATE_BUFFER_PREFIX = "state "


def state_buffer(label: str, offset: int, size: int) -> PlannedBuffer:
    return PlannedBuffer(STATE_BUFFER_PREFIX + label, offset, size)


def has_state(module: Module) -> bool:
    return any(b.name.startswith(STATE_BUFFER_PREFIX) for b in module.memory_plan.buffers)
