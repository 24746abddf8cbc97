"""Elementwise kernels: an Expr over inputs broadcast numpy-style to the output (f32), and expand
(one input broadcast to the output's shape, any 4-byte dtype: bits copied). One invocation per
output element."""
from __future__ import annotations

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder, Value
from iree_py.codegen.spirv.indexing import Dim, broadcast_index, dims, product, unravel
from iree_py.codegen.spirv.intmath import INT_BINARY, INT_UNARY
from iree_py.codegen.spirv.math import BINARY, UNARY, binary, unary
from iree_py.ir.types import DType


def is_int_expr(spec: KernelSpec) -> bool:
    """Every tensor and step of the expression is i32 (computed by intmath.py)."""
    return (all(t.dtype == DType.i32 for t in (*spec.inputs, *spec.outputs))
            and all(step.dtype in (None, DType.i32) for step in spec.attrs["expr"].steps))


def supports_expr(spec: KernelSpec) -> str | None:
    """Why the expression cannot be built here (None: it can)."""
    if is_int_expr(spec):
        for step in spec.attrs["expr"].steps:
            if step.op not in INT_UNARY and step.op not in INT_BINARY:
                return (f"i32 elementwise op {step.op} (the spirv backend computes "
                        f"{', '.join(sorted({*INT_UNARY, *INT_BINARY}))} on i32)")
        return None
    for step in spec.attrs["expr"].steps:
        if step.op not in UNARY and step.op not in BINARY:
            return f"elementwise op {step.op} (the spirv backend computes {', '.join(sorted({*UNARY, *BINARY}))})"
    return None


def build_elementwise(b: KernelBuilder, spec: KernelSpec) -> Dim:
    out_shape = dims(spec.outputs[0])
    total = product(out_shape)
    integer = is_int_expr(spec)
    with b.for_each(total) as index:
        coords = unravel(b, index, out_shape)
        loaded: dict[int, Value] = {}
        results: list[Value] = []

        def arg(kind: str, i: int) -> Value:
            if kind == "step":
                return results[i]
            if i not in loaded:
                loaded[i] = b.load(i, broadcast_index(b, coords, dims(spec.inputs[i])))
            return loaded[i]

        for step in spec.attrs["expr"].steps:
            args = [arg(kind, i) for kind, i in step.args]
            if integer:
                results.append(INT_UNARY[step.op](b, args[0]) if len(args) == 1
                               else INT_BINARY[step.op](b, args[0], args[1]))
            else:
                results.append(unary(b, step.op, args[0], step.attrs) if len(args) == 1
                               else binary(b, step.op, args[0], args[1]))
        b.store(len(spec.inputs), index, results[-1])
    return total


def build_expand(b: KernelBuilder, spec: KernelSpec) -> Dim:
    out_shape = dims(spec.outputs[0])
    total = product(out_shape)
    with b.for_each(total) as index:
        coords = unravel(b, index, out_shape)
        b.store(1, index, b.load(0, broadcast_index(b, coords, dims(spec.inputs[0]))))
    return total
