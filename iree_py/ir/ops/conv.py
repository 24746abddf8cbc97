"""Conv (2-D, grouped), ConvTranspose (1 to 3 spatial axes) and QConvTranspose: shape rules and numpy
references, and the window helpers the pooling and quantized references share.

Conv: X[N, C, H, W], W[M, C/group, kH, kW] (static), optional B[M]; pads [top, left, bottom, right].
ConvTranspose: X[N, C, *spatial], W[C, M/group, *kernel], optional B[M]. Along each axis the full
transposed result has (in - 1) * stride + (kernel - 1) * dilation + 1 positions; pads [begins...,
ends...] crop it (a negative end pad extends it with positions no input reaches: bias only). The
ONNX frontend folds output_padding, output_shape and auto_pad into pads. N, C and the spatial dims
of X may be symbolic (W, B, the attributes stay static): C is checked against W at run time, and an
output axis that may be cropped to nothing gets a run-time check. QConvTranspose is its int8/uint8
twin with the requantization attributes of the quantized ops (quantized.py).
"""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from iree_py.ir.dim_checks import at_least, require_equal
from iree_py.ir.opdef import Kernel, OpDef, pool_output_dim, pool_output_size, static_shape
from iree_py.ir.ops.quantized import QUANT_DTYPES, REQUANT_ATTRS, _check_requant, _requantize
from iree_py.ir.quant_math import wrap_i32
from iree_py.ir.symbols import Expr, dim, dim_text
from iree_py.ir.types import Dim, DType, TensorType


def _static_operand(t: TensorType, what: str) -> tuple[int, ...]:
    """An operand that must be static (weights): ValueError naming it otherwise."""
    if not t.is_static:
        raise ValueError(f"{what} {t} must have static dims")
    return tuple(int(d) for d in t.shape)


def _conv(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x, w = inputs[0].shape, _static_operand(inputs[1], "Conv weights")
    if len(x) != 4 or len(w) != 4:
        raise ValueError(f"Conv wants X rank 4 and W rank 4, got {inputs[0]} and {inputs[1]}")
    group = attrs["group"]
    try:
        require_equal(x[1], w[1] * group, "Conv input channels")
    except ValueError:
        raise ValueError(f"input channels {x[1]} != weight channels {w[1]} x group {group}") from None
    if w[0] % group:
        raise ValueError(f"output channels {w[0]} not divisible by group {group}")
    if len(inputs) == 3 and inputs[2].shape != (w[0],):
        raise ValueError(f"bias {inputs[2]} should be [{w[0]}]")
    (sh, sw), (pt, pl, pb, pr), (dh, dw) = attrs["strides"], attrs["pads"], attrs["dilations"]
    oh = pool_output_dim(x[2], w[2], sh, pt, pb, dh, 0)
    ow = pool_output_dim(x[3], w[3], sw, pl, pr, dw, 0)
    return [TensorType(inputs[0].dtype, (x[0], w[0], oh, ow))]


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


# --- numpy reference -------------------------------------------------------------------------------

def _pad_nchw(x: np.ndarray, pads: list[int], value: float) -> np.ndarray:
    top, left, bottom, right = pads
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)


def _windows(x: np.ndarray, kernel: tuple[int, int], strides: list[int], dilations: list[int],
             out_hw: tuple[int, int]) -> np.ndarray:
    """[N, C, OH, OW, KH, KW] view of the windows of padded x (x may be extended by the caller)."""
    kh, kw = kernel
    oh, ow = out_hw
    n, c = x.shape[:2]
    sn, sc, sh, sw = x.strides
    return np.lib.stride_tricks.as_strided(
        x, (n, c, oh, ow, kh, kw),
        (sn, sc, sh * strides[0], sw * strides[1], sh * dilations[0], sw * dilations[1]),
        writeable=False)


