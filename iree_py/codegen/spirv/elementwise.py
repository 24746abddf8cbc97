"""Elementwise kernels: an Expr over inputs broadcast numpy-style to the output (f32), and expand
(one input broadcast to the output's shape, any 4-byte dtype: bits copied). One invocation per
output element."""
from __future__ import annotations

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder, Value
from iree_py.codegen.spirv.indexing import Dim, broadcast_index, dims, product, unravel
from iree_py.codegen.spirv.math import BINARY, UNARY, binary, unary


def supports_expr(spec: KernelSpec) -> str | None:
    """Why the expression cannot be built here (None: it can)."""
    for step in spec.attrs["expr"].steps:
        if step.op not in UNARY and step.op not in BINARY:
            return f"elementwise op {step.op} (the spirv backend computes {', '.join(sorted({*UNARY, *BINARY}))})"
    return None


def build_elementwise(b: KernelBuilder, spec: KernelSpec) -> Dim:
    out_shape = dims(spec.outputs[0])
    total = product(out_shape)
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
