"""The "qconv" kernel: QConv and ConvInteger over NCHW, i8/u8 in, int32 accumulation, requantized
i8/u8 out, or the int32 sums themselves (requant "none": ConvInteger; docs/ir.md, "Quantized ops";
the requantization is requant.py's).

Structure (N, H, W and so OH, OW may be symbolic: each dim is an int or an Expr, folded to a
constant or read from the push constants, as codegen/llvm/dims.py's `dim` does):
  grid      x = output row oh × tile of up to OW_TILE output columns, y = output channel m, z = batch n.
  body      an int32 accumulator row of the tile's width (stack). For every input channel of m's
            group and every kernel row kh whose input row lies inside the input, and for every kernel
            column kw (unrolled), the output columns whose input column lies inside the input form a
            range (known at compile time for a static width): acc[ow] += (x[.., ow*sw + kw*dw - pl] -
            x_zp) * (w - w_zp[m]) is a plain loop over that range (i8 loads widened to i32: LLVM
            vectorizes it). Padding is skipped, which is exact because padded inputs equal the zero
            point.
  store     acc + bias[m], requantized (per-channel multiplier/shift or scale), clamped, one byte; or
            the int32 acc.
Zero points are attributes, or (ConvInteger) bindings read once per workgroup (requant.zero_point).
Depthwise convolutions (one input channel per group) take the same path: the vectorized loop is
along the output width, not over channels.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import I32, as_index, const_i64, entry_alloca, for_range, max_index, min_index
from iree_py.codegen.llvm.dims import DynamicKernel, begin_dynamic_kernel
from iree_py.codegen.llvm.requant import acc_slot, check_q_operands, load_q, requantize_and_store, zero_point
from iree_py.ir.dim_checks import product
from iree_py.ir.opdef import pool_output_dim
from iree_py.ir.symbols import call, dim
from iree_py.ir.types import Dim

OW_TILE = 128


def valid_columns(kw: int, width: int, out_width: int, stride: int, pad_left: int, dilation: int) -> tuple[int, int]:
    """[lo, hi): output columns whose input column ow*stride - pad_left + kw*dilation is in [0, width)."""
    offset = kw * dilation - pad_left
    lo = max(0, -(-(-offset) // stride))
    hi = min(out_width, (width - 1 - offset) // stride + 1) if width - 1 - offset >= 0 else 0
    return lo, max(lo, hi)


def column_range(dk: DynamicKernel, kw: int, width: Dim, out_width: Dim, stride: int, pad_left: int,
                 dilation: int) -> tuple[int, int | ir.Value] | None:
    """valid_columns for dims that may be symbolic: lo is static, hi an int or a run-time value;
    None when the range is empty at compile time."""
    if isinstance(width, int) and isinstance(out_width, int):
        lo, hi = valid_columns(kw, width, out_width, stride, pad_left, dilation)
        return None if lo >= hi else (lo, hi)
    offset = kw * dilation - pad_left
    lo = max(0, -(-(-offset) // stride))
    hi = call("max", call("min", out_width, call("floordiv", dim(width) - (1 + offset), stride) + 1), lo)
    return lo, dk.dim(dim(hi))


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    ops = check_q_operands(spec, "qconv")
    x_t, w_t, out_t = ops.x, ops.w, ops.out
    if x_t.rank != 4 or out_t.rank != 4 or w_t.rank != 4 or not w_t.is_static:
        raise ValueError(f"qconv kernel {spec.name}: wants 4-D X and output and a static 4-D W, got {x_t}, {w_t}, "
                         f"{out_t}")
    n, c, h, w = (dim(d) for d in x_t.shape)
    m, cg, kh_size, kw_size = (int(d) for d in w_t.shape)
    a = spec.attrs
    group = int(a["group"])
    (sh, sw), (pt, pl, pb, pr), (dh, dw) = a["strides"], a["pads"], a["dilations"]
    oh_size = pool_output_dim(h, kh_size, sh, pt, pb, dh, 0)
    ow_size = pool_output_dim(w, kw_size, sw, pl, pr, dw, 0)
    if not isinstance(c, int) or c != cg * group or m % group or tuple(dim(d) for d in out_t.shape) != (
            n, m, oh_size, ow_size):
        raise ValueError(f"qconv kernel {spec.name}: X {x_t}, W {w_t}, group {group} do not give output {out_t}")
    mg = m // group
    tile = min(ow_size, OW_TILE) if isinstance(ow_size, int) else OW_TILE
    tiles = dim(call("ceildiv", ow_size, tile))

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    h_v, w_v, oh_v, ow_v = dk.dim(h), dk.dim(w), dk.dim(oh_size), dk.dim(ow_size)
    columns = [column_range(dk, kw, w, ow_size, sw, pl, dw) for kw in range(kw_size)]   # computed once, up front
    x_buf, w_buf = dk.binding(0), dk.binding(1)
    bias_buf = dk.binding(ops.index["bias"]) if ops.has_bias else None
    out_buf = dk.binding(ops.out_binding)
    acc = entry_alloca(b, ir.ArrayType(I32, tile), "acc")

    row_tile = dk.workgroup_id_index(0)
    tiles_v = dk.dim(tiles)
    oh = b.udiv(row_tile, tiles_v)
    ow0 = b.mul(b.urem(row_tile, tiles_v), const_i64(tile))
    ow_end = min_index(b, b.add(ow0, const_i64(tile)), ow_v)
    mo = dk.workgroup_id_index(1)
    batch = dk.workgroup_id_index(2)
    first_channel = b.mul(b.udiv(mo, const_i64(mg)), const_i64(cg))
    x_zp = zero_point(module, b, dk, ops, a, "x_zero_point", spec.name, const_i64(0))
    w_zp = zero_point(module, b, dk, ops, a, "w_zero_point", spec.name, mo)

    with for_range(b, 0, tile, name="zero") as j:
        b.store(ir.Constant(I32, 0), acc_slot(b, acc, j), align=4)
    ih0 = b.sub(b.mul(oh, const_i64(sh)), const_i64(pt))
    with for_range(b, 0, cg, name="c") as ci:
        plane = b.add(b.mul(batch, const_i64(c)), b.add(first_channel, ci))
        with for_range(b, 0, kh_size, name="kh") as kh:
            ih = b.add(ih0, b.mul(kh, const_i64(dh)))
            with b.if_then(b.icmp_unsigned("<", ih, h_v)):
                x_row = b.mul(b.add(b.mul(plane, h_v), ih), w_v)
                w_row = b.mul(b.add(b.mul(b.add(b.mul(mo, const_i64(cg)), ci), const_i64(kh_size)), kh),
                              const_i64(kw_size))
                for kw in range(kw_size):
                    if columns[kw] is None:
                        continue
                    lo_kw, hi_kw = columns[kw]
                    weight = b.sub(load_q(b, w_buf, b.add(w_row, const_i64(kw)), w_t.dtype), w_zp)
                    lo = max_index(b, ow0, const_i64(lo_kw))
                    hi = min_index(b, ow_end, as_index(hi_kw))
                    x_base = b.add(x_row, const_i64(kw * dw - pl))
                    with for_range(b, lo, hi, name=f"ow{kw}") as ow:
                        xv = b.sub(load_q(b, x_buf, b.add(x_base, b.mul(ow, const_i64(sw))), x_t.dtype), x_zp)
                        slot = acc_slot(b, acc, b.sub(ow, ow0))
                        b.store(b.add(b.load(slot, typ=I32, align=4), b.mul(xv, weight)), slot, align=4)

    out_row = b.mul(b.add(b.mul(b.add(b.mul(batch, const_i64(m)), mo), oh_v), oh), ow_v)
    with for_range(b, ow0, ow_end, name="store") as ow:
        total = b.load(acc_slot(b, acc, b.sub(ow, ow0)), typ=I32, align=4)
        requantize_and_store(b, module, a, total, bias_buf, mo, spec.name, out_buf, b.add(out_row, ow))
    dk.finish()
    return dk.info(workgroup_count=(product([oh_size, tiles]), m, n))
