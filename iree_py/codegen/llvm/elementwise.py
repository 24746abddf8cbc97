"""The "elementwise" kernel: evaluates attrs["expr"] (an Expr DAG) over inputs broadcast
numpy-style to the output shape. Every step computes in its own dtype (ExprStep.dtype; see
elementwise_typed.py and typed_values.py for how each dtype lives in registers and memory).

Dims are collapsed first, so the kernel walks a (rows..., cols) iteration space; the innermost
axis is vectorized with target.vector_bits wide vectors (inputs with stride 0 there are loaded once
per row and splat), with a scalar tail. Workgroups: x tiles the columns, y groups of rows.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import (EXPR_BINARY_OPS, EXPR_TERNARY_OPS, EXPR_UNARY_OPS, Expr, KernelInfo,
                                        KernelSpec)
from iree_py.codegen.llvm.common import (begin_kernel, const_i64, for_range, lanes_f32, splat_value, static_shape,
                                         strides_of)
from iree_py.codegen.llvm.elementwise_typed import StepError, emit_step, result_dtype_ok
from iree_py.codegen.llvm.shapes import broadcast_strides, collapse_dims
from iree_py.codegen.llvm.typed_values import load_typed, register_type, store_typed
from iree_py.ir.types import DType

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


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    expr = _check_expr(spec)
    if len(spec.outputs) != 1:
        raise ValueError(f"elementwise kernel {spec.name}: expected 1 output, got {len(spec.outputs)}")
    dtypes = step_dtypes(spec, expr)
    out_dtype = spec.outputs[0].dtype
    out_shape = static_shape(spec.outputs[0], f"elementwise kernel {spec.name} output")
    in_strides = [broadcast_strides(static_shape(t, f"kernel {spec.name} input"), out_shape,
                                    f"elementwise kernel {spec.name} input {i}")
                  for i, t in enumerate(spec.inputs)]
    shape, strides = collapse_dims(out_shape, [strides_of(out_shape)] + in_strides)
    out_strides, in_strides = strides[0], strides[1:]

    cols = shape[-1]
    row_shape = shape[:-1]
    rows = 1
    for n in row_shape:
        rows *= n
    lanes = lanes_f32(target)
    col_tile = cols if cols <= COLUMN_TILE else COLUMN_TILE - COLUMN_TILE % lanes
    col_tiles = -(-cols // col_tile)
    rows_per_group = max(1, ROW_GROUP_ELEMENTS // cols)
    row_groups = -(-rows // rows_per_group)

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    in_ptrs = [kb.binding(i) for i in range(len(spec.inputs))]
    out_ptr = kb.binding(len(spec.inputs))
    col_start = b.mul(kb.workgroup_id_index(0), const_i64(col_tile))
    col_stop = b.add(col_start, const_i64(col_tile))
    col_stop = b.select(b.icmp_signed("<", col_stop, const_i64(cols)), col_stop, const_i64(cols))
    vec_stop = b.sub(col_stop, b.urem(b.sub(col_stop, col_start), const_i64(lanes))) if lanes > 1 else col_start
    row_start = b.mul(kb.workgroup_id_index(1), const_i64(rows_per_group))
    row_stop = b.add(row_start, const_i64(rows_per_group))
    row_stop = b.select(b.icmp_signed("<", row_stop, const_i64(rows)), row_stop, const_i64(rows))

    with for_range(b, row_start, row_stop, name="row") as row:
        # Split the row index into the outer dims and form each operand's row offset.
        offsets = [const_i64(0)] * (1 + len(in_ptrs))
        rest = row
        for axis in range(len(row_shape) - 1, -1, -1):
            idx = b.urem(rest, const_i64(row_shape[axis])) if axis > 0 else rest
            rest = b.udiv(rest, const_i64(row_shape[axis])) if axis > 0 else rest
            for k, st in enumerate((out_strides, *in_strides)):
                if st[axis]:
                    offsets[k] = b.add(offsets[k], b.mul(idx, const_i64(st[axis])))
        out_off, in_offs = offsets[0], offsets[1:]

        def emit_columns(start, stop, width: int):
            with for_range(b, start, stop, step=width, name="col") as col:
                cache: dict[int, ir.Value] = {}

                def load_input(i: int) -> ir.Value:
                    if i not in cache:
                        dtype = spec.inputs[i].dtype
                        if in_strides[i][-1] == 0:  # broadcast along the row: one element, splat
                            one = load_typed(b, dtype, in_ptrs[i], in_offs[i])
                            cache[i] = splat_value(b, one, register_type(dtype, width))
                        else:
                            cache[i] = load_typed(b, dtype, in_ptrs[i], b.add(in_offs[i], col), width)
                    return cache[i]

                value = evaluate_expr(b, spec, expr, dtypes, load_input)
                store_typed(b, out_dtype, value, out_ptr, b.add(out_off, col))

        if lanes > 1:
            emit_columns(col_start, vec_stop, lanes)
        emit_columns(vec_stop, col_stop, 1)
    kb.finish()
    return KernelInfo(spec.name, (col_tiles, row_groups, 1), (),
                      tuple(t.num_bytes for t in (*spec.inputs, *spec.outputs)))
