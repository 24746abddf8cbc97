"""The i32 elementwise ops of the SPIR-V backend (docs/ir.md's integer rules, as the CPU backend's
elementwise_typed.py): add, sub and mul wrap; Div truncates; Mod has the dividend's sign and
FloorMod the divisor's; a zero divisor gives 0 and INT_MIN / -1 wraps to INT_MIN, so no shader
meets SPIR-V's undefined cases (OpSDiv/OpSRem/OpSMod by 0 or of INT_MIN by -1)."""
from __future__ import annotations

from typing import Callable

from iree_py.codegen.spirv.builder import KernelBuilder, Value


def _safe_divisor(b: KernelBuilder, y: Value) -> tuple[Value, Value]:
    """(y where y is neither 0 nor -1, else 1; whether it was)."""
    special = b.logical_or(y.eq(0), y.eq(-1))
    return b.select(special, b.int(1), y), special


def _div(b: KernelBuilder, x: Value, y: Value) -> Value:
    d, special = _safe_divisor(b, y)
    return b.select(special, b.select(y.eq(0), b.int(0), -x), x / d)  # -INT_MIN wraps to INT_MIN


def _rem(b: KernelBuilder, x: Value, y: Value, floor: bool) -> Value:
    d, special = _safe_divisor(b, y)  # x mod -1 is 0, x mod 0 is 0
    r = b.op("OpSRem", "i32", x, d)
    if floor:  # the divisor's sign, from OpSRem (lavapipe's OpSMod gave the dividend's sign)
        r = b.select(b.logical_or(b.logical_and(r < 0, d > 0), b.logical_and(r > 0, d < 0)), r + d, r)
    return b.select(special, b.int(0), r)


INT_BINARY: dict[str, Callable[[KernelBuilder, Value, Value], Value]] = {
    "Add": lambda b, x, y: x + y,
    "Sub": lambda b, x, y: x - y,
    "Mul": lambda b, x, y: x * y,
    "Div": _div,
    "Mod": lambda b, x, y: _rem(b, x, y, floor=False),
    "FloorMod": lambda b, x, y: _rem(b, x, y, floor=True),
    "Min": lambda b, x, y: b.select(y < x, y, x),
    "Max": lambda b, x, y: b.select(x < y, y, x),
    "BitwiseAnd": lambda b, x, y: b.op("OpBitwiseAnd", "i32", x, y),
    "BitwiseOr": lambda b, x, y: b.op("OpBitwiseOr", "i32", x, y),
    "BitwiseXor": lambda b, x, y: b.op("OpBitwiseXor", "i32", x, y),
}

INT_UNARY: dict[str, Callable[[KernelBuilder, Value], Value]] = {
    "Neg": lambda b, x: -x,
    "Abs": lambda b, x: b.select(x < 0, -x, x),
    "Relu": lambda b, x: b.select(x < 0, b.int(0), x),
    "Sign": lambda b, x: b.select(x > 0, b.int(1), b.select(x < 0, b.int(-1), b.int(0))),
}
