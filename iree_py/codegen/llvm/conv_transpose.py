"""The "conv_transpose" kernel: ONNX ConvTranspose over NC + 1..3 spatial axes (f32).

Bindings: X[N, C, *in], W[C, M/group, *kernel], optional B[M], Y[N, M, *out]; attrs strides,
dilations, pads [begins..., ends...] (as the ConvTranspose op, docs/ir.md). 1-D and 2-D run as 3-D
with leading size-1 axes.

One workgroup per output plane (m, n), which it owns alone: no atomics. The plane starts as the
bias; then every input pixel of the plane's group adds weight * pixel at each output position its
kernel taps reach, output position = in * stride - pad_begin + tap * dilation. The innermost loop
runs over one input row for one tap: its bounds (the input columns whose output column lands in
the plane) are computed per tap, so the body has no branch; with stride 1 it reads and writes
consecutive elements and LLVM vectorizes it.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (F32, I32, I64, begin_kernel, const_i64, for_range, load_f32, max_index,
                                         min_index, splat, static_shape, store_f32)
from iree_py.ir.ops_convt import conv_transpose_output
from iree_py.ir.types import DType


def _i32(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


def _lift(values, fill: int) -> tuple[int, ...]:
    """Spatial values padded in front to three axes."""
    values = tuple(int(v) for v in values)
    return (fill,) * (3 - len(values)) + values


def _check(spec: KernelSpec) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], bool]:
    what = f"conv_transpose kernel {spec.name}"
    if len(spec.inputs) not in (2, 3) or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects X, W, optional B and 1 output")
    if any(t.dtype != DType.f32 for t in (*spec.inputs, *spec.outputs)):
        raise ValueError(f"{what}: only f32 is supported, got {[str(t) for t in spec.inputs]}")
    x = static_shape(spec.inputs[0], what)
    w = static_shape(spec.inputs[1], what)
    y = static_shape(spec.outputs[0], what)
    if not 3 <= len(x) <= 5 or len(w) != len(x) or len(y) != len(x):
        raise ValueError(f"{what}: X {x}, W {w}, Y {y} must share a rank of 3..5")
    group = int(spec.attrs["group"])
    expected = (x[0], w[1] * group, *conv_transpose_output(x, w, spec.attrs))
    if y != expected or x[1] != w[0] or x[1] % group:
        raise ValueError(f"{what}: X {x}, W {w}, group {group} give {expected}, not Y {y}")
    if len(spec.inputs) == 3 and static_shape(spec.inputs[2], what) != (y[1],):
        raise ValueError(f"{what}: bias {spec.inputs[2]} should be [{y[1]}]")
    return x, w, y, len(spec.inputs) == 3


def column_bounds(b: ir.IRBuilder, tap: ir.Value, width: int, out_width: int, stride: int, dilation: int,
                   pad: int, taps: int) -> tuple[ir.Value, ir.Value]:
    """[lo, hi): the input columns ix whose output column ix * stride - pad + tap * dilation lies in
    [0, out_width). Divisions run on non-negative i32 values (shifted by a multiple of the stride),
    which every target divides without a runtime call."""
    shift = (max(0, (taps - 1) * dilation - pad) // stride + 1) * stride
    t = b.sub(_i32(pad + shift), b.mul(b.trunc(tap, I32), _i32(dilation)))  # pad - tap * dilation + shift
    first = b.sub(b.udiv(b.add(t, _i32(stride - 1)), _i32(stride)), _i32(shift // stride))
    last = b.sub(b.udiv(b.add(t, _i32(out_width - 1)), _i32(stride)), _i32(shift // stride))
    lo = max_index(b, b.sext(first, I64), const_i64(0))
    hi = min_index(b, b.add(b.sext(last, I64), const_i64(1)), const_i64(width))
    return lo, hi


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    x_shape, w_shape, y_shape, has_bias = _check(spec)
    rank = len(x_shape) - 2
    batch, channels = x_shape[:2]
    out_channels = y_shape[1]
    group = int(spec.attrs["group"])
    in_per_group, out_per_group = channels // group, out_channels // group
    depth, height, width = _lift(x_shape[2:], 1)
    kd, kh, kw = _lift(w_shape[2:], 1)
    od, oh, ow = _lift(y_shape[2:], 1)
    sd, sh, sw = _lift(spec.attrs["strides"], 1)
    dd, dh, dw = _lift(spec.attrs["dilations"], 1)
    pf, pt, pl = _lift(list(spec.attrs["pads"])[:rank], 0)
    plane = od * oh * ow

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, weights = kb.binding(0), kb.binding(1)
    bias = kb.binding(2) if has_bias else None
    dst = kb.binding(3 if has_bias else 2)
    m = kb.workgroup_id_index(0)
    n = kb.workgroup_id_index(1)
    g = b.zext(b.udiv(b.trunc(m, I32), _i32(out_per_group)), I64)
    m_in_group = b.sub(m, b.mul(g, const_i64(out_per_group)))
    out_base = b.mul(b.add(b.mul(n, const_i64(out_channels)), m), const_i64(plane))

    start = load_f32(b, bias, m) if bias is not None else splat(0.0, F32)
    with for_range(b, 0, plane, name="fill") as i:
        store_f32(b, start, dst, b.add(out_base, i))

    with for_range(b, 0, in_per_group, name="c") as cg:
        c = b.add(b.mul(g, const_i64(in_per_group)), cg)
        in_base = b.mul(b.add(b.mul(n, const_i64(channels)), c), const_i64(depth * height * width))
        w_base = b.mul(b.add(b.mul(c, const_i64(out_per_group)), m_in_group), const_i64(kd * kh * kw))
        with for_range(b, 0, depth, name="iz") as iz, for_range(b, 0, kd, name="kz") as tz:
            oz = b.add(b.sub(b.mul(iz, const_i64(sd)), const_i64(pf)), b.mul(tz, const_i64(dd)))
            with b.if_then(b.icmp_unsigned("<", oz, const_i64(od))):
                with for_range(b, 0, height, name="iy") as iy, for_range(b, 0, kh, name="ky") as ty:
                    oy = b.add(b.sub(b.mul(iy, const_i64(sh)), const_i64(pt)), b.mul(ty, const_i64(dh)))
                    with b.if_then(b.icmp_unsigned("<", oy, const_i64(oh))):
                        row_in = b.add(in_base, b.mul(b.add(b.mul(iz, const_i64(height)), iy), const_i64(width)))
                        row_out = b.add(out_base, b.mul(b.add(b.mul(oz, const_i64(oh)), oy), const_i64(ow)))
                        tap_row = b.add(w_base, b.mul(b.add(b.mul(tz, const_i64(kh)), ty), const_i64(kw)))
                        with for_range(b, 0, kw, name="kx") as tx:
                            wv = load_f32(b, weights, b.add(tap_row, tx))
                            lo, hi = column_bounds(b, tx, width, ow, sw, dw, pl, kw)
                            shift = b.sub(b.mul(tx, const_i64(dw)), const_i64(pl))
                            out_row = b.add(row_out, shift)
                            with for_range(b, lo, hi, name="ix") as ix:
                                at = b.add(out_row, b.mul(ix, const_i64(sw)))
                                product = b.fmul(wv, load_f32(b, src, b.add(row_in, ix)))
                                store_f32(b, b.fadd(load_f32(b, dst, at), product), dst, at)
    kb.finish()
    sizes = tuple(t.num_bytes for t in (*spec.inputs, *spec.outputs))
    return KernelInfo(spec.name, (out_channels, batch, 1), (), sizes)
