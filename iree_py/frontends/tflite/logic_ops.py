"""TFLite comparisons and logic (LESS, GREATER, EQUAL, ..., LOGICAL_AND/OR/NOT, SELECT/SELECT_V2)
-> the IR's compare/logic ops and Where (iree_py/ir/ops/logic.py). Operands broadcast numpy-style,
as the IR ops do; both operands of a comparison must have one dtype (TFLite requires it too)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from iree_py.frontends.tflite.schema.BuiltinOperator import BuiltinOperator as B
from iree_py.ir.graph import Value

if TYPE_CHECKING:
    from iree_py.frontends.tflite.importer import TfliteContext

Converter = Callable[["TfliteContext"], list[Value]]


def _binary(op: str, negate: bool = False) -> Converter:
    def convert(ctx: "TfliteContext") -> list[Value]:
        a, b = ctx.input(0), ctx.input(1)
        if a.type.dtype != b.type.dtype:
            raise ctx.error(f"operand dtypes differ: {a.type} and {b.type}")
        if negate:
            return [ctx.emit("Not", [ctx.emit(op, [a, b])], out=0)]
        return [ctx.emit(op, [a, b], out=0)]
    return convert


def logical_not(ctx: "TfliteContext") -> list[Value]:
    return [ctx.emit("Not", [ctx.input(0)], out=0)]


def select(ctx: "TfliteContext") -> list[Value]:
    return [ctx.emit("Where", [ctx.input(0), ctx.input(1), ctx.input(2)], out=0)]


TFLITE_LOGIC_CONVERTERS: dict[int, Converter] = {
    B.LESS: _binary("Less"), B.LESS_EQUAL: _binary("LessOrEqual"), B.GREATER: _binary("Greater"),
    B.GREATER_EQUAL: _binary("GreaterOrEqual"), B.EQUAL: _binary("Equal"),
    B.NOT_EQUAL: _binary("Equal", negate=True),
    B.LOGICAL_AND: _binary("And"), B.LOGICAL_OR: _binary("Or"), B.LOGICAL_NOT: logical_not,
    B.SELECT: select, B.SELECT_V2: select,
}