def conv(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x, w = ins[0], ins[1]
    group = attrs["group"]
    m, cg, kh, kw = w.shape
    pads, strides, dil = attrs["pads"], attrs["strides"], attrs["dilations"]
    oh = pool_output_size(x.shape[2], kh, strides[0], pads[0], pads[2], dil[0], 0)
    ow = pool_output_size(x.shape[3], kw, strides[1], pads[1], pads[3], dil[1], 0)
    xp = np.ascontiguousarray(_pad_nchw(x.astype(np.float64), pads, 0.0))
    win = _windows(xp, (kh, kw), strides, dil, (oh, ow))  # N, C, OH, OW, KH, KW
    mg = m // group
    outs = []
    for g in range(group):
        wg = w[g * mg:(g + 1) * mg].astype(np.float64)
        outs.append(np.einsum("nchwij,mcij->nmhw", win[:, g * cg:(g + 1) * cg], wg))
    y = np.concatenate(outs, axis=1)
    if len(ins) == 3:
        y = y + ins[2].astype(np.float64).reshape(1, m, 1, 1)
    return y.astype(x.dtype)


def _scatter(x: np.ndarray, w: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """Scatter each input pixel times each kernel tap into the full result, then crop by pads (f64)."""
    rank = x.ndim - 2
    group = int(attrs["group"])
    strides, dilations, pads = attrs["strides"], attrs["dilations"], attrs["pads"]
    n, c = x.shape[:2]
    cg, mg = c // group, w.shape[1]
    full = [conv_transpose_full_size(x.shape[2 + a], w.shape[2 + a], strides[a], dilations[a]) for a in range(rank)]
    extra = [max(0, -pads[rank + a]) for a in range(rank)]  # negative end pads extend the result
    y = np.zeros((n, mg * group, *(f + e for f, e in zip(full, extra))))
    for g in range(group):
        xg = x[:, g * cg:(g + 1) * cg]
        for taps in itertools.product(*(range(k) for k in w.shape[2:])):
            contrib = np.einsum("nc...,cm->nm...", xg, w[g * cg:(g + 1) * cg, :, *taps])
            where = tuple(slice(t * d, t * d + (size - 1) * s + 1, s)
                          for t, d, s, size in zip(taps, dilations, strides, x.shape[2:]))
            y[(slice(None), slice(g * mg, (g + 1) * mg), *where)] += contrib
    crop = tuple(slice(pads[a], pads[a] + full[a] + extra[a] - pads[a] - max(0, pads[rank + a]))
                 for a in range(rank))
    return y[(slice(None), slice(None), *crop)]


def conv_transpose(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    y = _scatter(ins[0].astype(np.float64), ins[1].astype(np.float64), attrs)
    if len(ins) == 3:
        y = y + ins[2].astype(np.float64).reshape(1, -1, *([1] * (y.ndim - 2)))
    return y.astype(ins[0].dtype)


def qconv_transpose(ins: list[np.ndarray], a: dict[str, Any]) -> np.ndarray:
    """Exact: the centered int8 products and their sums stay far below 2**53 in float64."""
    x = ins[0].astype(np.int64) - a["x_zero_point"]
    w = ins[1].astype(np.int64)
    group, mg = int(a["group"]), w.shape[1]
    zero_points = np.broadcast_to(np.asarray(a["w_zero_point"], dtype=np.int64), (mg * group,))
    w_zp = zero_points.reshape(group, 1, mg).repeat(w.shape[0] // group, axis=1).reshape(w.shape[0], mg)
    w = w - w_zp[:, :, None, None]
    acc = np.rint(_scatter(x.astype(np.float64), w.astype(np.float64), a)).astype(np.int64)
    if len(ins) == 3 and ins[2] is not None:
        acc = acc + ins[2].astype(np.int64).reshape(1, -1, 1, 1)
    return _requantize(wrap_i32(acc), a, 1)


OP_DEFS = [
    OpDef("Conv", ("dilations", "group", "pads", "strides"), 2, 3, _conv),
    OpDef("ConvTranspose", ("dilations", "group", "pads", "strides"), 2, 3, _conv_transpose),
    OpDef("QConvTranspose", ("dilations", "group", "pads", "strides", *REQUANT_ATTRS), 2, 3, _qconv_transpose,
          dtypes=QUANT_DTYPES),
]

KERNELS: dict[str, Kernel] = {
    "Conv": conv,
    "ConvTranspose": conv_transpose,
    "QConvTranspose": qconv_transpose,
}
