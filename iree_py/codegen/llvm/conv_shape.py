"""The static shape of a conv2d kernel (read from its KernelSpec) and helpers both conv2d code paths
share: the interior rows/columns, the valid kernel-tap range of an output pixel.

The weight (input 1) is either the model's W[M, C/group, KH, KW] or, when the spec says
attrs["weight_layout"] == "m_blocked", the packed W'[group * MB, KH, KW, C/group, V] with
V = attrs["weight_lanes"] (iree_py/codegen/weight_packing.py).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm.common import static_shape
from iree_py.codegen.llvm.epilogue import i64, imax, imin
from iree_py.codegen.llvm.weight_packing import M_BLOCKED, m_blocked_shape


@dataclass(frozen=True)
class ConvShape:
    n: int
    c: int
    h: int
    w: int
    m: int
    cg: int        # input channels per group
    kh: int
    kw: int
    oh: int
    ow: int
    sh: int
    sw: int
    pt: int
    pl: int
    dh: int
    dw: int
    group: int
    has_bias: bool
    weight_lanes: int = 0  # V of an "m_blocked" packed weight; 0: the weight is W[M, C/g, KH, KW]

    @property
    def mg(self) -> int:
        """Output channels per group."""
        return self.m // self.group

    def interior_columns(self) -> tuple[int, int]:
        """[lo, hi): output columns whose every kernel column reads inside the image."""
        return _interior(self.ow, self.w, self.kw, self.sw, self.pl, self.dw)

    def interior_rows(self) -> tuple[int, int]:
        """[lo, hi): output rows whose every kernel row reads inside the image."""
        return _interior(self.oh, self.h, self.kh, self.sh, self.pt, self.dh)


def _interior(out: int, size: int, k: int, stride: int, pad: int, dilation: int) -> tuple[int, int]:
    lo = min(out, -(-pad // stride))
    last = size - 1 + pad - (k - 1) * dilation
    hi = min(out, last // stride + 1) if last >= 0 else lo
    return lo, max(lo, hi)


def _ints(attrs: dict, name: str, default: tuple[int, ...], kernel: str) -> tuple[int, ...]:
    value = tuple(int(v) for v in attrs.get(name, default))
    if len(value) != len(default):
        raise ValueError(f"conv2d {kernel}: attribute {name} must have {len(default)} values, got {value}")
    return value


def _weight_dims(spec: KernelSpec, wt: tuple[int, ...], m: int, cg: int, group: int
                 ) -> tuple[tuple[int, int, int, int], int]:
    """(M, C/g, KH, KW) of the weight and its packed lane count (0 when not packed)."""
    layout = spec.attrs.get("weight_layout")
    if layout is None:
        if len(wt) != 4:
            raise ValueError(f"conv2d {spec.name}: W must be 4-D, got {wt}")
        return (wt[0], wt[1], wt[2], wt[3]), 0
    if layout != M_BLOCKED:
        raise ValueError(f"conv2d {spec.name}: unknown weight_layout {layout!r}, expected {M_BLOCKED!r}")
    lanes = int(spec.attrs.get("weight_lanes", 0))
    if len(wt) != 5 or lanes < 1:
        raise ValueError(f"conv2d {spec.name}: an {M_BLOCKED} weight is 5-D [g*MB, KH, KW, C/g, V] with "
                         f"attrs weight_lanes = V >= 1, got shape {wt} and weight_lanes {lanes}")
    dims = (m, cg, wt[1], wt[2])
    expected = m_blocked_shape(dims, group, lanes)
    if wt != expected:
        raise ValueError(f"conv2d {spec.name}: packed weight is {wt}, expected {expected} for "
                         f"{m} output channels, {cg} input channels per group, group {group}")
    return dims, lanes


def conv_shape(spec: KernelSpec) -> ConvShape:
    if len(spec.inputs) < 2 or len(spec.outputs) != 1:
        raise ValueError(f"conv2d {spec.name}: expected inputs X, W (+ B, epilogue operands) and one "
                         f"output, got {len(spec.inputs)} inputs and {len(spec.outputs)} outputs")
    x = static_shape(spec.inputs[0], f"conv2d {spec.name} input X")
    wt = static_shape(spec.inputs[1], f"conv2d {spec.name} input W")
    y = static_shape(spec.outputs[0], f"conv2d {spec.name} output")
    if len(x) != 4 or len(y) != 4:
        raise ValueError(f"conv2d {spec.name}: X and Y must be 4-D, got {x}, {y}")
    sh, sw = _ints(spec.attrs, "strides", (1, 1), spec.name)
    pt, pl, pb, pr = _ints(spec.attrs, "pads", (0, 0, 0, 0), spec.name)
    dh, dw = _ints(spec.attrs, "dilations", (1, 1), spec.name)
    group = int(spec.attrs.get("group", 1))
    n, c, h, w = x
    if group < 1 or c % group:
        raise ValueError(f"conv2d {spec.name}: X has {c} channels, not divisible by group {group}")
    (m, cg, kh, kw), lanes = _weight_dims(spec, wt, y[1], c // group, group)
    if c % group or m % group or c // group != cg:
        raise ValueError(f"conv2d {spec.name}: X has {c} channels, W is {wt}, group {group}: "
                         f"expected C/group == W.shape[1] and M divisible by group")
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    if y != (n, m, oh, ow):
        raise ValueError(f"conv2d {spec.name}: output is {y}, expected {(n, m, oh, ow)}")
    operands = {op.operand for op in spec.epilogue if op.operand is not None}
    has_bias = len(spec.inputs) >= 3 and 2 not in operands
    if has_bias and spec.inputs[2].num_elements != m:
        raise ValueError(f"conv2d {spec.name}: bias (input 2) has {spec.inputs[2].num_elements} "
                         f"elements, expected {m}")
    return ConvShape(n, c, h, w, m, cg, kh, kw, oh, ow, sh, sw, pt, pl, dh, dw, group, has_bias, lanes)


def pointwise_as_one_row(s: ConvShape) -> ConvShape:
    """A 1×1 stride-1 unpadded conv is a matmul over pixels: with each image seen as one row of
    H·W pixels (the same memory), every tile is interior and spans row ends. Other convs: `s`."""
    if (s.kh, s.kw, s.sh, s.sw, s.pt, s.pl) != (1, 1, 1, 1, 0, 0) or (s.oh, s.ow) != (s.h, s.w):
        return s
    pixels = s.h * s.w
    return dataclasses.replace(s, h=1, w=pixels, oh=1, ow=pixels)


def valid_range(b: ir.IRBuilder, start: ir.Value, size: int, extent: int, dilation: int
                ) -> tuple[ir.Value, ir.Value]:
    """[lo, hi) of kernel taps k < size with 0 <= start + k * dilation < extent (may be empty).
    sdiv truncates toward zero; the clamps make that match the floor/ceil it stands for."""
    lo = imax(b, i64(0), b.sdiv(b.add(b.neg(start), i64(dilation - 1)), i64(dilation)))
    hi = imin(b, i64(size), imax(b, i64(0), b.sdiv(b.sub(i64(extent - 1 + dilation), start),
                                                     i64(dilation))))
    return lo, hi
