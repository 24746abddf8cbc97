"""The "qconv" kernel: QConv over NCHW, i8/u8 in, int32 accumulation, requantized i8/u8 out
(docs/ir.md, "Quantized ops"; the requantization is requant.py's).

Structure (all sizes static):
  grid      x = output row oh × tile of up to OW_TILE output columns, y = output channel m, z = batch n.
  body      an int32 accumulator row of the tile's width (stack). For every input channel of m's
            group and every kernel row kh whose input row lies inside the input, and for every kernel
            column kw (unrolled), the output columns whose input column lies inside the input form a
            range known at compile time: acc[ow] += (x[.., ow*sw + kw*dw - pl] - x_zp) * (w - w_zp[m])
            is a plain loop over that range (i8 loads widened to i32: LLVM vectorizes it). Padding
            is skipped, which is exact because padded inputs equal the zero point.
  store     acc + bias[m], requantized (per-channel multiplier/shift or scale), clamped, one byte.
Depthwise convolutions (one input channel per group) take the same path: the vectorized loop is
along the output width, not over channels.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (I32, begin_kernel, const_i64, entry_alloca, for_range,
                                         max_index, min_index, static_shape)
from iree_py.codegen.llvm.requant import (acc_slot, check_q_operands, i32, load_q, per_channel,
                                          requantize_and_store)
from iree_py.ir.opdef import pool_output_size

OW_TILE = 128


def valid_columns(kw: int, width: int, out_width: int, stride: int, pad_left: int, dilation: int) -> tuple[int, int]:
    """[lo, hi): output columns whose input column ow*stride - pad_left + kw*dilation is in [0, width)."""
    offset = kw * dilation - pad_left
    lo = max(0, -(-(-offset) // stride))
    hi = min(out_width, (width - 1 - offset) // stride + 1) if width - 1 - offset >= 0 else 0
    return lo, max(lo, hi)


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    x_t, w_t, out_t, has_bias = check_q_operands(spec, "qconv")
    n, c, h, w = static_shape(x_t, f"qconv kernel {spec.name} input")
    m, cg, kh_size, kw_size = static_shape(w_t, f"qconv kernel {spec.name} weight")
    a = spec.attrs
    group = int(a["group"])
    (sh, sw), (pt, pl, pb, pr), (dh, dw) = a["strides"], a["pads"], a["dilations"]
    oh_size = pool_output_size(h, kh_size, sh, pt, pb, dh, 0)
    ow_size = pool_output_size(w, kw_size, sw, pl, pr, dw, 0)
    out_shape = static_shape(out_t, f"qconv kernel {spec.name} output")
    if c != cg * group or m % group or out_shape != (n, m, oh_size, ow_size):
        raise ValueError(f"qconv kernel {spec.name}: X {x_t}, W {w_t}, group {group} do not give output {out_t}")
    mg = m // group
    tile = min(ow_size, OW_TILE)
    tiles = -(-ow_size // tile)

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    x_buf, w_buf = kb.binding(0), kb.binding(1)
    bias_buf = kb.binding(2) if has_bias else None
    out_buf = kb.binding(len(spec.inputs))
    acc = entry_alloca(b, ir.ArrayType(I32, tile), "acc")

    row_tile = kb.workgroup_id_index(0)
    oh = b.udiv(row_tile, const_i64(tiles))
    ow0 = b.mul(b.urem(row_tile, const_i64(tiles)), const_i64(tile))
    ow_end = min_index(b, b.add(ow0, const_i64(tile)), const_i64(ow_size))
    mo = kb.workgroup_id_index(1)
    batch = kb.workgroup_id_index(2)
    first_channel = b.mul(b.udiv(mo, const_i64(mg)), const_i64(cg))
    x_zp = i32(int(a["x_zero_point"]))
    w_zp = per_channel(module, b, f"{spec.name}.w_zero_point", list(a["w_zero_point"]), mo)

    with for_range(b, 0, tile, name="zero") as j:
        b.store(i32(0), acc_slot(b, acc, j), align=4)
    ih0 = b.sub(b.mul(oh, const_i64(sh)), const_i64(pt))
    with for_range(b, 0, cg, name="c") as ci:
        plane = b.add(b.mul(batch, const_i64(c)), b.add(first_channel, ci))
        with for_range(b, 0, kh_size, name="kh") as kh:
            ih = b.add(ih0, b.mul(kh, const_i64(dh)))
            with b.if_then(b.icmp_unsigned("<", ih, const_i64(h))):
                x_row = b.mul(b.add(b.mul(plane, const_i64(h)), ih), const_i64(w))
                w_row = b.mul(b.add(b.mul(b.add(b.mul(mo, const_i64(cg)), ci), const_i64(kh_size)), kh),
                              const_i64(kw_size))
                for kw in range(kw_size):
                    lo_kw, hi_kw = valid_columns(kw, w, ow_size, sw, pl, dw)
                    if lo_kw >= hi_kw:
                        continue
                    weight = b.sub(load_q(b, w_buf, b.add(w_row, const_i64(kw)), w_t.dtype), w_zp)
                    lo = max_index(b, ow0, const_i64(lo_kw))
                    hi = min_index(b, ow_end, const_i64(hi_kw))
                    x_base = b.add(x_row, const_i64(kw * dw - pl))
                    with for_range(b, lo, hi, name=f"ow{kw}") as ow:
                        xv = b.sub(load_q(b, x_buf, b.add(x_base, b.mul(ow, const_i64(sw))), x_t.dtype), x_zp)
                        slot = acc_slot(b, acc, b.sub(ow, ow0))
                        b.store(b.add(b.load(slot, typ=I32, align=4), b.mul(xv, weight)), slot, align=4)

    out_row = b.mul(b.add(b.mul(b.add(b.mul(batch, const_i64(m)), mo), const_i64(oh_size)), oh), const_i64(ow_size))
    with for_range(b, ow0, ow_end, name="store") as ow:
        total = b.load(acc_slot(b, acc, b.sub(ow, ow0)), typ=I32, align=4)
        requantize_and_store(b, module, a, total, bias_buf, mo, spec.name, out_buf, b.add(out_row, ow))
    kb.finish()

    lengths = tuple(t.num_bytes for t in spec.inputs) + (out_t.num_bytes,)
    return KernelInfo(spec.name, (oh_size * tiles, m, n), (), lengths)
