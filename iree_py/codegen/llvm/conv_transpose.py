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

N, C and the spatial dims may be symbolic (one builder for both, docs/dynamic_shapes.md §3): the
grid's batch axis, the binding lengths and the loop bounds are then Exprs over the push constants,
and the same Exprs feed the dispatch guard.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (F32, I32, I64, as_index, const_i64, for_range, load_f32, max_index,
                                         min_index, splat, static_shape, store_f32)
from iree_py.codegen.llvm.copy_common import fail_unless
from iree_py.codegen.llvm.dims import begin_dynamic_kernel, product
from iree_py.ir.ops.conv import conv_transpose_output
from iree_py.ir.symbols import Expr, dim
from iree_py.ir.types import Dim, DType

# A symbolic output row longer than this fails the dispatch: the column bounds are computed in i32
# (no 64-bit division on 32-bit targets), which holds for rows up to about 2**31.
MAX_SYMBOLIC_ROW = 1 << 30


def _i32(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


def _lift(values, fill: int) -> tuple[int, ...]:
    """Spatial attribute values padded in front to three axes."""
    values = tuple(int(v) for v in values)
    return (fill,) * (3 - len(values)) + values


def _lift_dims(dims: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """Spatial dims (ints or Exprs) padded in front to three axes of 1."""
    return (1,) * (3 - len(dims)) + tuple(dim(d) for d in dims)


def _check(spec: KernelSpec) -> tuple[tuple[Dim, ...], tuple[int, ...], tuple[Dim, ...], bool]:
    what = f"conv_transpose kernel {spec.name}"
    if len(spec.inputs) not in (2, 3) or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects X, W, optional B and 1 output")
    if any(t.dtype != DType.f32 for t in (*spec.inputs, *spec.outputs)):
        raise CompileError(f"{what}: only f32 is supported, got {[str(t) for t in spec.inputs]}")
    x = tuple(dim(d) for d in spec.inputs[0].shape)
    w = static_shape(spec.inputs[1], what)
    y = tuple(dim(d) for d in spec.outputs[0].shape)
    if not 3 <= len(x) <= 5 or len(w) != len(x) or len(y) != len(x):
        raise ValueError(f"{what}: X {spec.inputs[0]}, W {w}, Y {spec.outputs[0]} must share a rank of 3..5")
    group = int(spec.attrs["group"])
    expected = (x[0], w[1] * group, *conv_transpose_output(x, w, spec.attrs))
    # A symbolic channel count is checked against W before the dispatch (the op's rule); the
    # kernel counts channels from W.
    channels_ok = x[1] == w[0] or isinstance(x[1], Expr)
    if y != expected or not channels_ok or w[0] % group:
        raise ValueError(f"{what}: X {spec.inputs[0]}, W {w}, group {group} give {expected}, not Y {spec.outputs[0]}")
    if len(spec.inputs) == 3 and static_shape(spec.inputs[2], what) != (y[1],):
        raise ValueError(f"{what}: bias {spec.inputs[2]} should be [{y[1]}]")
    return x, w, y, len(spec.inputs) == 3


def column_bounds(b: ir.IRBuilder, tap: ir.Value, width: int | ir.Value, out_width: int | ir.Value, stride: int,
                  dilation: int, pad: int, taps: int) -> tuple[ir.Value, ir.Value]:
    """[lo, hi): the input columns ix whose output column ix * stride - pad + tap * dilation lies in
    [0, out_width). Divisions run on non-negative i32 values (shifted by a multiple of the stride),
    which every target divides without a runtime call. `width` and `out_width` are ints, or i64
    values (out_width at most MAX_SYMBOLIC_ROW)."""
    shift = (max(0, (taps - 1) * dilation - pad) // stride + 1) * stride
    t = b.sub(_i32(pad + shift), b.mul(b.trunc(tap, I32), _i32(dilation)))  # pad - tap * dilation + shift
    last_out = _i32(out_width - 1) if isinstance(out_width, int) else b.trunc(b.sub(out_width, const_i64(1)), I32)
    first = b.sub(b.udiv(b.add(t, _i32(stride - 1)), _i32(stride)), _i32(shift // stride))
    last = b.sub(b.udiv(b.add(t, last_out), _i32(stride)), _i32(shift // stride))
    lo = max_index(b, b.sext(first, I64), const_i64(0))
    hi = min_index(b, b.add(b.sext(last, I64), const_i64(1)), as_index(width))
    return lo, hi


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    """Dims are ints or Exprs (N, C and the spatial dims of X, hence of Y): an int folds to a
    constant, an Expr is computed from the push constants (codegen/llvm/dims.py's
    `dim`), so a static spec compiles to the code it always had."""
    x_shape, w_shape, y_shape, has_bias = _check(spec)
    rank = len(x_shape) - 2
    batch = x_shape[0]
    channels = w_shape[0]
    out_channels = int(y_shape[1])
    group = int(spec.attrs["group"])
    in_per_group, out_per_group = channels // group, out_channels // group
    depth, height, width = _lift_dims(x_shape[2:])
    kd, kh, kw = _lift(w_shape[2:], 1)
    od, oh, ow = _lift_dims(y_shape[2:])
    sd, sh, sw = _lift(spec.attrs["strides"], 1)
    dd, dh, dw = _lift(spec.attrs["dilations"], 1)
    pf, pt, pl = _lift(list(spec.attrs["pads"])[:rank], 0)

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    # Every dim up front, in the entry block (an Expr's value must dominate all its uses).
    depth_v, height_v, od_v, oh_v = dk.dim(depth), dk.dim(height), dk.dim(od), dk.dim(oh)
    plane_v, in_plane_v = dk.dim(product([od, oh, ow])), dk.dim(product([depth, height, width]))
    width_arg = width if isinstance(width, int) else dk.dim(width)
    ow_arg = ow if isinstance(ow, int) else dk.dim(ow)
    width_v, ow_v = as_index(width_arg), as_index(ow_arg)
    if not isinstance(ow_arg, int):
        fail_unless(dk, b.icmp_unsigned("<=", ow_arg, const_i64(MAX_SYMBOLIC_ROW)), "row_width")
    src, weights = dk.binding(0), dk.binding(1)
    bias = dk.binding(2) if has_bias else None
    dst = dk.binding(3 if has_bias else 2)
    m = dk.workgroup_id_index(0)
    n = dk.workgroup_id_index(1)
    g = b.zext(b.udiv(b.trunc(m, I32), _i32(out_per_group)), I64)
    m_in_group = b.sub(m, b.mul(g, const_i64(out_per_group)))
    out_base = b.mul(b.add(b.mul(n, const_i64(out_channels)), m), plane_v)

    start = load_f32(b, bias, m) if bias is not None else splat(0.0, F32)
    with for_range(b, 0, plane_v, name="fill") as i:
        store_f32(b, start, dst, b.add(out_base, i))

    with for_range(b, 0, in_per_group, name="c") as cg:
        c = b.add(b.mul(g, const_i64(in_per_group)), cg)
        in_base = b.mul(b.add(b.mul(n, const_i64(channels)), c), in_plane_v)
        w_base = b.mul(b.add(b.mul(c, const_i64(out_per_group)), m_in_group), const_i64(kd * kh * kw))
        with for_range(b, 0, depth_v, name="iz") as iz, for_range(b, 0, kd, name="kz") as tz:
            oz = b.add(b.sub(b.mul(iz, const_i64(sd)), const_i64(pf)), b.mul(tz, const_i64(dd)))
            with b.if_then(b.icmp_unsigned("<", oz, od_v)):
                with for_range(b, 0, height_v, name="iy") as iy, for_range(b, 0, kh, name="ky") as ty:
                    oy = b.add(b.sub(b.mul(iy, const_i64(sh)), const_i64(pt)), b.mul(ty, const_i64(dh)))
                    with b.if_then(b.icmp_unsigned("<", oy, oh_v)):
                        row_in = b.add(in_base, b.mul(b.add(b.mul(iz, height_v), iy), width_v))
                        row_out = b.add(out_base, b.mul(b.add(b.mul(oz, oh_v), oy), ow_v))
                        tap_row = b.add(w_base, b.mul(b.add(b.mul(tz, const_i64(kh)), ty), const_i64(kw)))
                        with for_range(b, 0, kw, name="kx") as tx:
                            wv = load_f32(b, weights, b.add(tap_row, tx))
                            lo, hi = column_bounds(b, tx, width_arg, ow_arg, sw, dw, pl, kw)
                            shift = b.sub(b.mul(tx, const_i64(dw)), const_i64(pl))
                            out_row = b.add(row_out, shift)
                            with for_range(b, lo, hi, name="ix") as ix:
                                at = b.add(out_row, b.mul(ix, const_i64(sw)))
                                product_v = b.fmul(wv, load_f32(b, src, b.add(row_in, ix)))
                                store_f32(b, b.fadd(load_f32(b, dst, at), product_v), dst, at)
    dk.finish()
    return dk.info(workgroup_count=(out_channels, batch, 1))
