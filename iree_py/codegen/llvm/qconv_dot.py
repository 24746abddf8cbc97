"""The "qconv_dot" kernel: QConv / ConvInteger (one group) as int8 dot products, with the weight
packed at compile time (codegen/llvm/qconv_packing.py: W'[Mp, Kp], k = (kh, kw, c), + w_offset).

Structure (N, H, W and so OH, OW may be symbolic, as in qconv.py; C, M and the kernel are static):
  grid      x = output row oh × tile of T output columns (T a multiple of 4), z = batch n.
  im2col    col[t, k] (stack, T × Kp bytes): the input under tap k of output column ow0 + t,
            x_zp where the tap lies in the padding or k >= K. Filled with x_zp, then the valid
            column range of each (c, kh, kw) copied (ranges known at compile time for a static width).
  sums      when a weight zero point w_zp'[m] (+ w_offset) may be non-zero: S[t] = sum_k col[t, k].
  dot       blocks of 4 columns × 4 output channels: 16 accumulators; per step of 16 bytes of k
            (64 with AVX512-VNNI: attrs dot_bytes), with <step/4 x i32> accumulators,
            acc[t][m] = partial_reduce_add(acc[t][m], ext(col[t, k:k+16]) * ext(W'[m, k:k+16]))
            (`llvm.vector.partial.reduce.add`: one sdot on Arm with dotprod; on x86 with VNNI the
            u8 x i8 vpdpbusd, the input moved to u8 by + 128 in im2col, a u8 weight to i8 by - 128
            when packed; on x86 AVX2 without VNNI vpmaddwd of the bytes widened to i16, exact).
            Reduced to one i32, minus x_zp * (w_sum[m] - Kp * w_zp'[m]) and w_zp'[m] * S[t]
            (qconv_packing.py's identity; x_zp and w_zp attributes or, for ConvInteger, bindings read
            once), into a stack block acc[m, t] (the four columns' sums of one channel by a tree of
            pairwise adds: one vector store).
  store     per output channel, a loop over the tile's columns: + bias[m], requantized, clamped,
            one byte (requant.py), or the int32 (requant "none"), which LLVM vectorizes along the columns.
The int32 result equals qconv.py's modulo 2**32, which is all either keeps: bit-identical outputs.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (I8, I32, as_index, const_i32, const_i64, element_ptr, entry_alloca, for_range,
                                         min_index, static_shape)
from iree_py.codegen.llvm.dims import DynamicKernel, begin_dynamic_kernel
from iree_py.codegen.llvm.qconv import column_range
from iree_py.codegen.llvm.requant import (acc_slot, check_q_operands, constant_table, load_q, requantize_and_store,
                                          zero_point)
from iree_py.codegen.llvm.qconv_packing import DOT_CHANNELS, round_up
from iree_py.ir.dim_checks import product
from iree_py.ir.opdef import pool_output_dim
from iree_py.ir.symbols import call, dim
from iree_py.ir.types import Dim, DType

PIXELS = 4               # output columns per register block
COL_BYTES = 32768        # stack budget of the im2col tile
ACC_BYTES = 32768        # stack budget of the int32 result block

V4I32 = ir.VectorType(I32, 4)
SUM_BYTES = 16           # bytes per step of the pixel sums


def _intrinsic(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    if name in module.globals:
        return module.globals[name]
    return ir.Function(module, ir.FunctionType(ret, args), name=name)


def column_tile(out_width: Dim, k_padded: int, m_padded: int) -> int:
    """Output columns per workgroup: a multiple of PIXELS within both stack budgets (the whole
    budget for a symbolic width)."""
    limit = min(COL_BYTES // k_padded, ACC_BYTES // (4 * m_padded))
    limit = max(PIXELS, limit // PIXELS * PIXELS)
    return min(round_up(out_width, PIXELS), limit) if isinstance(out_width, int) else limit


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    ops = check_q_operands(spec, "qconv_dot")
    x_t, w_t, out_t = ops.x, ops.w, ops.out
    if x_t.rank != 4 or out_t.rank != 4:
        raise ValueError(f"qconv_dot kernel {spec.name}: wants 4-D X and output, got {x_t} -> {out_t}")
    n, c, h, w = (dim(d) for d in x_t.shape)
    a = spec.attrs
    m, cw, kh_size, kw_size = (int(d) for d in a["weight_shape"])
    (sh, sw), (pt, pl, pb, pr), (dh, dw) = a["strides"], a["pads"], a["dilations"]
    oh_size = pool_output_dim(h, kh_size, sh, pt, pb, dh, 0)
    ow_size = pool_output_dim(w, kw_size, sw, pl, pr, dw, 0)
    step = int(a["dot_bytes"])
    mp, kp = round_up(m, DOT_CHANNELS), round_up(cw * kh_size * kw_size, step)
    if int(a["group"]) != 1 or cw != c or static_shape(w_t, f"qconv_dot kernel {spec.name} weight") != (mp, kp):
        raise ValueError(f"qconv_dot kernel {spec.name}: X {x_t}, packed W {w_t} (weight shape {a['weight_shape']}) "
                         f"do not match one group with W'[{mp}, {kp}]")
    if tuple(dim(d) for d in out_t.shape) != (n, m, oh_size, ow_size):
        raise ValueError(f"qconv_dot kernel {spec.name}: expected output {(n, m, oh_size, ow_size)}, got {out_t}")
    tile = column_tile(ow_size, kp, mp)
    tiles = dim(call("ceildiv", ow_size, tile))

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    h_v, w_v, oh_v, ow_v, tiles_v = (dk.dim(d) for d in (h, w, oh_size, ow_size, tiles))
    columns = [column_range(dk, kw, w, ow_size, sw, pl, dw) for kw in range(kw_size)]   # computed once, up front
    x_buf, w_buf = dk.binding(0), dk.binding(1)
    bias_buf = dk.binding(ops.index["bias"]) if ops.has_bias else None
    out_buf = dk.binding(ops.out_binding)
    col = entry_alloca(b, ir.ArrayType(I8, tile * kp), "col")
    acc_block = entry_alloca(b, ir.ArrayType(I32, mp * tile), "acc_block")

    row_tile = dk.workgroup_id_index(0)
    oh = b.udiv(row_tile, tiles_v)
    ow0 = b.mul(b.urem(row_tile, tiles_v), const_i64(tile))
    ow_end = min_index(b, b.add(ow0, const_i64(tile)), ow_v)
    batch = dk.workgroup_id_index(2)
    x_offset, w_offset = int(a["x_offset"]), int(a.get("w_offset", 0))
    x_zp = b.add(zero_point(module, b, dk, ops, a, "x_zero_point", spec.name, const_i64(0)), const_i32(x_offset))
    w_zp = _weight_zero_points(module, b, dk, ops, a, spec.name, m, mp, w_offset)

    _im2col(b, col, x_buf, (batch, oh, ow0, ow_end), (c, h_v, w_v, kh_size, kw_size, kp, tile), columns,
            (sh, sw, pt, pl, dh, dw), x_zp, x_offset)
    sums = None
    if "w_zero_point" in ops.index or any(int(z) + w_offset != 0 for z in a["w_zero_point"]):
        sums = _pixel_sums(module, b, col, kp, tile, signed=a["dot"] != "vpdpbusd" and x_t.dtype == DType.i8)
    _dot_blocks(module, b, col, w_buf, acc_block, (mp, kp, tile, step), a, spec, x_t.dtype, w_t.dtype,
                (x_zp, w_zp, sums))

    out_plane = b.mul(oh_v, ow_v)
    with for_range(b, 0, m, name="m") as mo:
        out_row = b.add(b.mul(b.add(b.mul(batch, const_i64(m)), mo), out_plane), b.mul(oh, ow_v))
        block_row = b.mul(mo, const_i64(tile))
        with for_range(b, ow0, ow_end, name="store") as ow:
            total = b.load(acc_slot(b, acc_block, b.add(block_row, b.sub(ow, ow0))), typ=I32, align=4)
            requantize_and_store(b, module, a, total, bias_buf, mo, spec.name, out_buf, b.add(out_row, ow))
    dk.finish()
    return dk.info(workgroup_count=(product([oh_size, tiles]), 1, n))


def _im2col(b: ir.IRBuilder, col: ir.Value, x_buf: ir.Value, where: tuple, sizes: tuple, columns: list,
            geometry: tuple, x_zp: ir.Value, x_offset: int) -> None:
    """col[t, (kh*KW + kw)*C + c] = x[batch, c, oh*sh - pt + kh*dh, (ow0+t)*sw - pl + kw*dw] + x_offset
    (modulo 256), x_zp (i32, which includes the offset) outside. h, w: i64 values; columns[kw]:
    qconv.column_range's (lo, hi) of each kernel column, None when empty."""
    batch, oh, ow0, ow_end = where
    c, h, w, kh_size, kw_size, kp, tile = sizes
    sh, sw, pt, pl, dh, dw = geometry
    fill = b.trunc(x_zp, I8)
    with for_range(b, 0, tile * kp, name="fill") as i:
        b.store(fill, b.gep(col, [const_i64(0), i], inbounds=True), align=1)
    ih0 = b.sub(b.mul(oh, const_i64(sh)), const_i64(pt))
    with for_range(b, 0, kh_size, name="kh") as kh:
        ih = b.add(ih0, b.mul(kh, const_i64(dh)))
        with b.if_then(b.icmp_unsigned("<", ih, h)):
            with for_range(b, 0, c, name="c") as ci:
                x_row = b.mul(b.add(b.mul(b.add(b.mul(batch, const_i64(c)), ci), h), ih), w)
                k_row = b.add(b.mul(kh, const_i64(kw_size * c)), ci)
                for kw in range(kw_size):
                    if columns[kw] is None:
                        continue
                    lo_kw, hi_kw = columns[kw]
                    lo = b.select(b.icmp_signed(">", ow0, const_i64(lo_kw)), ow0, const_i64(lo_kw))
                    hi = min_index(b, ow_end, as_index(hi_kw))
                    x_base = b.add(x_row, const_i64(kw * dw - pl))
                    k = b.add(k_row, const_i64(kw * c))
                    with for_range(b, lo, hi, name=f"ow{kw}") as ow:
                        v = b.load(element_ptr(b, x_buf, b.add(x_base, b.mul(ow, const_i64(sw))), I8), typ=I8, align=1)
                        v = b.xor(v, ir.Constant(I8, 0x80)) if x_offset == 128 else v
                        slot = b.add(b.mul(b.sub(ow, ow0), const_i64(kp)), k)
                        b.store(v, b.gep(col, [const_i64(0), slot], inbounds=True), align=1)


