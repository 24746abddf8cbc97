"""The "qdwconv" kernel: depthwise QConv (group = C = M: one input channel per output channel).

Structure (all sizes static):
  grid      y = channel m, z = batch n: one workgroup per channel plane.
  plane     (stack, i16) the input plane minus x_zp (an attribute, or a binding: ConvInteger), with
            the padding around it stored as 0: the padded taps then add nothing, as in the reference
            (whose padding equals x_zp).
  body      per output row, a loop over the output columns whose body is the whole window
            (KH × KW taps unrolled, weights w - w_zp[m] held in registers), + bias[m], requantized
            and stored: LLVM vectorizes it along the columns.
The int32 sums are the reference's (qconv.py) term for term, so outputs are bit-identical.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import I32, begin_kernel, const_i64, entry_alloca, for_range, static_shape
from iree_py.codegen.llvm.requant import check_q_operands, i32, load_q, requantize_and_store, zero_point
from iree_py.ir.opdef import pool_output_size

I16 = ir.IntType(16)
PLANE_BYTES = 65536   # stack budget of the padded i16 plane; larger planes keep the qconv kernel


def padded_plane(h: int, w: int, pads: tuple[int, ...]) -> tuple[int, int]:
    pt, pl, pb, pr = pads
    return h + pt + pb, w + pl + pr


def fits(x_shape: tuple[int, ...], w_shape: tuple[int, ...], group: int, pads: tuple[int, ...]) -> bool:
    """A depthwise conv (multiplier 1) whose padded plane fits the stack budget."""
    n, c, h, w = x_shape
    m, cg = w_shape[0], w_shape[1]
    hp, wp = padded_plane(h, w, pads)
    return group == c == m and cg == 1 and 2 * hp * wp <= PLANE_BYTES


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    ops = check_q_operands(spec, "qdwconv")
    x_t, w_t, out_t = ops.x, ops.w, ops.out
    n, c, h, w = static_shape(x_t, f"qdwconv kernel {spec.name} input")
    w_shape = static_shape(w_t, f"qdwconv kernel {spec.name} weight")
    a = spec.attrs
    (sh, sw), pads, (dh, dw) = a["strides"], tuple(a["pads"]), a["dilations"]
    if len(w_shape) != 4 or not fits((n, c, h, w), w_shape, int(a["group"]), pads):
        raise ValueError(f"qdwconv kernel {spec.name}: X {x_t}, W {w_t}, group {a['group']} is not a depthwise "
                         f"conv with a plane of at most {PLANE_BYTES} bytes")
    _, _, kh_size, kw_size = w_shape
    pt, pl, pb, pr = pads
    oh_size = pool_output_size(h, kh_size, sh, pt, pb, dh, 0)
    ow_size = pool_output_size(w, kw_size, sw, pl, pr, dw, 0)
    if static_shape(out_t, f"qdwconv kernel {spec.name} output") != (n, c, oh_size, ow_size):
        raise ValueError(f"qdwconv kernel {spec.name}: expected output {(n, c, oh_size, ow_size)}, got {out_t}")
    hp, wp = padded_plane(h, w, pads)

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    x_buf, w_buf = kb.binding(0), kb.binding(1)
    bias_buf = kb.binding(ops.index["bias"]) if ops.has_bias else None
    out_buf = kb.binding(ops.out_binding)
    plane = entry_alloca(b, ir.ArrayType(I16, hp * wp), "plane")
    channel = kb.workgroup_id_index(1)
    batch = kb.workgroup_id_index(2)
    x_zp = zero_point(module, b, kb, ops, a, "x_zero_point", spec.name, const_i64(0))
    w_zp = zero_point(module, b, kb, ops, a, "w_zero_point", spec.name, channel)

    def plane_slot(index: ir.Value) -> ir.Value:
        return b.gep(plane, [const_i64(0), index], inbounds=True)

    with for_range(b, 0, hp * wp, name="zero") as i:
        b.store(ir.Constant(I16, 0), plane_slot(i), align=2)
    x_plane = b.mul(b.add(b.mul(batch, const_i64(c)), channel), const_i64(h * w))
    with for_range(b, 0, h, name="ih") as ih:
        src_row = b.add(x_plane, b.mul(ih, const_i64(w)))
        dst_row = b.add(b.mul(b.add(ih, const_i64(pt)), const_i64(wp)), const_i64(pl))
        with for_range(b, 0, w, name="iw") as iw:
            v = b.sub(load_q(b, x_buf, b.add(src_row, iw), x_t.dtype), x_zp)
            b.store(b.trunc(v, I16), plane_slot(b.add(dst_row, iw)), align=2)

    taps = kh_size * kw_size
    w_row = b.mul(channel, const_i64(taps))
    weights = [b.sub(load_q(b, w_buf, b.add(w_row, const_i64(t)), w_t.dtype), w_zp) for t in range(taps)]
    out_plane = b.mul(b.add(b.mul(batch, const_i64(c)), channel), const_i64(oh_size * ow_size))
    with for_range(b, 0, oh_size, name="oh") as oh:
        top = b.mul(oh, const_i64(sh * wp))
        out_row = b.add(out_plane, b.mul(oh, const_i64(ow_size)))
        with for_range(b, 0, ow_size, name="ow") as ow:
            origin = b.add(top, b.mul(ow, const_i64(sw)))
            total = i32(0)
            for ky in range(kh_size):
                for kx in range(kw_size):
                    slot = plane_slot(b.add(origin, const_i64(ky * dh * wp + kx * dw)))
                    tap = b.sext(b.load(slot, typ=I16, align=2), I32)
                    total = b.add(total, b.mul(tap, weights[ky * kw_size + kx]))
            requantize_and_store(b, module, a, total, bias_buf, channel, spec.name, out_buf, b.add(out_row, ow))
    kb.finish()

    lengths = tuple(t.num_bytes for t in spec.inputs) + (out_t.num_bytes,)
    return KernelInfo(spec.name, (1, c, n), (), lengths)

