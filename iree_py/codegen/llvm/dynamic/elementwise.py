"""The "elementwise" kernel for symbolic dims: the same Expr evaluation as the static kernel
(codegen/llvm/elementwise.py), over an output whose dims come from the push constants.

Inputs broadcast numpy-style; an input dim that is 1 at run time is broadcast (stride 0) even
when it is symbolic, so one kernel serves `n` against `n` and `1` against `n`. The iteration
space is (rows, cols) with cols the output's last dim; workgroup y takes ROWS_PER_GROUP rows.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import const_i64, for_range
from iree_py.codegen.llvm.dynamic.common import begin_dynamic_kernel
from iree_py.codegen.llvm.elementwise import _check_expr, evaluate_expr, step_dtypes
from iree_py.codegen.llvm.typed_values import load_typed, store_typed
from iree_py.targets import Target
from iree_py.ir.symbols import call, dim

ROWS_PER_GROUP = 64


def runtime_strides(b: ir.IRBuilder, dims: list[ir.Value], rank: int, static_dims: tuple) -> list[ir.Value]:
    """Element strides of a tensor with `dims`, right-aligned to an output of `rank` axes: 0 on
    the axes it lacks and where its dim is 1 (broadcast)."""
    strides = [const_i64(0)] * rank
    running: ir.Value = const_i64(1)
    for k in range(len(dims) - 1, -1, -1):
        axis = rank - len(dims) + k
        if static_dims[k] == 1:
            strides[axis] = const_i64(0)
            continue
        is_one = b.icmp_signed("==", dims[k], const_i64(1))
        strides[axis] = b.select(is_one, const_i64(0), running)
        running = b.mul(running, dims[k])
    return strides


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    expr = _check_expr(spec)
    if len(spec.outputs) != 1:
        raise ValueError(f"elementwise kernel {spec.name}: expected 1 output, got {len(spec.outputs)}")
    dtypes = step_dtypes(spec, expr)
    out_t = spec.outputs[0]
    for i, t in enumerate(spec.inputs):
        if t.rank > out_t.rank:
            raise ValueError(f"elementwise kernel {spec.name}: input {i} {t} has more dims than the output {out_t}")
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    rank = max(out_t.rank, 1)
    out_shape = out_t.shape if out_t.rank else (1,)
    out_dims = [dk.dim(d) for d in out_shape]
    out_strides = runtime_strides(b, out_dims, rank, tuple(out_shape))
    in_strides = [runtime_strides(b, dk.dims(t), rank, t.shape) for t in spec.inputs]
    in_ptrs = [dk.binding(i) for i in range(len(spec.inputs))]
    out_ptr = dk.binding(len(spec.inputs))

    rows_expr = dim(1)
    for d in out_shape[:-1]:
        rows_expr = dim(rows_expr * d)
    rows = dk.dim(rows_expr)
    cols = out_dims[-1]
    row_start = b.mul(dk.workgroup_id_index(1), const_i64(ROWS_PER_GROUP))
    row_stop = b.add(row_start, const_i64(ROWS_PER_GROUP))
    row_stop = b.select(b.icmp_signed("<", row_stop, rows), row_stop, rows)
    with for_range(b, row_start, row_stop, name="row") as row:
        offsets = [const_i64(0)] * (1 + len(in_ptrs))
        rest = row
        for axis in range(rank - 2, -1, -1):
            idx = b.urem(rest, out_dims[axis]) if axis > 0 else rest
            rest = b.udiv(rest, out_dims[axis]) if axis > 0 else rest
            for k, st in enumerate((out_strides, *in_strides)):
                offsets[k] = b.add(offsets[k], b.mul(idx, st[axis]))
        with for_range(b, 0, cols, name="col") as col:
            cache: dict[int, ir.Value] = {}

            def load_input(i: int) -> ir.Value:
                if i not in cache:
                    at = b.add(offsets[1 + i], b.mul(col, in_strides[i][-1]))
                    cache[i] = load_typed(b, spec.inputs[i].dtype, in_ptrs[i], at)
                return cache[i]

            value = evaluate_expr(b, spec, expr, dtypes, load_input)
            store_typed(b, out_t.dtype, value, out_ptr, b.add(offsets[0], col))
    dk.finish()
    groups = call("ceildiv", rows_expr, ROWS_PER_GROUP) if not isinstance(rows_expr, int) else -(-rows_expr // ROWS_PER_GROUP)
    # An input's bytes: its own byte count (a dim of 1 at run time reads one element there).
    return dk.info(workgroup_count=(1, dim(groups), 1))