def _weight_zero_points(module: ir.Module, b: ir.IRBuilder, kb: DynamicKernel, ops, attrs: dict, prefix: str,
                        m: int, mp: int, w_offset: int):
    """channel (i64, < Mp) -> w_zp[channel] + w_offset as i32 (0 for the padding channels >= M): a
    constant, a constant table, or a load from the w_zero_point binding."""
    if "w_zero_point" in ops.index:
        binding, zp_t = kb.binding(ops.index["w_zero_point"]), ops.types["w_zero_point"]
        last = const_i64(int(zp_t.shape[0]) - 1)

        def load(channel: ir.Value) -> ir.Value:
            index = b.select(b.icmp_unsigned("<", channel, last), channel, last)
            return b.add(load_q(b, binding, index, zp_t.dtype), const_i32(w_offset))
        return load
    values = [int(z) + w_offset for z in attrs["w_zero_point"]]
    if len(values) == 1:
        return lambda channel: const_i32(values[0])
    table = constant_table(module, f"{prefix}.w_zero_point", values + [0] * (mp - m), I32)
    return lambda channel: b.load(b.gep(table, [const_i64(0), channel], source_etype=table.value_type), typ=I32,
                                  align=4)


def _pixel_sums(module: ir.Module, b: ir.IRBuilder, col: ir.Value, kp: int, tile: int, signed: bool) -> ir.Value:
    """S[t] = sum_k col[t, k] (bytes as the dot reads them: signed or not) into a stack [T] i32 array."""
    wide_ty = ir.VectorType(I32, SUM_BYTES)
    partial = _intrinsic(module, f"llvm.vector.partial.reduce.add.v4i32.v{SUM_BYTES}i32", V4I32, [V4I32, wide_ty])
    reduce = _intrinsic(module, "llvm.vector.reduce.add.v4i32", I32, [V4I32])
    sums = entry_alloca(b, ir.ArrayType(I32, tile), "pixel_sums")
    running = entry_alloca(b, V4I32, "pixel_sum")
    extend = b.sext if signed else b.zext
    with for_range(b, 0, tile, name="st") as t:
        b.store(ir.Constant(V4I32, [0] * 4), running, align=16)
        with for_range(b, 0, kp, step=SUM_BYTES, name="sk") as k:
            v = b.load(col_ptr(b, col, b.add(b.mul(t, const_i64(kp)), k)), typ=ir.VectorType(I8, SUM_BYTES), align=1)
            b.store(b.call(partial, [b.load(running, typ=V4I32, align=16), extend(v, wide_ty)]), running, align=16)
        b.store(b.call(reduce, [b.load(running, typ=V4I32, align=16)]), acc_slot(b, sums, t), align=4)
    return sums


