"""String tensors in the ONNX frontend (docs/strings.md): graph inputs, initializers and Constant
nodes may be strings; Equal on two strings becomes StringEqual and Identity passes them through.
Every other op is refused when it reads or would produce a string, naming the node, op and opset."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import onnx

from iree_py.ir.graph import Value
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext

Converter = Callable[["OnnxContext"], list[Value]]

STRING_OPS = ("Equal", "Identity")  # the ops that take string operands
STRING_RESULT_OPS = ("Identity", "Constant")  # the ops whose results may be strings


def check_string_inputs(ctx: "OnnxContext", node: onnx.NodeProto) -> None:
    """Before converting `node`: refuse string operands of ops other than STRING_OPS, and Cast to string."""
    if node.op_type in STRING_OPS:
        return
    for i, name in enumerate(node.input):
        value = ctx.env.get(name) if name else None
        if value is not None and value.type.dtype == DType.string:
            raise ctx.error(f"input {i} ('{name}') is a string tensor; iree-py supports string tensors only "
                            f"in {', '.join(STRING_OPS)}")
    if node.op_type == "Cast" and any(a.name == "to" and a.i == onnx.TensorProto.STRING for a in node.attribute):
        raise ctx.error("Cast to a string tensor is not supported; iree-py supports string tensors only "
                        f"in {', '.join(STRING_OPS)}")


def check_string_results(ctx: "OnnxContext", node: onnx.NodeProto, results: list[Value | None]) -> None:
    """After converting `node`: only STRING_RESULT_OPS may produce strings."""
    if node.op_type in STRING_RESULT_OPS:
        return
    for i, value in enumerate(results):
        if value is not None and value.type.dtype == DType.string:
            raise ctx.error(f"output {i} would be a string tensor; iree-py supports string tensors only "
                            f"in {', '.join(STRING_OPS)}")


def with_string_equal(numeric: Converter) -> Converter:
    """ONNX Equal: StringEqual for two string operands, else the numeric converter."""
    def equal(ctx: "OnnxContext") -> list[Value]:
        a, b = ctx.input(0), ctx.input(1)
        strings = [v.type.dtype == DType.string for v in (a, b)]
        if all(strings):
            return [ctx.emit("StringEqual", [a, b], out=0)]
        if any(strings):
            raise ctx.error(f"Equal of a string and a number: operand dtypes differ: {a.type} and {b.type}")
        return numeric(ctx)
    return equal
