"""ONNX sequence and optional ops -> the IR's sequence ops (iree_py/ir/ops/sequences.py,
docs/sequences.md). Positions become i64 scalars; an element read as a tensor gets one fresh
symbol per dim, read from its record at run time."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import onnx

from iree_py.errors import CompileError
from iree_py.frontends.onnx.compose import Converter
from iree_py.ir.graph import Value
from iree_py.ir.ops.sequences import rank_attr
from iree_py.ir.symbols import Expr
from iree_py.ir.types import DType, SequenceType, is_sequence

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


def _tensor_element(tt: onnx.TypeProto.Tensor, what: str) -> tuple[DType, int | None]:
    """A tensor TypeProto's element dtype and rank (None when it has no shape)."""
    from iree_py.frontends.onnx.importer import _dtype
    return _dtype(tt.elem_type, what), (len(tt.shape.dim) if tt.HasField("shape") else None)


def value_type(tp: onnx.TypeProto, what: str) -> SequenceType | None:
    """The SequenceType of a sequence or optional TypeProto; None for a tensor."""
    which = tp.WhichOneof("value")
    if which == "tensor_type":
        return None
    if which == "sequence_type":
        elem = tp.sequence_type.elem_type
        if elem.WhichOneof("value") != "tensor_type":
            raise CompileError(f"{what}: a sequence of {elem.WhichOneof('value')} is not supported (tensors only)")
        return SequenceType(*_tensor_element(elem.tensor_type, what))
    if which == "optional_type":
        elem = tp.optional_type.elem_type
        inner = value_type(elem, what)
        if inner is None:
            return SequenceType(*_tensor_element(elem.tensor_type, what), "optional_tensor")
        if inner.optional:
            raise CompileError(f"{what}: an optional of an optional is not supported")
        return SequenceType(inner.dtype, inner.rank, "optional_sequence")
    raise CompileError(f"{what}: values of type {which} are not supported (tensors, sequences and optionals only)")


def _position(ctx: "OnnxContext", i: int) -> list[Value]:
    """Input i as the i64[] position the IR ops take, or [] when absent."""
    if not ctx.has_input(i):
        return []
    from iree_py.frontends.onnx.control_flow import _scalar_i64
    v = ctx.input(i)
    if is_sequence(v.type) or v.type.dtype not in (DType.i32, DType.i64):
        raise ctx.error(f"position must be an int32/int64 scalar, got {v.type}")
    return [_scalar_i64(ctx, v, "position")]


def _sequence_input(ctx: "OnnxContext", i: int) -> Value:
    v = ctx.input(i)
    if not is_sequence(v.type) or v.type.kind != "sequence":
        raise ctx.error(f"input {i} must be a sequence, got {v.type}")
    return v


def _element_dims(ctx: "OnnxContext", rank: int | None) -> tuple[Expr, ...]:
    from iree_py.frontends.onnx.symbolic import _fresh_symbol
    if rank is None:
        raise ctx.error("the sequence's elements may differ in rank (or their rank is unknown here), so an element "
                        "cannot be read as a tensor")
    out = ctx.node.output[0] or ctx.node_name
    return tuple(Expr.of(_fresh_symbol(ctx, f"{out}_d{k}")) for k in range(rank))


def _elem_dtype(ctx: "OnnxContext", attr: str = "dtype") -> DType:
    from iree_py.frontends.onnx.importer import _dtype
    return _dtype(int(ctx.attr(attr, onnx.TensorProto.FLOAT)), ctx.where())


def _emit(ctx: "OnnxContext", op: str, inputs: list[Value], attrs: dict | None = None) -> list[Value]:
    return [ctx.emit(op, inputs, attrs or {}, out=0)]


def sequence_empty(ctx: "OnnxContext") -> list[Value]:
    return _emit(ctx, "SequenceEmpty", [], {"dtype": _elem_dtype(ctx).value, "rank": -1})


def sequence_construct(ctx: "OnnxContext") -> list[Value]:
    values = ctx.inputs()
    if any(is_sequence(v.type) for v in values):
        raise ctx.error("SequenceConstruct takes tensors")
    return _emit(ctx, "SequenceConstruct", values)


def sequence_insert(ctx: "OnnxContext") -> list[Value]:
    s, t = _sequence_input(ctx, 0), ctx.input(1)
    if is_sequence(t.type):
        raise ctx.error("input 1 must be a tensor")
    if s.producer is not None and s.producer.op == "SequenceEmpty" and s.type.rank is None:
        s.type = SequenceType(s.type.dtype, t.type.rank)  # an empty sequence takes its first element's rank
        s.producer.attrs["rank"] = t.type.rank
    return _emit(ctx, "SequenceInsert", [s, t, *_position(ctx, 2)])