def _dot_blocks(module: ir.Module, b: ir.IRBuilder, col: ir.Value, w_buf: ir.Value, acc_block: ir.Value,
                sizes: tuple, attrs: dict, spec: KernelSpec, x_dtype, w_dtype, zero_points: tuple) -> None:
    """acc_block[m, t] = sum_k col[t, k] * W'[m, k] - x_zp * (w_sum[m] - Kp * w_zp'[m]) - w_zp'[m] * S[t]
    for all m < Mp, t < T. zero_points: x_zp (i32, with the input offset), w_zp' (channel -> i32,
    with the weight offset) and the pixel sums S (None: every w_zp' is 0)."""
    mp, kp, tile, step = sizes
    x_zp, w_zp, sums = zero_points
    bytes_ty, acc_ty = ir.VectorType(I8, step), ir.VectorType(I32, accumulator_lanes(attrs["dot"], step))
    dot = _dot_step(module, b, attrs["dot"], step, x_dtype, w_dtype)
    weight_sums = _weight_sum_table(module, spec.name, list(attrs["w_sum"]), mp)
    accs = [[entry_alloca(b, acc_ty, f"acc{p}_{q}") for q in range(DOT_CHANNELS)] for p in range(PIXELS)]
    zero = ir.Constant(acc_ty, [0] * acc_ty.count)
    with for_range(b, 0, mp, step=DOT_CHANNELS, name="mb") as m0:
        with for_range(b, 0, tile, step=PIXELS, name="tb") as t0:
            for row in accs:
                for slot in row:
                    b.store(zero, slot, align=16)
            with for_range(b, 0, kp, step=step, name="k") as k:
                xs = [b.load(col_ptr(b, col, b.add(b.mul(b.add(t0, const_i64(p)), const_i64(kp)), k)), typ=bytes_ty,
                             align=1) for p in range(PIXELS)]
                ws = [b.load(element_ptr(b, w_buf, b.add(b.mul(b.add(m0, const_i64(q)), const_i64(kp)), k), I8),
                             typ=bytes_ty, align=1) for q in range(DOT_CHANNELS)]
                for p in range(PIXELS):
                    for q in range(DOT_CHANNELS):
                        slot = accs[p][q]
                        b.store(dot(b.load(slot, typ=acc_ty, align=16), xs[p], ws[q]), slot, align=16)
            for q in range(DOT_CHANNELS):
                mq = b.add(m0, const_i64(q))
                w_sum = b.load(b.gep(weight_sums, [const_i64(0), mq], source_etype=weight_sums.value_type),
                               typ=I32, align=4)
                lanes = [_fold_to_4(b, b.load(accs[p][q], typ=acc_ty, align=16)) for p in range(PIXELS)]
                if sums is None:
                    totals = b.sub(_sum_each(b, lanes), _splat_i32(b, b.mul(x_zp, w_sum)))
                else:
                    zp = w_zp(mq)
                    corr = b.mul(x_zp, b.sub(w_sum, b.mul(const_i32(kp), zp)))
                    pixel = b.load(b.bitcast(acc_slot(b, sums, t0), V4I32.as_pointer()), typ=V4I32, align=4)
                    totals = b.sub(b.sub(_sum_each(b, lanes), _splat_i32(b, corr)), b.mul(_splat_i32(b, zp), pixel))
                slot = acc_slot(b, acc_block, b.add(b.mul(mq, const_i64(tile)), t0))
                b.store(totals, b.bitcast(slot, V4I32.as_pointer()), align=4)


