"""CumSum and CumProd on SPIR-V: running sums / products along attrs axis (exclusive: each output
leaves out its own element; reverse: they run from the end), f32, f64, i32 or i64 computed in the
element type (integers wrap; f64 with the Float64 capability), as the CPU backend's
(codegen/llvm/cumsum.py). The input seen as
[outer, n, inner]; one invocation per (outer, inner) column, walking its n elements in order."""
from __future__ import annotations

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder
from iree_py.codegen.spirv.indexing import Dim, dims, product
from iree_py.ir.types import DType

IDENTITY = {"cumsum": 0, "cumprod": 1}
# dtype -> the element type it is stored and computed in (builder.TYPES)
ELEMENT_TYPES = {DType.f32: "f32", DType.f64: "f64", DType.i32: "i32", DType.i64: "i64"}


def _build(b: KernelBuilder, spec: KernelSpec) -> Dim:
    shape = dims(spec.inputs[0])
    axis = int(spec.attrs["axis"])
    exclusive, reverse = bool(spec.attrs.get("exclusive", 0)), bool(spec.attrs.get("reverse", 0))
    outer, n, inner = product(shape[:axis]), shape[axis], product(shape[axis + 1:])
    register = ELEMENT_TYPES[spec.inputs[0].dtype]
    columns = product([outer, inner])
    with b.for_each(columns) as column:
        base = (column / b.dim(inner)) * b.dim(product([n, inner])) + column % b.dim(inner)
        acc = b.variable(register, IDENTITY[spec.kind])
        with b.loop(0, b.dim(n)) as j:
            at = base + ((b.dim(n) - 1 - j) if reverse else j) * b.dim(inner)
            before, x = acc.get(), b.load(0, at)
            total = before + x if spec.kind == "cumsum" else before * x
            b.store(1, at, before if exclusive else total)
            acc.set(total)
    return columns


def build_cumsum(b: KernelBuilder, spec: KernelSpec) -> Dim:
    return _build(b, spec)


def build_cumprod(b: KernelBuilder, spec: KernelSpec) -> Dim:
    return _build(b, spec)
