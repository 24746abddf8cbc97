"""The shape of a conv2d kernel (read from its KernelSpec) and helpers both conv2d code paths
share: the interior rows/columns, the valid kernel-tap range of an output pixel.

N, H, W (and so OH, OW) are ints or Exprs (docs/dynamic_shapes.md §3); the channels, the kernel,
strides, pads, dilations and group are static ints. The weight (input 1) is either the model's
W[M, C/group, KH, KW] or, when the spec says attrs["weight_layout"] == "m_blocked" (the compiler
packs a weight only when it picks the channel path, kernel_plan.py), the packed
W'[group * MB, KH, KW, C/group, V] with V = attrs["weight_lanes"] (weight_packing.py).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm.dims import Agreements, product
from iree_py.codegen.llvm.epilogue import i64, imax, imin
from iree_py.codegen.llvm.weight_packing import M_BLOCKED, m_blocked_shape
from iree_py.ir.symbols import Expr, call, dim
from iree_py.ir.types import Dim, DType


@dataclass(frozen=True)
class ConvShape:
    n: Dim
    c: int
    h: Dim
    w: Dim
    m: int
    cg: int        # input channels per group
    kh: int
    kw: int
    oh: Dim
    ow: Dim
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

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in (self.n, self.h, self.w, self.oh, self.ow))

    def interior_columns(self) -> tuple[Dim, Dim]:
        """[lo, hi): output columns whose every kernel column reads inside the image."""
        return _interior(self.ow, self.w, self.kw, self.sw, self.pl, self.dw)

    def interior_rows(self) -> tuple[Dim, Dim]:
        """[lo, hi): output rows whose every kernel row reads inside the image."""
        return _interior(self.oh, self.h, self.kh, self.sh, self.pt, self.dh)


def _interior(out: Dim, size: Dim, k: int, stride: int, pad: int, dilation: int) -> tuple[Dim, Dim]:
    """Ints for int sizes, else Exprs. When the last valid start is negative, floordiv(last) + 1
    <= 0, so hi = lo (no interior)."""
    lo = dim(call("min", out, -(-pad // stride)))
    last = dim(Expr.of(size) - 1 + pad - (k - 1) * dilation)
    hi = dim(call("max", lo, call("min", out, call("floordiv", last, stride) + 1)))
    return lo, hi


def _ints(attrs: dict, name: str, default: tuple[int, ...], kernel: str) -> tuple[int, ...]:
    raw = attrs.get(name, default)
    if any(isinstance(v, Expr) for v in raw):
        raise CompileError(f"conv2d {kernel}: attribute {name} must be static ints, got {raw}")
    value = tuple(int(v) for v in raw)
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


def conv_shape(spec: KernelSpec, agree: Agreements | None = None) -> ConvShape:
    """The conv's shape. Output dims that the symbols decide are checked through `agree` (when given:
    the kernel emits the checks; the plan step needs none)."""
    what = f"conv2d {spec.name}"
    if len(spec.inputs) < 2 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expected inputs X, W (+ B, epilogue operands) and one "
                         f"output, got {len(spec.inputs)} inputs and {len(spec.outputs)} outputs")
    xt, wtt, yt = spec.inputs[0], spec.inputs[1], spec.outputs[0]
    if any(t.dtype != DType.f32 for t in (xt, wtt, yt)):
        raise CompileError(f"{what}: only f32 is supported, got {xt}, {wtt} -> {yt}")
    x, wt, y = (tuple(dim(d) for d in t.shape) for t in (xt, wtt, yt))
    if len(x) != 4 or len(y) != 4:
        raise ValueError(f"{what}: X and Y must be 4-D, got {x}, {y}")
    symbolic = not (xt.is_static and yt.is_static)
    if not wtt.is_static or not isinstance(x[1], int) or not isinstance(y[1], int):
        raise CompileError(f"{what}: channels and the weight must be static, got X {xt}, W {wtt}, Y {yt}")
    sh, sw = _ints(spec.attrs, "strides", (1, 1), spec.name)
    pt, pl, pb, pr = _ints(spec.attrs, "pads", (0, 0, 0, 0), spec.name)
    dh, dw = _ints(spec.attrs, "dilations", (1, 1), spec.name)
    group = int(spec.attrs.get("group", 1))
    if min(sh, sw, dh, dw) < 1 or min(pt, pl, pb, pr) < 0:
        raise ValueError(f"{what}: strides and dilations must be >= 1 and pads >= 0, got {sh, sw}, "
                         f"{dh, dw}, {pt, pl, pb, pr}")
    n, c, h, w = x
    if group < 1 or c % group:
        raise ValueError(f"{what}: X has {c} channels, not divisible by group {group}")
    (m, cg, kh, kw), lanes = _weight_dims(spec, wt, y[1], c // group, group)
    if c % group or m % group or c // group != cg:
        raise ValueError(f"{what}: X has {c} channels, W is {wt}, group {group}: "
                         f"expected C/group == W.shape[1] and M divisible by group")
    oh = dim(call("floordiv", Expr.of(h) + pt + pb - dh * (kh - 1) - 1, sh) + 1)
    ow = dim(call("floordiv", Expr.of(w) + pl + pr - dw * (kw - 1) - 1, sw) + 1)
    if not symbolic and y != (n, m, oh, ow):
        raise ValueError(f"{what}: output is {y}, expected {(n, m, oh, ow)}")
    agree = agree if agree is not None else Agreements(what)
    for axis, (got, want) in enumerate(zip(y, (n, m, oh, ow))):
        agree.equal(got, want, f"output dim {axis}")
    operands = {op.operand for op in spec.epilogue if op.operand is not None}
    has_bias = len(spec.inputs) >= 3 and 2 not in operands
    if has_bias and spec.inputs[2].element_count != m:
        raise ValueError(f"{what}: bias (input 2) has {spec.inputs[2].element_count} "
                         f"elements, expected {m}")
    return ConvShape(n, c, h, w, m, cg, kh, kw, oh, ow, sh, sw, pt, pl, dh, dw, group, has_bias, lanes)


def pointwise_as_one_row(s: ConvShape) -> ConvShape:
    """A 1×1 stride-1 unpadded conv is a matmul over pixels: with each image seen as one row of
    H·W pixels (the same memory), every tile is interior and spans row ends. Other convs: `s`."""
    if (s.kh, s.kw, s.sh, s.sw, s.pt, s.pl) != (1, 1, 1, 1, 0, 0) or (s.oh, s.ow) != (s.h, s.w):
        return s
    pixels = product((s.h, s.w))
    return dataclasses.replace(s, h=1, w=pixels, oh=1, ow=pixels)


def valid_range(b: ir.IRBuilder, start: ir.Value, size: int, extent: int | ir.Value, dilation: int
                ) -> tuple[ir.Value, ir.Value]:
    """[lo, hi) of kernel taps k < size with 0 <= start + k * dilation < extent (may be empty;
    `extent` a known int or a run-time value). sdiv truncates toward zero; the clamps make that
    match the floor/ceil it stands for."""
    lo = imax(b, i64(0), b.sdiv(b.add(b.neg(start), i64(dilation - 1)), i64(dilation)))
    reach = i64(extent - 1 + dilation) if isinstance(extent, int) else b.add(extent, i64(dilation - 1))
    hi = imin(b, i64(size), imax(b, i64(0), b.sdiv(b.sub(reach, start), i64(dilation))))
    return lo, hi
