"""NonZero on SPIR-V in the CPU backend's two passes (codegen/llvm/data_dependent.py): nonzero_count,
X -> i64[1], the elements != 0 (a float NaN counts, as in numpy); then nonzero, X and the count ->
i64[rank, n], the coordinates of those elements in row-major order, never past n (the count the
lowering read into a symbol). X in any dtype of scalars.py; i64 results stored as two words (no
Int64). One invocation walks the data in order."""
from __future__ import annotations

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder, Value
from iree_py.codegen.spirv.indexing import Dim, dims, product, strides
from iree_py.codegen.spirv.scalars import SCALARS, load, scalar
from iree_py.codegen.spirv.typed_math import emit_cast
from iree_py.ir.types import DType


def element_types(spec: KernelSpec) -> list[str]:
    return [scalar(spec.inputs[0].dtype).storage] + ["i32"] * (len(spec.inputs) + len(spec.outputs) - 1)


def refusal(spec: KernelSpec) -> str | None:
    dtype = spec.inputs[0].dtype
    return None if dtype in SCALARS else f"{spec.kind} of dtype {dtype.value}"


def _is_nonzero(b: KernelBuilder, spec: KernelSpec, i: Value) -> Value:
    s = scalar(spec.inputs[0].dtype)
    return emit_cast(b, load(b, 0, i, s), s, scalar(DType.bool))


def _store_i64(b: KernelBuilder, binding: int, at: Value, value: Value) -> None:
    """A nonnegative i32 as the two words of an i64."""
    b.store(binding, at * 2, value)
    b.store(binding, at * 2 + 1, b.int(0))


def build_nonzero_count(b: KernelBuilder, spec: KernelSpec) -> Dim:
    with b.for_each(1):
        found = b.variable("i32", 0)
        with b.loop(0, b.dim(product(dims(spec.inputs[0])))) as i:
            found.set(found.get() + b.select(_is_nonzero(b, spec, i), b.int(1), b.int(0)))
        _store_i64(b, 1, b.int(0), found.get())
    return 1


def build_nonzero(b: KernelBuilder, spec: KernelSpec) -> Dim:
    shape = dims(spec.inputs[0])
    count = b.dim(dims(spec.outputs[0])[1])
    with b.for_each(1):
        position = b.variable("i32", 0)
        with b.loop(0, b.dim(product(shape))) as i:
            at = position.get()
            with b.if_(b.logical_and(_is_nonzero(b, spec, i), at < count)):
                for axis, (size, stride) in enumerate(zip(shape, strides(shape))):
                    _store_i64(b, 2, count * axis + at, (i / b.dim(stride)) % b.dim(size))
                position.set(at + 1)
    return 1
