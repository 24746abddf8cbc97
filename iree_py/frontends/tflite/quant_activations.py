"""int8/uint8 SOFTMAX, LOGISTIC and TANH, bit-exact with TFLite's reference resolver.

- SOFTMAX -> QSoftmax (fixed point, iree_py/ir/ops/qsoftmax.py) with the parameters TFLite's Prepare
  derives from beta and the input scale; output 1/256 with zero point -128 (int8) / 0 (uint8).
- LOGISTIC, TANH -> QLookup (iree_py/ir/ops/quantized.py): TFLite evaluates both through a 256-entry
  table filled in float32 at Prepare time; the table is built here the same way. Outputs: LOGISTIC
  1/256 with zero point -128 / 0, TANH 1/128 with zero point 0 / 128 (TFLite refuses others).
Float inputs go to the float converters of ops.py.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.frontends.tflite.quant_ops import storage_type, tensor_quant
from iree_py.frontends.tflite.schema.BuiltinOperator import BuiltinOperator as B
from iree_py.frontends.tflite.schema.SoftmaxOptions import SoftmaxOptionsT
from iree_py.ir.graph import Value
from iree_py.ir.ops.quantized import lookup_table
from iree_py.ir.ops.qsoftmax import qsoftmax_params

if TYPE_CHECKING:
    from iree_py.frontends.tflite.importer import TfliteContext

Converter = Callable[["TfliteContext"], list[Value]]

# operator -> dtype -> (output scale, output zero point) that TFLite's Prepare requires
OUTPUT_PARAMS = {
    "SOFTMAX": {"i8": (1 / 256, -128), "u8": (1 / 256, 0)},
    "LOGISTIC": {"i8": (1 / 256, -128), "u8": (1 / 256, 0)},
    "TANH": {"i8": (1 / 128, 0), "u8": (1 / 128, 128)},
}


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """float32 1 / (1 + exp(-x)), with exp correctly rounded to float32."""
    with np.errstate(over="ignore"):   # exp of a large -x overflows float32 to inf: the result is 0, as in C
        e = np.exp(-x.astype(np.float64)).astype(np.float32)
    return np.float32(1.0) / (np.float32(1.0) + e)


def _tanh(x: np.ndarray) -> np.ndarray:
    return np.tanh(x.astype(np.float64)).astype(np.float32)


def _checked_params(ctx: "TfliteContext", op: str) -> tuple[str, float, int]:
    """(dtype, input scale, input zero point) after checking the output's parameters."""
    dtype, out_dtype = storage_type(ctx, 0), storage_type(ctx, 0, outputs=True)
    if out_dtype != dtype:
        raise ctx.error(f"quantized {op} from {dtype} to {out_dtype or 'a non-8-bit type'} is not supported "
                        "(only int8 -> int8 and uint8 -> uint8)")
    in_q, out_q = tensor_quant(ctx, 0), tensor_quant(ctx, 0, outputs=True)
    if len(in_q.scale) != 1:
        raise ctx.error(f"input has {len(in_q.scale)} per-channel scales; {op} needs per-tensor quantization")
    want_scale, want_zp = OUTPUT_PARAMS[op][dtype]
    if out_q.zero_point[0] != want_zp or abs(out_q.scale[0] - want_scale) > 0.001 * want_scale:
        raise ctx.error(f"output scale/zero point {out_q.scale[0]:.6g}/{out_q.zero_point[0]}: TFLite requires "
                        f"1/{round(1 / want_scale)} and {want_zp} for {op} on {dtype}")
    return dtype, in_q.scale[0], in_q.zero_point[0]


def quantized_softmax(ctx: "TfliteContext") -> list[Value]:
    dtype, scale, _ = _checked_params(ctx, "SOFTMAX")
    beta = float(ctx.options(SoftmaxOptionsT).beta)
    try:
        params = qsoftmax_params(beta, scale)
    except ValueError as err:
        raise ctx.error(str(err)) from None
    return [ctx.emit("QSoftmax", [ctx.input(0)], {**params, "out_dtype": dtype}, out=0)]


def _table_op(op: str, transform: Callable[[np.ndarray], np.ndarray]) -> Converter:
    def convert(ctx: "TfliteContext") -> list[Value]:
        dtype, scale, zero_point = _checked_params(ctx, op)
        out_q = tensor_quant(ctx, 0, outputs=True)
        table = lookup_table(dtype, scale, zero_point, out_q.scale[0], out_q.zero_point[0], transform)
        return [ctx.emit("QLookup", [ctx.input(0)], {"table": table, "out_dtype": dtype}, out=0)]
    return convert


QUANTIZED: dict[str, Converter] = {
    "SOFTMAX": quantized_softmax,
    "LOGISTIC": _table_op("LOGISTIC", _sigmoid),
    "TANH": _table_op("TANH", _tanh),
}


def quant_activation_converters(float_converters: dict[str, Converter]) -> dict[int, Converter]:
    """ops.py's CONVERTERS entries for SOFTMAX, LOGISTIC and TANH: the quantized converter for an
    int8/uint8 input, else the float converter ops.py passes in (by BuiltinOperator name)."""
    def by_dtype(quantized: Converter, float_converter: Converter) -> Converter:
        def convert(ctx: "TfliteContext") -> list[Value]:
            return quantized(ctx) if storage_type(ctx, 0) is not None else float_converter(ctx)
        return convert

    return {getattr(B, name): by_dtype(QUANTIZED[name], f) for name, f in float_converters.items()}
