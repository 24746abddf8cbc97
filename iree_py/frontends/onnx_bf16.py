"""bfloat16 operands of float ops that compute only in f32/f16/f64: computed in float32 and rounded
to bf16 once per ONNX node, as onnx's reference does (its bf16 Einsum accumulates in float32 and
casts the result; numpy's bf16 ufuncs compute each op in float32 and round the result).

bf16 is a storage type in iree-py (docs/ir.md, narrow_types.py): the wrapped converter sees each
bf16 input Cast to f32 (exact: bf16 is f32 with fewer mantissa bits) and each of its f32 results is
Cast to bf16 (round to nearest even) under the node's own output name.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import onnx

from iree_py.ir.graph import Value
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

Converter = Callable[["OnnxContext"], list[Value]]

# ONNX ops (their output has the float input's type T) whose normalized ops have no bf16 kernel.
BF16_IN_F32_OPS = ("Add", "Sub", "Mul", "Div", "Sum", "Mean", "Min", "Max", "MatMul", "Gemm", "Einsum",
                   "Exp", "Log", "Sqrt", "Reciprocal", "Erf", "Softplus", "Softsign", "Sigmoid", "Tanh",
                   "Relu", "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "ThresholdedRelu",
                   "Mish", "Gelu", "Sin", "Cos", "Tan", "Atan", "Asin", "Acos", "Sinh", "Cosh", "Asinh",
                   "Acosh", "Atanh", "Abs", "Neg")


def in_float32(convert: Converter) -> Converter:
    """`convert` with bf16 inputs widened to f32 and its f32 results rounded to bf16; any node
    without a bf16 input converts unchanged."""
    def wrapped(ctx: "OnnxContext") -> list[Value]:
        node = ctx.node
        assert node is not None
        widened = [i for i in range(len(node.input)) if ctx.has_input(i) and ctx.input(i).type.dtype == DType.bf16]
        if not widened:
            return convert(ctx)
        values = {node.input[i]: ctx.input(i) for i in widened}  # one Cast per name (Mul(x, x))
        saved = {name: ctx.env.get(name) for name in values}
        for name, value in values.items():
            ctx.env[name] = ctx.emit("Cast", [value], {"to": DType.f32.value}, hint=f"{name}_f32")
        inner = onnx.NodeProto()
        inner.CopyFrom(node)
        del inner.output[:]
        inner.output.extend(ctx.names.fresh(f"{o}_f32") if o else "" for o in node.output)
        ctx.used.update(w for o, w in zip(node.output, inner.output) if o in ctx.used)
        ctx.node = inner
        try:
            results = convert(ctx)
        finally:
            ctx.node = node
            for name, value in saved.items():
                if value is None:
                    del ctx.env[name]
                else:
                    ctx.env[name] = value
        return [ctx.emit("Cast", [r], {"to": DType.bf16.value}, out=k)
                if r is not None and r.type.dtype == DType.f32 else r for k, r in enumerate(results)]
    return wrapped


def wrap_bf16(converters: dict[str, Converter]) -> None:
    """Wrap the BF16_IN_F32_OPS entries of `converters` in place."""
    for op in BF16_IN_F32_OPS:
        converters[op] = in_float32(converters[op])