def accumulator_lanes(instruction: str, step: int) -> int:
    """i32 lanes of one accumulator: a 4-byte group per lane, a 2-byte pair for pmaddwd."""
    return step // 2 if instruction == "pmaddwd" else step // 4


def _dot_step(module: ir.Module, b: ir.IRBuilder, instruction: str, step: int, x_dtype: DType, w_dtype: DType):
    """acc (<accumulator_lanes x i32>), x, w (<step x i8>) -> acc + the group sums of x * w, as
    `instruction` says: "vpdpbusd" (x86 VNNI, x as u8, w as i8; 16, 32 or 64 bytes), "pmaddwd" (x86
    AVX2 without VNNI, 16 bytes: both sides widened to i16, vpmaddwd adds the exact i32 products of
    each pair, which no 8-bit product can overflow; not the saturating u8 x i8 vpmaddubsw) or
    "partial_reduce" (any target, 16 bytes; sdot/udot on Arm)."""
    bytes_ty, wide_ty = ir.VectorType(I8, step), ir.VectorType(I32, step)
    acc_ty = ir.VectorType(I32, accumulator_lanes(instruction, step))
    x_ext = b.sext if x_dtype == DType.i8 else b.zext
    w_ext = b.sext if w_dtype == DType.i8 else b.zext
    if instruction == "vpdpbusd":
        vnni = _intrinsic(module, f"llvm.x86.avx512.vpdpbusd.{8 * step}", acc_ty, [acc_ty, bytes_ty, bytes_ty])
        return lambda acc, x, w: b.call(vnni, [acc, x, w])
    if instruction == "pmaddwd":
        if step != 16:
            raise ValueError(f"qconv_dot: pmaddwd steps over 16 bytes, not {step}")
        halves = ir.VectorType(ir.IntType(16), 16)
        pmadd = _intrinsic(module, "llvm.x86.avx2.pmadd.wd", acc_ty, [halves, halves])
        return lambda acc, x, w: b.add(acc, b.call(pmadd, [x_ext(x, halves), w_ext(w, halves)]))
    if instruction != "partial_reduce":
        raise ValueError(f"qconv_dot: unknown dot instruction {instruction!r}")
    partial = _intrinsic(module, f"llvm.vector.partial.reduce.add.v{step // 4}i32.v{step}i32", acc_ty,
                         [acc_ty, wide_ty])
    return lambda acc, x, w: b.call(partial, [acc, b.mul(x_ext(x, wide_ty), w_ext(w, wide_ty))])


