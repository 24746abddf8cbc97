"""Elementwise kernels: an Expr over inputs broadcast numpy-style to the output, each tensor and
step in its own dtype (scalars.py says how each is stored and computed, typed_math.py computes the
steps), and expand (one input broadcast to the output's shape, any 4-byte dtype: bits copied). One
invocation per output element."""
from __future__ import annotations

from iree_py.codegen.kernel_spec import ExprStep, KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder, Value
from iree_py.codegen.spirv.indexing import Dim, broadcast_index, dims, product, unravel
from iree_py.codegen.spirv.narrow import round_to_narrow
from iree_py.codegen.spirv.scalars import SCALARS, Scalar, load, scalar, store
from iree_py.codegen.spirv.typed_math import UnsupportedStep, emit_step
from iree_py.ir.types import DType


def tensor_scalars(spec: KernelSpec) -> list[Scalar]:
    """The scalar type of every binding (inputs then outputs); UnsupportedStep for a dtype this
    backend has no storage for."""
    for t in (*spec.inputs, *spec.outputs):
        if t.dtype not in SCALARS:
            raise UnsupportedStep(f"dtype {t.dtype.value} (elementwise takes "
                                  f"{', '.join(d.value for d in SCALARS)})")
    return [scalar(t.dtype) for t in (*spec.inputs, *spec.outputs)]


def _step_dtype(step: ExprStep, arg_dtypes: list[DType]) -> DType:
    if step.dtype is not None:
        return step.dtype
    return arg_dtypes[1] if step.op == "Where" else arg_dtypes[0]


def build_elementwise(b: KernelBuilder, spec: KernelSpec) -> Dim:
    types = tensor_scalars(spec)
    out_shape = dims(spec.outputs[0])
    total = product(out_shape)
    steps = spec.attrs["expr"].steps
    with b.for_each(total) as index:
        coords = unravel(b, index, out_shape)
        loaded: dict[int, Value] = {}
        results: list[tuple[Value, DType]] = []

        def arg(kind: str, i: int) -> tuple[Value, DType]:
            if kind == "step":
                return results[i]
            if i not in loaded:
                loaded[i] = load(b, i, broadcast_index(b, coords, dims(spec.inputs[i])), types[i])
            return loaded[i], spec.inputs[i].dtype

        for number, step in enumerate(steps):
            values, dtypes = zip(*(arg(kind, i) for kind, i in step.args))
            dtype = _step_dtype(step, list(dtypes))
            if dtype not in SCALARS:
                raise UnsupportedStep(f"a {step.op} step of dtype {dtype.value}")
            value = emit_step(b, step.op, dict(step.attrs), list(values), [scalar(d) for d in dtypes], scalar(dtype))
            if step.op == "Cast" and dtype == DType.f16 and dtypes[0] != DType.f16 and number + 1 < len(steps):
                value = round_to_narrow(b, value, DType.f16)  # rounded where later steps read it; stores round
            results.append((value, dtype))
        value, dtype = results[-1]
        if dtype != spec.outputs[0].dtype:
            raise UnsupportedStep(f"an expression of dtype {dtype.value} stored as {spec.outputs[0].dtype.value}")
        store(b, len(spec.inputs), index, value, types[-1])
    return total


def build_expand(b: KernelBuilder, spec: KernelSpec) -> Dim:
    out_shape = dims(spec.outputs[0])
    total = product(out_shape)
    with b.for_each(total) as index:
        coords = unravel(b, index, out_shape)
        b.store(1, index, b.load(0, broadcast_index(b, coords, dims(spec.inputs[0]))))
    return total
