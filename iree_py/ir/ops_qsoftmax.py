"""QSoftmax: TFLite's int8/uint8 SOFTMAX over the last axis, in fixed point (docs/ir.md, "Quantized ops").

    QSoftmax(x: i8 | u8 [..., D]) -> out_dtype [..., D]
    attrs: input_multiplier (Q31), input_left_shift (>= 0), diff_min (<= 0), out_dtype ("i8" | "u8")

The output is quantized with scale 1/256 and zero point -128 (i8) or 0 (u8), as TFLite requires.
`qsoftmax_params` derives the attributes from beta and the input scale the way TFLite's Prepare
does (PreprocessSoftmaxScaling with 5 integer bits, CalculateInputRadius); the arithmetic is in
reference_qsoftmax.py (numpy) and codegen/llvm/qsoftmax.py (the kernel).
"""
from __future__ import annotations

import math
from typing import Any

from iree_py.ir.opdef import OpDef
from iree_py.ir.types import DType, TensorType

SCALED_DIFF_INTEGER_BITS = 5          # the exp() input is Q5.26
ACCUMULATION_INTEGER_BITS = 12        # the sum of exps is Q12.19
QSOFTMAX_DTYPES = frozenset({DType.i8, DType.u8})
OUTPUT_ZERO_POINT = {"i8": -128, "u8": 0}
OUTPUT_SCALE = 1.0 / 256


def qsoftmax_params(beta: float, input_scale: float) -> dict[str, int]:
    """input_multiplier, input_left_shift, diff_min from float32 beta and input scale (as doubles)."""
    from iree_py.ir.quant_math import quantize_multiplier

    real = min(float(beta) * float(input_scale) * (1 << (31 - SCALED_DIFF_INTEGER_BITS)), (1 << 31) - 1.0)
    if not real > 1.0:
        raise ValueError(f"beta {beta} x input scale {input_scale} is too small for TFLite's quantized softmax "
                         f"(needs beta * scale * 2^26 > 1, got {real:.6g})")
    multiplier, shift = quantize_multiplier(real)
    radius = math.floor(((1 << SCALED_DIFF_INTEGER_BITS) - 1) * float(1 << (31 - SCALED_DIFF_INTEGER_BITS))
                        / float(1 << shift))
    return {"input_multiplier": int(multiplier), "input_left_shift": int(shift), "diff_min": -int(radius)}


def _qsoftmax(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = inputs[0]
    if x.dtype not in QSOFTMAX_DTYPES:
        raise ValueError(f"QSoftmax input must be i8 or u8, got {x}")
    if x.rank < 1:
        raise ValueError(f"QSoftmax input must have rank >= 1, got {x}")
    out = attrs["out_dtype"]
    if out not in OUTPUT_ZERO_POINT:
        raise ValueError(f"QSoftmax out_dtype {out!r}: expected 'i8' or 'u8'")
    if not 0 < int(attrs["input_multiplier"]) < (1 << 31):
        raise ValueError(f"QSoftmax input_multiplier {attrs['input_multiplier']} outside 1..2^31-1")
    if not 0 <= int(attrs["input_left_shift"]) <= 30:
        raise ValueError(f"QSoftmax input_left_shift {attrs['input_left_shift']} outside 0..30")
    if int(attrs["diff_min"]) > 0:
        raise ValueError(f"QSoftmax diff_min {attrs['diff_min']} must be <= 0")
    return [TensorType(DType(out), x.shape)]


QSOFTMAX_OP_DEFS = [
    OpDef("QSoftmax", ("diff_min", "input_left_shift", "input_multiplier", "out_dtype"), 1, 1, _qsoftmax,
          dtypes=QSOFTMAX_DTYPES),
]