def sequence_at(ctx: "OnnxContext") -> list[Value]:
    s = _sequence_input(ctx, 0)
    return _emit(ctx, "SequenceAt", [s, *_position(ctx, 1)], {"dims": _element_dims(ctx, s.type.rank)})


def sequence_erase(ctx: "OnnxContext") -> list[Value]:
    return _emit(ctx, "SequenceErase", [_sequence_input(ctx, 0), *_position(ctx, 1)])


def sequence_length(ctx: "OnnxContext") -> list[Value]:
    return _emit(ctx, "SequenceLength", [_sequence_input(ctx, 0)])


def optional(ctx: "OnnxContext") -> list[Value]:
    if ctx.has_input(0):
        v = ctx.input(0)
        if is_sequence(v.type) and v.type.optional:
            raise ctx.error("an optional of an optional is not supported")
        return _emit(ctx, "OptionalWrap", [v])
    type_proto = next((a.tp for a in ctx.node.attribute if a.name == "type"), None)
    if type_proto is None:
        raise ctx.error("Optional with no input needs its type attribute")
    wrapped = onnx.TypeProto()  # the attribute is the element's type: the value is an optional of it
    wrapped.optional_type.elem_type.CopyFrom(type_proto)
    inner = value_type(wrapped, ctx.where())
    return _emit(ctx, "OptionalNone", [], {"dtype": inner.dtype.value, "kind": inner.kind, "rank": rank_attr(inner.rank)})


def optional_has_element(ctx: "OnnxContext") -> list[Value]:
    if not ctx.has_input(0):  # opset 18: no input is an empty optional
        return [ctx.const(np.array(False), out=0)]
    v = ctx.input(0)
    if not is_sequence(v.type) or not v.type.optional:  # a plain tensor or sequence always has one
        return [ctx.const(np.array(True), out=0)]
    has = ctx.emit("OptionalHasElement", [v], {}, hint=f"{ctx.node.output[0]}_i64")
    return [ctx.emit("Cast", [has], {"to": DType.bool.value}, out=0)]


def optional_get_element(ctx: "OnnxContext") -> list[Value]:
    v = ctx.input(0)
    if not is_sequence(v.type) or not v.type.optional:  # opset 18: a tensor or sequence is its own element
        return [v]
    dims = _element_dims(ctx, v.type.rank) if v.type.kind == "optional_tensor" else ()
    return _emit(ctx, "OptionalGetElement", [v], {"dims": dims})


def retype(ctx: "OnnxContext", v: Value, t: SequenceType, hint: str) -> Value:
    """`v` as sequence type `t` (a join of its type): SequenceAs, a copy."""
    if v.type == t:
        return v
    return ctx.emit("SequenceAs", [v], {"kind": t.kind, "rank": rank_attr(t.rank)}, hint=hint)


def split_to_sequence(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    if is_sequence(x.type):
        raise ctx.error("input 0 must be a tensor")
    if not x.type.is_static:
        raise ctx.error(f"input {x.type} has symbolic dims; SplitToSequence needs a static input shape")
    axis = int(ctx.attr("axis", 0))
    if not -x.type.rank <= axis < x.type.rank:
        raise ctx.bad_attr("axis", axis, f"outside rank {x.type.rank}")
    inputs = [x]
    if ctx.has_input(1):
        split = ctx.input(1)
        if is_sequence(split.type) or split.type.dtype not in (DType.i32, DType.i64) or split.type.rank > 1:
            raise ctx.error(f"split must be an int32/int64 scalar or vector, got {split.type}")
        if split.type.dtype != DType.i64:
            split = ctx.emit("Cast", [split], {"to": DType.i64.value}, hint=f"{ctx.node_name}_split")
        inputs.append(split)
    attrs = {"axis": axis % x.type.rank, "keepdims": int(ctx.attr("keepdims", 1))}
    return _emit(ctx, "SplitToSequence", inputs, attrs)


CONVERTERS: dict[str, Converter] = {
    "SplitToSequence": split_to_sequence,
    "SequenceEmpty": sequence_empty,
    "SequenceConstruct": sequence_construct,
    "SequenceInsert": sequence_insert,
    "SequenceAt": sequence_at,
    "SequenceErase": sequence_erase,
    "SequenceLength": sequence_length,
    "Optional": optional,
    "OptionalHasElement": optional_has_element,
    "OptionalGetElement": optional_get_element,
}
