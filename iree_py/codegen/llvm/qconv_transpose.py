"""The "qconv_transpose" kernel: QConvTranspose over NCHW (2-D), i8/u8 in, int32 accumulation,
requantized i8/u8 out (the requantization is requant.py's, as QConv's).

Bindings: X[N, C, H, W], W[C, M/group, KH, KW], optional i32 B[M], Y[N, M, OH, OW]. One workgroup
per output row (oh, m, n) with an int32 accumulator row on the stack. For every input channel of
m's group and every kernel row whose input row iy = (oh + pad_top - ky * dh) / sh is whole and
inside the input, each kernel column adds (x - x_zp) * (w - w_zp[m]) over the input columns whose
output column lands in the row (conv_transpose.py's bounds; a plain loop LLVM vectorizes for
stride 1). Then each element gets the bias, is requantized, clamped and stored.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import I32, I64, begin_kernel, const_i64, entry_alloca, for_range, static_shape
from iree_py.codegen.llvm.conv_transpose import column_bounds
from iree_py.codegen.llvm.requant import (acc_slot, check_q_operands, i32, load_q, per_channel,
                                          requantize_and_store)
from iree_py.ir.ops.conv import conv_transpose_output

MAX_ROW = 4096  # accumulator row on the stack: 16 KiB at most


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    what = f"qconv_transpose kernel {spec.name}"
    ops = check_q_operands(spec, "qconv_transpose")
    x_t, w_t, out_t, has_bias = ops.x, ops.w, ops.out, ops.has_bias
    if set(ops.index) - {"x", "w", "bias"}:
        raise ValueError(f"{what}: zero points are attributes, not bindings")
    n, channels, height, width = static_shape(x_t, what)
    _, out_per_group, kh, kw = static_shape(w_t, what)
    a = spec.attrs
    group = int(a["group"])
    out_channels = out_per_group * group
    oh_size, ow_size = conv_transpose_output((n, channels, height, width), static_shape(w_t, what), a)
    if static_shape(out_t, what) != (n, out_channels, oh_size, ow_size):
        raise ValueError(f"{what}: output {out_t} should be [{n}, {out_channels}, {oh_size}, {ow_size}]")
    if ow_size > MAX_ROW:
        raise ValueError(f"{what}: output rows of {ow_size} elements exceed the {MAX_ROW} the kernel accumulates")
    in_per_group = channels // group
    (sh, sw), (dh, dw) = (int(s) for s in a["strides"]), (int(d) for d in a["dilations"])
    pt, pl = int(a["pads"][0]), int(a["pads"][1])

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, weights = kb.binding(0), kb.binding(1)
    bias = kb.binding(2) if has_bias else None
    dst = kb.binding(3 if has_bias else 2)
    oh, m, batch = kb.workgroup_id_index(0), kb.workgroup_id_index(1), kb.workgroup_id_index(2)
    g = b.zext(b.udiv(b.trunc(m, I32), i32(out_per_group)), I64)
    m_in_group = b.sub(m, b.mul(g, const_i64(out_per_group)))
    x_zp = i32(int(a["x_zero_point"]))
    w_zp = per_channel(module, b, f"{spec.name}.w_zero_point", list(a["w_zero_point"]), m)

    acc = entry_alloca(b, ir.ArrayType(I32, ow_size), "acc")
    with for_range(b, 0, ow_size, name="zero") as j:
        b.store(i32(0), acc_slot(b, acc, j), align=4)
    with for_range(b, 0, in_per_group, name="c") as cg:
        c = b.add(b.mul(g, const_i64(in_per_group)), cg)
        in_plane = b.mul(b.add(b.mul(batch, const_i64(channels)), c), const_i64(height * width))
        w_base = b.mul(b.add(b.mul(c, const_i64(out_per_group)), m_in_group), const_i64(kh * kw))
        with for_range(b, 0, kh, name="ky") as ky:
            num = b.sub(b.add(oh, const_i64(pt)), b.mul(ky, const_i64(dh)))  # iy * sh when whole
            num32 = b.trunc(num, I32)
            iy = b.zext(b.udiv(num32, i32(sh)), I64)
            whole = b.icmp_unsigned("==", b.urem(num32, i32(sh)), i32(0))
            inside = b.and_(b.icmp_signed(">=", num, const_i64(0)), b.icmp_signed("<", iy, const_i64(height)))
            with b.if_then(b.and_(whole, inside)):
                row_in = b.add(in_plane, b.mul(iy, const_i64(width)))
                with for_range(b, 0, kw, name="kx") as kx:
                    index = b.add(w_base, b.add(b.mul(ky, const_i64(kw)), kx))
                    wv = b.sub(load_q(b, weights, index, w_t.dtype), w_zp)
                    lo, hi = column_bounds(b, kx, width, ow_size, sw, dw, pl, kw)
                    shift = b.sub(b.mul(kx, const_i64(dw)), const_i64(pl))
                    with for_range(b, lo, hi, name="ix") as ix:
                        xv = b.sub(load_q(b, src, b.add(row_in, ix), x_t.dtype), x_zp)
                        slot = acc_slot(b, acc, b.add(b.mul(ix, const_i64(sw)), shift))
                        b.store(b.add(b.load(slot, typ=I32, align=4), b.mul(xv, wv)), slot, align=4)
    out_row = b.mul(b.add(b.mul(b.add(b.mul(batch, const_i64(out_channels)), m), const_i64(oh_size)), oh),
                    const_i64(ow_size))
    with for_range(b, 0, ow_size, name="store") as ow:
        total = b.load(acc_slot(b, acc, ow), typ=I32, align=4)
        requantize_and_store(b, module, a, total, bias, m, spec.name, dst, b.add(out_row, ow))
    kb.finish()
    lengths = tuple(t.num_bytes for t in spec.inputs) + (out_t.num_bytes,)
    return KernelInfo(spec.name, (oh_size, out_channels, n), (), lengths)
