"""Shape rules of ConvTranspose, LpPool and GlobalMaxPool (ops.py's table takes CONVT_OP_DEFS).

ConvTranspose: X[N, C, *spatial] (1 to 3 spatial axes), W[C, M/group, *kernel], optional B[M].
Along each axis the full transposed result has (in - 1) * stride + (kernel - 1) * dilation + 1
positions; pads [begins..., ends...] crop it (a negative end pad extends it with positions no input
reaches: bias only). The ONNX frontend folds output_padding, output_shape and auto_pad into pads.
N, C and the spatial dims of X may be symbolic (W, B, the attributes stay static): C is checked
against W at run time, and an output axis that may be cropped to nothing gets a run-time check.
"""
from __future__ import annotations

from typing import Any

from iree_py.ir.dim_checks import at_least, require_equal
from iree_py.ir.opdef import OpDef, pool_output_dim, static_shape
from iree_py.ir.ops_quant import QUANT_DTYPES, REQUANT_ATTRS, _check_requant
from iree_py.ir.symbols import Expr, dim, dim_text
from iree_py.ir.types import Dim, DType, TensorType


def conv_transpose_full_size(size: Dim, kernel: int, stride: int, dilation: int) -> Dim:
    """Length of the uncropped transposed-convolution result along one axis (an Expr when `size` is)."""
    if isinstance(size, int):
        return (size - 1) * stride + (kernel - 1) * dilation + 1
    return dim((Expr.of(size) - 1) * stride + (kernel - 1) * dilation + 1)


def conv_transpose_output(x: tuple[Dim, ...], w: tuple[int, ...], attrs: dict[str, Any]) -> tuple[Dim, ...]:
    """The output's spatial dims; a symbolic one that could be below 1 gets a run-time check."""
    rank = len(x) - 2
    strides, dilations, pads = list(attrs["strides"]), list(attrs["dilations"]), list(attrs["pads"])
    if len(strides) != rank or len(dilations) != rank or len(pads) != 2 * rank:
        raise ValueError(f"ConvTranspose with {rank} spatial axes: strides {strides}, dilations {dilations} "
                         f"need {rank} values, pads {pads} {2 * rank}")
    if min(strides) < 1 or min(dilations) < 1 or min(pads[:rank]) < 0:
        raise ValueError(f"ConvTranspose strides {strides} / dilations {dilations} must be >= 1, "
                         f"begin pads {pads[:rank]} >= 0")
    out: list[Dim] = []
    for axis in range(rank):
        full = conv_transpose_full_size(x[2 + axis], w[2 + axis], strides[axis], dilations[axis])
        size = dim(Expr.of(full) - pads[axis] - pads[rank + axis])
        if isinstance(size, int) and size < 1:
            raise ValueError(f"ConvTranspose axis {axis}: pads {pads} crop all {full} positions")
        if isinstance(size, Expr):
            at_least(size, 1, f"ConvTranspose output axis {axis} (input {dim_text(x[2 + axis])}, pads {pads}) "
                              f"keeps at least one position")
        out.append(size)
    return tuple(out)


def _conv_transpose(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x, w = tuple(inputs[0].shape), static_shape(inputs[1])
    if not 3 <= len(x) <= 5 or len(w) != len(x):
        raise ValueError(f"ConvTranspose wants X and W of the same rank 3..5, got {inputs[0]} and {inputs[1]}")
    group = int(attrs["group"])
    if group < 1 or w[0] % group:
        raise ValueError(f"ConvTranspose weight's first dim {w[0]} (the input channels) must be divisible by "
                         f"group {group}")
    require_equal(x[1], w[0], "ConvTranspose input channels equal the weight's first dim")
    m = w[1] * group
    if len(inputs) == 3 and static_shape(inputs[2]) != (m,):
        raise ValueError(f"ConvTranspose bias {inputs[2]} should be [{m}]")
    return [TensorType(inputs[0].dtype, (x[0], m, *conv_transpose_output(x, w, attrs)))]


def _qconv_transpose(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    """QConvTranspose: ConvTranspose of (x - x_zero_point) and (w - w_zero_point[m]) summed in
    int32, plus an optional int32 bias, requantized as QConv (docs/ir.md "Quantized ops"); 2-D."""
    x, w = static_shape(inputs[0]), static_shape(inputs[1])
    if len(x) != 4 or len(w) != 4:
        raise ValueError(f"QConvTranspose wants X and W of rank 4, got {inputs[0]} and {inputs[1]}")
    if inputs[0].dtype not in QUANT_DTYPES or inputs[1].dtype not in QUANT_DTYPES:
        raise ValueError(f"QConvTranspose wants i8/u8 X and W, got {inputs[0]} and {inputs[1]}")
    (y,) = _conv_transpose([TensorType(DType.f32, x), TensorType(DType.f32, w)], attrs)
    m = int(y.shape[1])
    if len(inputs) == 3 and (inputs[2].dtype != DType.i32 or static_shape(inputs[2]) != (m,)):
        raise ValueError(f"QConvTranspose bias {inputs[2]} should be i32 [{m}]")
    out = _check_requant(attrs, inputs[0].dtype.value, inputs[1].dtype.value, m)
    return [TensorType(out, tuple(y.shape))]


def _lp_pool(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = inputs[0].shape
    if len(x) != 4:
        raise ValueError(f"LpPool wants rank 4 input, got {inputs[0]}")
    if int(attrs["p"]) < 1:
        raise ValueError(f"LpPool p must be an integer >= 1, got {attrs['p']}")
    (kh, kw), (sh, sw), (pt, pl, pb, pr), (dh, dw) = attrs["kernel"], attrs["strides"], attrs["pads"], attrs["dilations"]
    oh = pool_output_dim(x[2], kh, sh, pt, pb, dh, attrs["ceil_mode"])
    ow = pool_output_dim(x[3], kw, sw, pl, pr, dw, attrs["ceil_mode"])
    return [TensorType(inputs[0].dtype, (x[0], x[1], oh, ow))]


CONVT_OP_DEFS = [
    OpDef("ConvTranspose", ("dilations", "group", "pads", "strides"), 2, 3, _conv_transpose),
    # (sum over the window of |x|^p)^(1/p); positions outside the input count as 0.
    OpDef("QConvTranspose", ("dilations", "group", "pads", "strides", *REQUANT_ATTRS), 2, 3, _qconv_transpose,
          dtypes=QUANT_DTYPES),
    OpDef("LpPool", ("ceil_mode", "dilations", "kernel", "p", "pads", "strides"), 1, 1, _lp_pool),
]
