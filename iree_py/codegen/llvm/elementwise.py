"""The "elementwise" kernel: evaluates attrs["expr"] (an Expr DAG) over inputs broadcast
numpy-style to the output shape. Every step computes in its own dtype (ExprStep.dtype; see
elementwise_typed.py and typed_values.py for how each dtype lives in registers and memory).

Dims are collapsed first, so the kernel walks a (rows..., cols) iteration space; the innermost
axis is vectorized with target.vector_bits wide vectors (inputs with stride 0 there are loaded once
per row and splat), with a scalar tail. Workgroups: x tiles the columns, y groups of rows.

Dims are ints or Exprs (one builder for both, docs/dynamic_shapes.md §3): an int folds to a
constant, an Expr is computed from the push constants (`DynamicKernel.dim`), so a static spec
compiles to the code it always had. A symbolic input dim not known to equal the output's is
broadcast at run time when it is 1 there (shapes.RuntimeBroadcast: stride 0); dims that meet such
a choice are not merged, and one along the row makes the columns scalar. Input dims that must
agree with the output's and are not known to are checked by the kernel, which refuses the
dispatch otherwise.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import (EXPR_BINARY_OPS, EXPR_TERNARY_OPS, EXPR_UNARY_OPS, Expr, KernelInfo,
                                        KernelSpec)
from iree_py.codegen.llvm.common import const_i64, for_range, lanes_f32, splat_value
from iree_py.codegen.llvm.dims import Agreements, DynamicKernel, begin_dynamic_kernel, product
from iree_py.codegen.llvm.elementwise_typed import StepError, emit_step, result_dtype_ok
from iree_py.codegen.llvm.shapes import Stride, broadcast_strides, collapse_dims, row_major, stride_value
from iree_py.codegen.llvm.typed_values import load_typed, register_type, store_typed
from iree_py.targets import Target
from iree_py.ir.symbols import call, dim
from iree_py.ir.types import Dim, DType

COLUMN_TILE = 16384      # elements of one row a workgroup handles at most
ROW_GROUP_ELEMENTS = 8192  # rows are grouped so a workgroup covers about this many elements


def _arity(op: str) -> int:
    return 1 if op in EXPR_UNARY_OPS else 2 if op in EXPR_BINARY_OPS else 3


def _check_expr(spec: KernelSpec) -> Expr:
    expr = spec.attrs.get("expr")
    if not isinstance(expr, Expr):
        raise ValueError(f"elementwise kernel {spec.name}: attrs['expr'] must be an Expr, got {type(expr).__name__}")
    for j, step in enumerate(expr.steps):
        if step.op not in EXPR_UNARY_OPS and step.op not in EXPR_BINARY_OPS and step.op not in EXPR_TERNARY_OPS:
            raise ValueError(f"elementwise kernel {spec.name} step {j}: unsupported op {step.op!r}")
        want = _arity(step.op)
        if len(step.args) != want:
            raise ValueError(f"elementwise kernel {spec.name} step {j}: {step.op} takes {want} args, "
                             f"got {len(step.args)}")
        for kind, k in step.args:
            if kind == "in" and not 0 <= k < len(spec.inputs):
                raise ValueError(f"elementwise kernel {spec.name} step {j}: no input {k}")
            if kind == "step" and not 0 <= k < j:
                raise ValueError(f"elementwise kernel {spec.name} step {j}: step {k} is not an earlier step")
            if kind not in ("in", "step"):
                raise ValueError(f"elementwise kernel {spec.name} step {j}: bad argument kind {kind!r}")
    if not expr.steps and len(spec.inputs) != 1:
        raise ValueError(f"elementwise kernel {spec.name}: an empty expr needs exactly one input")
    return expr


def step_dtypes(spec: KernelSpec, expr: Expr) -> list[DType]:
    """The result dtype of every step (ExprStep.dtype, or its first argument's); ValueError when a
    step's operand and result dtypes do not fit its op or the last step's dtype is not the output's."""
    dtypes: list[DType] = []

    def of(a: tuple[str, int]) -> DType:
        return spec.inputs[a[1]].dtype if a[0] == "in" else dtypes[a[1]]

    for j, step in enumerate(expr.steps):
        arg_dtypes = [of(a) for a in step.args]
        dtype = step.dtype or (arg_dtypes[1] if step.op == "Where" else arg_dtypes[0])
        why = result_dtype_ok(step.op, arg_dtypes, dtype)
        if why:
            raise ValueError(f"elementwise kernel {spec.name} step {j}: {why}")
        dtypes.append(dtype)
    last = dtypes[-1] if dtypes else spec.inputs[0].dtype
    if last != spec.outputs[0].dtype:
        raise ValueError(f"elementwise kernel {spec.name}: the expression gives {last.value}, "
                         f"the output is {spec.outputs[0]}")
    return dtypes


def evaluate_expr(b: ir.IRBuilder, spec: KernelSpec, expr: Expr, dtypes: list[DType], load_input) -> ir.Value:
    """Emit the Expr's steps; `load_input(i)` returns the value of input i (loaded once)."""
    if not expr.steps:
        return load_input(0)
    results: list[ir.Value] = []

    def arg(a: tuple[str, int]) -> tuple[ir.Value, DType]:
        return (load_input(a[1]), spec.inputs[a[1]].dtype) if a[0] == "in" else (results[a[1]], dtypes[a[1]])

    for j, step in enumerate(expr.steps):
        values, arg_dtypes = zip(*(arg(a) for a in step.args))
        try:
            results.append(emit_step(b, step.op, dict(step.attrs), list(values), list(arg_dtypes), dtypes[j]))
        except StepError as e:
            raise ValueError(f"elementwise kernel {spec.name} step {j}: {e}") from None
    return results[-1]


def _grid(rows: Dim, cols: Dim, lanes: int) -> tuple[Dim, Dim, Dim, Dim]:
    """(columns per workgroup, workgroups along x, rows per workgroup, workgroups along y)."""
    wide_tile = COLUMN_TILE - COLUMN_TILE % lanes
    if isinstance(cols, int):
        col_tile = cols if cols <= COLUMN_TILE else wide_tile
        col_tiles: Dim = -(-cols // col_tile) if col_tile else 0
        rows_per_group: Dim = max(1, ROW_GROUP_ELEMENTS // max(cols, 1))
    else:  # a symbolic row: one tile size for all; a single row (collapsed dims) needs no division
        col_tile = wide_tile
        col_tiles = dim(call("ceildiv", cols, col_tile))
        rows_per_group = 1 if rows == 1 else \
            dim(call("max", 1, call("floordiv", ROW_GROUP_ELEMENTS, call("max", cols, 1))))
    return col_tile, col_tiles, rows_per_group, dim(call("ceildiv", rows, rows_per_group))


def _stride_value(dk: DynamicKernel, stride: Stride) -> ir.Value | None:
    """A stride as an i64 (None for a known 0), computed in the entry block."""
    if isinstance(stride, int) and stride == 0:
        return None
    return stride_value(dk, stride)


def _is(stride: Stride, value: int) -> bool:
    return isinstance(stride, int) and stride == value


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    expr = _check_expr(spec)
    if len(spec.outputs) != 1:
        raise ValueError(f"elementwise kernel {spec.name}: expected 1 output, got {len(spec.outputs)}")
    dtypes = step_dtypes(spec, expr)
    out_dtype = spec.outputs[0].dtype
    out_shape = spec.outputs[0].shape
    in_strides = [broadcast_strides(t.shape, out_shape, f"elementwise kernel {spec.name} input {i}")
                  for i, t in enumerate(spec.inputs)]
    agree = Agreements(f"elementwise kernel {spec.name}")
    for i, t in enumerate(spec.inputs):
        for k, d in enumerate(t.shape):
            agree.one_or_equal(d, out_shape[len(out_shape) - t.rank + k], f"input {i} dim {k} (vs the output's)")
    shape, strides = collapse_dims(out_shape, [row_major(out_shape)] + in_strides)
    out_strides, in_strides = strides[0], strides[1:]

    cols = shape[-1]
    row_shape = shape[:-1]
    rows = product(row_shape)
    lanes = lanes_f32(target)
    # Vectors along the row need every input contiguous there or broadcast (stride 1 or 0).
    vectors = lanes > 1 and all(_is(st[-1], 0) or _is(st[-1], 1) for st in in_strides)
    col_tile, col_tiles, rows_per_group, row_groups = _grid(rows, cols, lanes)

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    agree.emit(dk)
    in_ptrs = [dk.binding(i) for i in range(len(spec.inputs))]
    out_ptr = dk.binding(len(spec.inputs))
    cols_v, rows_v, col_tile_v, per_group_v = dk.dim(cols), dk.dim(rows), dk.dim(col_tile), dk.dim(rows_per_group)
    row_dims = [dk.dim(n) for n in row_shape]
    operand_strides = [[_stride_value(dk, s) for s in st] for st in (out_strides, *in_strides)]
    col_start = b.mul(dk.workgroup_id_index(0), col_tile_v)
    col_stop = b.add(col_start, col_tile_v)
    col_stop = b.select(b.icmp_signed("<", col_stop, cols_v), col_stop, cols_v)
    vec_stop = b.sub(col_stop, b.urem(b.sub(col_stop, col_start), const_i64(lanes))) if vectors else col_start
    row_start = b.mul(dk.workgroup_id_index(1), per_group_v)
    row_stop = b.add(row_start, per_group_v)
    row_stop = b.select(b.icmp_signed("<", row_stop, rows_v), row_stop, rows_v)

    with for_range(b, row_start, row_stop, name="row") as row:
        # Split the row index into the outer dims and form each operand's row offset.
        offsets = [const_i64(0)] * (1 + len(in_ptrs))
        rest = row
        for axis in range(len(row_shape) - 1, -1, -1):
            idx = b.urem(rest, row_dims[axis]) if axis > 0 else rest
            rest = b.udiv(rest, row_dims[axis]) if axis > 0 else rest
            for k, st in enumerate(operand_strides):
                if st[axis] is not None:
                    offsets[k] = b.add(offsets[k], b.mul(idx, st[axis]))
        out_off, in_offs = offsets[0], offsets[1:]

        def emit_columns(start, stop, width: int):
            with for_range(b, start, stop, step=width, name="col") as col:
                cache: dict[int, ir.Value] = {}

                def load_input(i: int) -> ir.Value:
                    if i not in cache:
                        dtype = spec.inputs[i].dtype
                        along_row = in_strides[i][-1]
                        if _is(along_row, 0):  # broadcast along the row: one element, splat
                            one = load_typed(b, dtype, in_ptrs[i], in_offs[i])
                            cache[i] = splat_value(b, one, register_type(dtype, width))
                        elif _is(along_row, 1):
                            cache[i] = load_typed(b, dtype, in_ptrs[i], b.add(in_offs[i], col), width)
                        else:  # decided at run time (scalar columns only)
                            at = b.add(in_offs[i], b.mul(col, operand_strides[1 + i][-1]))
                            cache[i] = load_typed(b, dtype, in_ptrs[i], at)
                    return cache[i]

                value = evaluate_expr(b, spec, expr, dtypes, load_input)
                store_typed(b, out_dtype, value, out_ptr, b.add(out_off, col))

        if vectors:
            emit_columns(col_start, vec_stop, lanes)
        emit_columns(vec_stop, col_stop, 1)
    dk.finish()
    return dk.info(workgroup_count=(col_tiles, row_groups, 1))
