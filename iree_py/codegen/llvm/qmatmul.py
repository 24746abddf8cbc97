"""The "qmatmul" kernel: QMatMul and MatMulInteger, A[..., M, K] (i8/u8) @ B[K, N] or B[..., K, N]
(i8/u8, A's batch dims) + bias[N] (i32), int32 accumulation, requantized per output column, or the
int32 sums themselves (requant "none": MatMulInteger; docs/ir.md, "Quantized ops").

Structure (every dim may be symbolic: an int folds to a constant, an Expr is read from the push
constants, as codegen/llvm/dims.py's `dim` does): A's leading dims are one run of rows.
grid x = column tiles of up to N_TILE columns, y = blocks of ROWS_PER_GROUP rows. Per row: an int32
accumulator row (stack); for each k, a = A[row, k] - a_zp is broadcast over the tile:
acc[n] += a * B[k, n] (a plain loop of i8 loads widened to i32, which LLVM vectorizes; a batched B
starts at batch row // M), and the row sum of a is kept, so B's per-column zero point is applied
once at the end: acc[n] - w_zp[n] * sum_k(a) (exact modulo 2**32, like the accumulation itself).
Then + bias[n], requantize, clamp, store one byte; or store the int32. Zero points are attributes,
or (MatMulInteger) bindings: a's per tensor or per row (element row % M), b's per tensor or per column.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import I32, const_i64, entry_alloca, for_range, min_index
from iree_py.codegen.llvm.dims import begin_dynamic_kernel
from iree_py.codegen.llvm.requant import acc_slot, check_q_operands, load_q, requantize_and_store, zero_point
from iree_py.ir.dim_checks import product
from iree_py.ir.symbols import call, dim

N_TILE = 256
ROWS_PER_GROUP = 8


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    ops = check_q_operands(spec, "qmatmul")
    a_t, b_t, out_t = ops.x, ops.w, ops.out
    a_shape, b_shape = tuple(dim(d) for d in a_t.shape), tuple(dim(d) for d in b_t.shape)
    k_size, n_size = b_shape[-2:] if len(b_shape) >= 2 else (None, None)
    batched = len(b_shape) > 2
    if (len(a_shape) < 2 or len(b_shape) not in (2, len(a_shape)) or a_shape[-1] != k_size
            or (batched and b_shape[:-2] != a_shape[:-2])
            or tuple(dim(d) for d in out_t.shape) != (*a_shape[:-1], n_size)):
        raise ValueError(f"qmatmul kernel {spec.name}: A {a_t} x B {b_t} does not give {out_t}")
    rows = product(a_shape[:-1])
    tile = min(n_size, N_TILE) if isinstance(n_size, int) else N_TILE
    attrs = spec.attrs

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    k_v, n_v, m_v, rows_v = dk.dim(k_size), dk.dim(n_size), dk.dim(a_shape[-2]), dk.dim(rows)
    a_buf, b_buf = dk.binding(0), dk.binding(1)
    bias_buf = dk.binding(ops.index["bias"]) if ops.has_bias else None
    out_buf = dk.binding(ops.out_binding)
    acc = entry_alloca(b, ir.ArrayType(I32, tile), "acc")
    row_sum = entry_alloca(b, I32, "row_sum")

    n0 = b.mul(dk.workgroup_id_index(0), const_i64(tile))
    n_end = min_index(b, b.add(n0, const_i64(tile)), n_v)
    row_begin = b.mul(dk.workgroup_id_index(1), const_i64(ROWS_PER_GROUP))
    row_end = min_index(b, b.add(row_begin, const_i64(ROWS_PER_GROUP)), rows_v)
    per_row = "x_zero_point" in ops.index and int(ops.types["x_zero_point"].shape[0]) > 1
    a_zp_tensor = None if per_row else zero_point(module, b, dk, ops, attrs, "x_zero_point", spec.name, const_i64(0))
    b_matrix = b.mul(k_v, n_v)
    with for_range(b, row_begin, row_end, name="row") as row:
        a_zp = a_zp_tensor if a_zp_tensor is not None else zero_point(module, b, dk, ops, attrs, "x_zero_point",
                                                                      spec.name, b.urem(row, m_v))
        b_start = b.mul(b.udiv(row, m_v), b_matrix) if batched else const_i64(0)
        with for_range(b, 0, tile, name="zero") as j:
            b.store(ir.Constant(I32, 0), acc_slot(b, acc, j), align=4)
        b.store(ir.Constant(I32, 0), row_sum, align=4)
        a_row = b.mul(row, k_v)
        with for_range(b, 0, k_v, name="k") as k:
            av = b.sub(load_q(b, a_buf, b.add(a_row, k), a_t.dtype), a_zp)
            b.store(b.add(b.load(row_sum, typ=I32, align=4), av), row_sum, align=4)
            b_row = b.add(b_start, b.mul(k, n_v))
            with for_range(b, n0, n_end, name="n") as col:
                bv = load_q(b, b_buf, b.add(b_row, col), b_t.dtype)
                slot = acc_slot(b, acc, b.sub(col, n0))
                b.store(b.add(b.load(slot, typ=I32, align=4), b.mul(av, bv)), slot, align=4)
        total_a = b.load(row_sum, typ=I32, align=4)
        out_row = b.mul(row, n_v)
        with for_range(b, n0, n_end, name="store") as col:
            w_zp = zero_point(module, b, dk, ops, attrs, "w_zero_point", spec.name, col)
            total = b.sub(b.load(acc_slot(b, acc, b.sub(col, n0)), typ=I32, align=4), b.mul(w_zp, total_a))
            requantize_and_store(b, module, attrs, total, bias_buf, col, spec.name, out_buf, b.add(out_row, col))
    dk.finish()
    return dk.info(workgroup_count=(dim(call("ceildiv", n_size, tile)), dim(call("ceildiv", rows, ROWS_PER_GROUP)), 1))
