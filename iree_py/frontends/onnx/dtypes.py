"""Element types in the ONNX frontend: Cast, CastLike and BitCast, the ONNX element type of a code
(`onnx_dtype`), and bfloat16 operands of float ops.

The normalized Cast to a float8 type saturates (ONNX's default saturate=1). Cast with saturate=0
becomes Where(|x| beyond the rounding limit, inf or NaN, Cast(x)): the limit is halfway between the
largest finite value and the next power step, inclusive when the tie rounds up (odd last code).
Cast to f8e8m0 is its ONNX default, round_mode="up" with saturate=1 (narrow_types.py); the other
round modes and saturate=0 are refused.

BitCast (26): the BitCast op (same element size only).

bfloat16 operands of float ops that compute only in f32/f16/f64: computed in float32 and rounded
to bf16 once per ONNX node, as onnx's reference does (its bf16 Einsum accumulates in float32 and
casts the result; numpy's bf16 ufuncs compute each op in float32 and round the result).

bf16 is a storage type in iree-py (docs/ir.md, narrow_types.py): the wrapped converter sees each
bf16 input Cast to f32 (exact: bf16 is f32 with fewer mantissa bits) and each of its f32 results is
Cast to bf16 (round to nearest even) under the node's own output name.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import onnx
import onnx.helper

from iree_py.frontends.onnx.compose import Converter
from iree_py.frontends.onnx.symbolic import SymbolicConverter, _known_inputs, known_result
from iree_py.ir.graph import Value
from iree_py.ir.narrow_types import FLOAT8_DTYPES, FLOAT_FORMATS
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


def onnx_dtype(ctx: "OnnxContext", elem_type: int, what: str) -> DType:
    """The DType of an ONNX TensorProto element type; CompileError naming it when unsupported."""
    name = onnx.TensorProto.DataType.Name(elem_type) if elem_type in onnx.TensorProto.DataType.values() \
        else str(elem_type)
    try:
        return DType.from_numpy(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, ValueError, TypeError):
        supported = ", ".join(d.value for d in DType)
        raise ctx.error(f"{what} {name} is not supported (iree-py element types: {supported})") from None


def _cast_to(ctx: "OnnxContext", x: Value, to: DType, out: int | None = 0) -> Value:
    if x.type.dtype == to:
        return x
    return ctx.emit("Cast", [x], {"to": to.value}, out=out)


def _plain_cast(ctx: "OnnxContext") -> list[Value]:
    to = onnx_dtype(ctx, int(ctx.attr("to")), "Cast to")
    return [_cast_to(ctx, ctx.input(0), to)]


def _plain_cast_like(ctx: "OnnxContext") -> list[Value]:
    return [_cast_to(ctx, ctx.input(0), ctx.input(1).type.dtype)]


WIDE_FLOATS = (DType.f32, DType.f16, DType.f64)


def _overflow_limit(dtype: DType) -> tuple[float, bool]:
    """(limit, inclusive): |x| beyond it rounds past the largest finite value of float8 `dtype`."""
    fmt = FLOAT_FORMATS[dtype]
    top_exponent = fmt.max_code >> fmt.mantissa
    step = 2.0 ** (top_exponent - fmt.bias - fmt.mantissa)
    return fmt.max_value + step / 2, bool(fmt.max_code & 1)


def _scalar(ctx: "OnnxContext", value: float, dtype: DType) -> Value:
    with np.errstate(all="ignore"):
        return ctx.const(np.array(value, dtype=np.float32).astype(dtype.numpy))


def cast_unsaturated(ctx: "OnnxContext", x: Value, to: DType, out: int | None = 0) -> Value:
    """Cast to float8 `to` with saturate=0: overflow and infinities give inf (e5m2) or NaN."""
    if x.type.dtype not in WIDE_FLOATS:
        x = ctx.emit("Cast", [x], {"to": "f32"})
    rounded = ctx.emit("Cast", [x], {"to": to.value})
    limit, inclusive = _overflow_limit(to)
    compare = "GreaterOrEqual" if inclusive else "Greater"
    big = ctx.emit(compare, [ctx.emit("Abs", [x]), _scalar(ctx, limit, x.type.dtype)])
    if FLOAT_FORMATS[to].inf_code is not None:
        negative = ctx.emit("Less", [x, _scalar(ctx, 0.0, x.type.dtype)])
        overflow = ctx.emit("Where", [negative, _scalar(ctx, -np.inf, to), _scalar(ctx, np.inf, to)])
    else:
        overflow = _scalar(ctx, np.nan, to)
    return ctx.emit("Where", [big, overflow, rounded], out=out)


def _saturate(ctx: "OnnxContext") -> bool:
    saturate = int(ctx.attr("saturate", 1))
    if saturate not in (0, 1):
        raise ctx.bad_attr("saturate", saturate, "expected 0 or 1")
    return bool(saturate)


def _check_e8m0_mode(ctx: "OnnxContext", to: DType) -> None:
    if to != DType.f8e8m0:
        return
    round_mode = ctx.attr("round_mode", "up")
    if round_mode != "up":
        raise ctx.bad_attr("round_mode", round_mode, "Cast to FLOAT8E8M0 supports only round_mode='up' (the default)")
    if not _saturate(ctx):
        raise ctx.bad_attr("saturate", 0, "Cast to FLOAT8E8M0 supports only saturate=1 (the default)")


def cast(ctx: "OnnxContext") -> list[Value]:
    to = onnx_dtype(ctx, int(ctx.attr("to")), "Cast to")
    _check_e8m0_mode(ctx, to)
    if to in FLOAT8_DTYPES and not _saturate(ctx) and ctx.input(0).type.dtype != to:
        return [cast_unsaturated(ctx, ctx.input(0), to)]
    return _plain_cast(ctx)


def cast_like(ctx: "OnnxContext") -> list[Value]:
    to = ctx.input(1).type.dtype
    _check_e8m0_mode(ctx, to)
    if to in FLOAT8_DTYPES and not _saturate(ctx) and ctx.input(0).type.dtype != to:
        return [cast_unsaturated(ctx, ctx.input(0), to)]
    return _plain_cast_like(ctx)


def bitcast(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    to_code = int(ctx.attr("to"))
    try:
        to = DType.from_numpy(onnx.helper.tensor_dtype_to_np_dtype(to_code))
    except (KeyError, ValueError):
        raise ctx.bad_attr("to", to_code, "not an element type iree-py handles") from None
    if to.itemsize != x.type.dtype.itemsize:
        raise ctx.bad_attr("to", to_code, f"{to.value} differs in size from the input {x.type}")
    if to == DType.bool and x.type.dtype != DType.bool:
        raise ctx.bad_attr("to", to_code, f"bytes of {x.type} are not all valid bools (0/1)")
    if to == x.type.dtype:
        return [x]
    return [ctx.emit("BitCast", [x], {"to": to.value}, out=0)]


def _symbolic_cast(ctx: "OnnxContext") -> list[Value] | None:
    values, arrays = _known_inputs(ctx)
    if arrays is None:
        return None
    to = DType.from_numpy(onnx.helper.tensor_dtype_to_np_dtype(int(ctx.attr("to"))))
    if to.numpy.kind not in "iuf":
        return None  # (bool, ...): computed at run time
    # A float known value keeps its integer elements (YOLO heads cast a grid size to float for a
    # Range); exact while they stay below 2**24, as real sizes do.
    return [known_result(ctx, arrays[0], to)]


# --- bfloat16 operands of float ops ----------------------------------------------------------------

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


CONVERTERS: dict[str, Converter] = {
    "Cast": cast,
    "CastLike": cast_like,
    "BitCast": bitcast,
}

SYMBOLIC_CONVERTERS: dict[str, SymbolicConverter] = {"Cast": _symbolic_cast}
