"""ONNX Cast / CastLike / QuantizeLinear / DequantizeLinear with the narrow element types (bf16,
float8, f4e2m1, 4-/2-bit integers; iree_py/ir/narrow_types.py). Registered in onnx_ops.py's
CONVERTERS under the `dtypes2` marker; other dtypes go to the converters in onnx_logic.py and
onnx_quant.py.

The normalized Cast to a float8 type saturates (ONNX's default saturate=1). Cast with saturate=0
becomes Where(|x| beyond the rounding limit, inf or NaN, Cast(x)): the limit is halfway between the
largest finite value and the next power step, inclusive when the tie rounds up (odd last code).
Cast to f8e8m0 is its ONNX default, round_mode="up" with saturate=1 (narrow_types.py); the other
round modes and saturate=0 are refused.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.frontends import onnx_logic, onnx_quant
from iree_py.frontends.onnx_logic import onnx_dtype
from iree_py.ir.graph import Value
from iree_py.ir.narrow_types import FLOAT8_DTYPES, FLOAT_FORMATS, NARROW_DTYPES, NARROW_INT_DTYPES, narrow_int_range
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

Converter = Callable[["OnnxContext"], list[Value]]
WIDE_FLOATS = (DType.f32, DType.f16, DType.f64)


# -------------------------------------------------------------------------------------------- Cast

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
    return onnx_logic.cast(ctx)


def cast_like(ctx: "OnnxContext") -> list[Value]:
    to = ctx.input(1).type.dtype
    _check_e8m0_mode(ctx, to)
    if to in FLOAT8_DTYPES and not _saturate(ctx) and ctx.input(0).type.dtype != to:
        return [cast_unsaturated(ctx, ctx.input(0), to)]
    return onnx_logic.cast_like(ctx)


# ---------------------------------------------------------------------------------- quantization

def _quant_target(ctx: "OnnxContext") -> DType | None:
    """The output dtype of a QuantizeLinear: its zero point's, else output_dtype's (None: not narrow)."""
    if ctx.has_input(2):
        dtype = ctx.input(2).type.dtype
    elif int(ctx.attr("output_dtype", 0)):
        dtype = onnx_dtype(ctx, int(ctx.attr("output_dtype")), "output_dtype")
    else:
        return None
    return dtype if dtype in NARROW_DTYPES else None


def _param(ctx: "OnnxContext", x: Value, i: int, what: str, dtype: DType) -> Value:
    """Input i (scale / zero point) as `dtype`, shaped to broadcast against x along `axis`."""
    value = onnx_quant._broadcastable(ctx, x, ctx.input(i), what)
    return value if value.type.dtype == dtype else ctx.emit("Cast", [value], {"to": dtype.value})


def quantize_linear(ctx: "OnnxContext") -> list[Value]:
    """Narrow integers: Clip(Round(x / scale) + zero_point) cast; narrow floats: Cast(x / scale +
    zero_point), saturating unless saturate=0 (float8)."""
    to = _quant_target(ctx)
    if to is None:
        return onnx_quant.quantize_linear(ctx)
    onnx_quant._no_blocks(ctx)
    x = ctx.input(0)
    if x.type.dtype not in (DType.f32, DType.f16):
        raise ctx.error(f"input '{x.name}' is {x.type}; only float32 and float16 inputs are supported")
    if ctx.input(1).type.dtype != x.type.dtype:
        raise ctx.error(f"y_scale is {ctx.input(1).type}, x is {x.type}: they must have the same dtype")
    xf = x if x.type.dtype == DType.f32 else ctx.emit("Cast", [x], {"to": "f32"})
    y = ctx.emit("Div", [xf, _param(ctx, x, 1, "y_scale", DType.f32)])
    if to in NARROW_INT_DTYPES:
        y = ctx.emit("Round", [y])
    if ctx.has_input(2):
        y = ctx.emit("Add", [y, _param(ctx, x, 2, "y_zero_point", DType.f32)])
    if to in NARROW_INT_DTYPES:
        low, high = narrow_int_range(to)
        y = ctx.emit("Clip", [y], {"min": float(low), "max": float(high)})
    if to in FLOAT8_DTYPES and not _saturate(ctx):
        return [cast_unsaturated(ctx, y, to)]
    return [ctx.emit("Cast", [y], {"to": to.value}, out=0)]


def dequantize_linear(ctx: "OnnxContext") -> list[Value]:
    """(x - zero_point) * scale, in the scale's dtype (f32 or f16)."""
    x = ctx.input(0)
    if x.type.dtype not in NARROW_DTYPES:
        return onnx_quant.dequantize_linear(ctx)
    onnx_quant._no_blocks(ctx)
    scale_dtype = ctx.input(1).type.dtype
    if scale_dtype not in (DType.f32, DType.f16):
        raise ctx.error(f"x_scale is {ctx.input(1).type}; only float32 and float16 scales are supported")
    output_dtype = int(ctx.attr("output_dtype", 0))
    if output_dtype and onnx_dtype(ctx, output_dtype, "output_dtype") != scale_dtype:
        raise ctx.bad_attr("output_dtype", output_dtype, f"must match the scale's dtype {scale_dtype.value}")
    y = ctx.emit("Cast", [x], {"to": scale_dtype.value})
    if ctx.has_input(2):
        if ctx.input(2).type.dtype != x.type.dtype:
            raise ctx.error(f"x_zero_point is {ctx.input(2).type}, x is {x.type}: they must have the same dtype")
        y = ctx.emit("Sub", [y, _param(ctx, x, 2, "x_zero_point", scale_dtype)])
    return [ctx.emit("Mul", [y, _param(ctx, x, 1, "x_scale", scale_dtype)], out=0)]


DTYPES2_CONVERTERS: dict[str, Converter] = {
    "Cast": cast,
    "CastLike": cast_like,
    "QuantizeLinear": quantize_linear,
    "DequantizeLinear": dequantize_linear,
}
