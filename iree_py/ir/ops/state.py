"""Ops of module state: resource variables kept across calls (TFLite VAR_HANDLE / READ_VARIABLE /
ASSIGN_VARIABLE / CALL_ONCE). See docs/state.md.

Every variable is a state slot: arena bytes reserved for the module's life. Each op names its slot
by `slot` (index) and `var` (the variable's name, for messages and dumps).

| op | inputs | attrs | result |
|---|---|---|---|
| StateRead | — | slot, var, shape, dtype | the slot's value at the start of the call |
| StateWrite | X | slot, var | a token (tensor<0xu8>, read by nobody): the slot holds X after the call |
| StateInit | X (constant) | slot, var | a token: X is stored in the slot by the first call, before anything else |

Order: StateInit nodes come first in the graph, then the StateRead nodes, then the rest, and the
StateWrite nodes last (the TFLite importer places them so); one StateWrite per slot at most.
StateRead/StateWrite/StateInit are never folded (constant folding) and StateWrite/StateInit are
never dead (dead-code elimination).
"""
from __future__ import annotations

from typing import Any

from iree_py.ir.opdef import ANY_DTYPE, Kernel, OpDef
from iree_py.ir.types import DType, TensorType

TOKEN = TensorType(DType.u8, (0,))
STATE_OPS = frozenset({"StateRead", "StateWrite", "StateInit"})
SIDE_EFFECT_OPS = frozenset({"StateWrite", "StateInit"})


def _read_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    try:
        dtype = DType(attrs["dtype"])
    except ValueError:
        raise ValueError(f"StateRead dtype {attrs['dtype']!r} is not a dtype name") from None
    return [TensorType(dtype, tuple(int(d) for d in attrs["shape"]))]


def _token_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    if not inputs[0].is_static:
        raise ValueError(f"state variable {attrs['var']!r} must have a static shape, got {inputs[0]}")
    return [TOKEN]


OP_DEFS = [
    OpDef("StateRead", ("dtype", "shape", "slot", "var"), 0, 0, _read_rule, dtypes=ANY_DTYPE),
    OpDef("StateWrite", ("slot", "var"), 1, 1, _token_rule, dtypes=ANY_DTYPE),
    OpDef("StateInit", ("slot", "var"), 1, 1, _token_rule, dtypes=ANY_DTYPE),
]
KERNELS: dict[str, Kernel] = {}  # state lives across calls: nothing for the numpy reference to compute