def _fold_to_4(b: ir.IRBuilder, vec: ir.Value) -> ir.Value:
    """A <4n x i32> vector's lanes summed in groups down to <4 x i32> (its low half plus its high half, repeated)."""
    while vec.type.count > 4:
        half = vec.type.count // 2
        low = b.shuffle_vector(vec, vec, ir.Constant(ir.VectorType(I32, half), list(range(half))))
        high = b.shuffle_vector(vec, vec, ir.Constant(ir.VectorType(I32, half), list(range(half, 2 * half))))
        vec = b.add(low, high)
    return vec


def _pairwise(b: ir.IRBuilder, u: ir.Value, v: ir.Value) -> ir.Value:
    """[u0+u1, u2+u3, v0+v1, v2+v3] (addp on Arm, phaddd on x86)."""
    evens = b.shuffle_vector(u, v, ir.Constant(V4I32, [0, 2, 4, 6]))
    odds = b.shuffle_vector(u, v, ir.Constant(V4I32, [1, 3, 5, 7]))
    return b.add(evens, odds)


def _sum_each(b: ir.IRBuilder, vectors: list[ir.Value]) -> ir.Value:
    """The lane sums of four <4 x i32> vectors as one vector: [sum(v0), sum(v1), sum(v2), sum(v3)]."""
    return _pairwise(b, _pairwise(b, vectors[0], vectors[1]), _pairwise(b, vectors[2], vectors[3]))


def _splat_i32(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    one = b.insert_element(ir.Constant(V4I32, None), value, const_i32(0))
    return b.shuffle_vector(one, ir.Constant(V4I32, None), ir.Constant(V4I32, [0] * V4I32.count))


def col_ptr(b: ir.IRBuilder, col: ir.Value, index: ir.Value) -> ir.Value:
    return b.gep(col, [const_i64(0), index], inbounds=True)


def _weight_sum_table(module: ir.Module, prefix: str, values: list[int], padded: int) -> ir.GlobalVariable:
    array_ty = ir.ArrayType(I32, padded)
    table = ir.GlobalVariable(module, array_ty, name=f"{prefix}.w_sum")
    table.initializer = ir.Constant(array_ty, [int(v) for v in values] + [0] * (padded - len(values)))
    table.global_constant = True
    table.linkage = "internal"
    return table

