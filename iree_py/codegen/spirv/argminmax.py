"""ArgMax and ArgMin on SPIR-V: the index of the largest / smallest f32 along attrs axis, the first
on ties (the last with select_last_index), as the CPU backend's (codegen/llvm/argminmax.py):
element 0 is the start, a later one replaces it only where it compares better (ordered, so a NaN
never does). The input seen as [outer, n, inner]; one invocation per output. The i64 result is
stored as two words (the index, then 0), so no Int64 capability is needed; an empty axis gives 0."""
from __future__ import annotations

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder, Value
from iree_py.codegen.spirv.indexing import Dim, dims, product


def _build(b: KernelBuilder, spec: KernelSpec, largest: bool) -> Dim:
    shape = dims(spec.inputs[0])
    axis = int(spec.attrs["axis"])
    last = bool(spec.attrs.get("select_last_index", 0))
    outer, n, inner = product(shape[:axis]), shape[axis], product(shape[axis + 1:])
    outputs = product([outer, inner])

    def better(v: Value, best: Value) -> Value:
        if largest:
            return v >= best if last else v > best
        return v <= best if last else v < best

    with b.for_each(outputs) as out:
        base = (out / b.dim(inner)) * b.dim(product([n, inner])) + out % b.dim(inner)
        best, best_index = b.variable("f32", 0.0), b.variable("i32", 0)
        with b.loop(0, b.dim(n)) as j:
            v = b.load(0, base + j * b.dim(inner))
            take = b.logical_or(j.eq(0), better(v, best.get()))
            best.set(b.select(take, v, best.get()))
            best_index.set(b.select(take, j, best_index.get()))
        b.store(1, out * 2, best_index.get())
        b.store(1, out * 2 + 1, b.int(0))
    return outputs


def build_argmax(b: KernelBuilder, spec: KernelSpec) -> Dim:
    return _build(b, spec, largest=True)


def build_argmin(b: KernelBuilder, spec: KernelSpec) -> Dim:
    return _build(b, spec, largest=False)
