"""The "qmatmul" kernel: QMatMul, A[..., M, K] (i8/u8) @ B[K, N] (i8/u8) + bias[N] (i32), int32
accumulation, requantized per output column (docs/ir.md, "Quantized ops").

Structure (all sizes static): A's leading dims are one run of rows. grid x = column tiles of up to
N_TILE columns, y = blocks of ROWS_PER_GROUP rows. Per row: an int32 accumulator row (stack);
for each k, a = A[row, k] - a_zp is broadcast over the tile: acc[n] += a * B[k, n] (a plain loop of
i8 loads widened to i32, which LLVM vectorizes), and the row sum of a is kept, so B's per-column
zero point is applied once at the end: acc[n] - w_zp[n] * sum_k(a) (exact modulo 2**32, like the
accumulation itself). Then + bias[n], requantize, clamp, store one byte.
"""
from __future__ import annotations

import math

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (I32, begin_kernel, const_i64, entry_alloca, for_range,
                                         min_index, static_shape)
from iree_py.codegen.llvm.requant import (acc_slot, check_q_operands, i32, load_q, per_channel,
                                          requantize_and_store)

N_TILE = 256
ROWS_PER_GROUP = 8


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    a_t, b_t, out_t, has_bias = check_q_operands(spec, "qmatmul")
    a_shape = static_shape(a_t, f"qmatmul kernel {spec.name} input A")
    k_size, n_size = static_shape(b_t, f"qmatmul kernel {spec.name} input B")
    if len(a_shape) < 2 or a_shape[-1] != k_size or \
            static_shape(out_t, f"qmatmul kernel {spec.name} output") != (*a_shape[:-1], n_size):
        raise ValueError(f"qmatmul kernel {spec.name}: A {a_t} x B {b_t} does not give {out_t}")
    rows = math.prod(a_shape[:-1])
    tile = min(n_size, N_TILE)
    attrs = spec.attrs

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    a_buf, b_buf = kb.binding(0), kb.binding(1)
    bias_buf = kb.binding(2) if has_bias else None
    out_buf = kb.binding(len(spec.inputs))
    acc = entry_alloca(b, ir.ArrayType(I32, tile), "acc")
    row_sum = entry_alloca(b, I32, "row_sum")

    n0 = b.mul(kb.workgroup_id_index(0), const_i64(tile))
    n_end = min_index(b, b.add(n0, const_i64(tile)), const_i64(n_size))
    row_begin = b.mul(kb.workgroup_id_index(1), const_i64(ROWS_PER_GROUP))
    row_end = min_index(b, b.add(row_begin, const_i64(ROWS_PER_GROUP)), const_i64(rows))
    a_zp = i32(int(attrs["x_zero_point"]))
    with for_range(b, row_begin, row_end, name="row") as row:
        with for_range(b, 0, tile, name="zero") as j:
            b.store(i32(0), acc_slot(b, acc, j), align=4)
        b.store(i32(0), row_sum, align=4)
        a_row = b.mul(row, const_i64(k_size))
        with for_range(b, 0, k_size, name="k") as k:
            av = b.sub(load_q(b, a_buf, b.add(a_row, k), a_t.dtype), a_zp)
            b.store(b.add(b.load(row_sum, typ=I32, align=4), av), row_sum, align=4)
            b_row = b.mul(k, const_i64(n_size))
            with for_range(b, n0, n_end, name="n") as col:
                bv = load_q(b, b_buf, b.add(b_row, col), b_t.dtype)
                slot = acc_slot(b, acc, b.sub(col, n0))
                b.store(b.add(b.load(slot, typ=I32, align=4), b.mul(av, bv)), slot, align=4)
        total_a = b.load(row_sum, typ=I32, align=4)
        out_row = b.mul(row, const_i64(n_size))
        with for_range(b, n0, n_end, name="store") as col:
            w_zp = per_channel(module, b, f"{spec.name}.w_zero_point", list(attrs["w_zero_point"]), col)
            total = b.sub(b.load(acc_slot(b, acc, b.sub(col, n0)), typ=I32, align=4), b.mul(w_zp, total_a))
            requantize_and_store(b, module, attrs, total, bias_buf, col, spec.name, out_buf, b.add(out_row, col))
    kb.finish()

    grid = (-(-n_size // tile), -(-rows // ROWS_PER_GROUP), 1)
    lengths = tuple(t.num_bytes for t in spec.inputs) + (out_t.num_bytes,)
    return KernelInfo(spec.name, grid, (), lengths)
