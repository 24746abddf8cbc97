"""The "matmul" kernel on f64 (matmul.py hands f64 specs here): A[..., M, K] @ B[..., K, N] with numpy
batch broadcasting, static shapes, in double precision.

One workgroup per (row, batch): a scalar dot product per output element, summed in order over K.
No fused epilogue: an f64 MatMul with one fails at compile time (the f32 epilogue code would not
apply).
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import begin_kernel, const_i64, entry_alloca, for_range
from iree_py.codegen.llvm.matmul import _batch_offsets, matmul_shape
from iree_py.codegen.llvm.typed_values import F64, const, load_typed, store_typed
from iree_py.targets import Target
from iree_py.ir.types import DType


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"matmul {spec.name} (f64)"
    if spec.epilogue:
        raise ValueError(f"{what}: fused epilogues ({', '.join(op.op for op in spec.epilogue)}) are not "
                         "supported on f64")
    if len(spec.inputs) != 2 or any(t.dtype != DType.f64 for t in (*spec.inputs, *spec.outputs)):
        raise ValueError(f"{what}: wants f64 A, B -> f64, got {list(spec.inputs)} -> {list(spec.outputs)}")
    shape = matmul_shape(spec)
    m, k, n = shape.m, shape.k, shape.n

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    a_ptr, b_ptr, out = kb.binding(0), kb.binding(1), kb.binding(2)
    a_off, b_off, out_off = _batch_offsets(b, shape, kb.workgroup_id_index(2))
    row = kb.workgroup_id_index(1)
    a_row = b.add(a_off, b.mul(row, const_i64(k)))
    out_row = b.add(out_off, b.mul(row, const_i64(n)))
    acc = entry_alloca(b, F64)
    with for_range(b, 0, n, name="n") as col:
        b.store(const(0.0, F64), acc)
        with for_range(b, 0, k, name="k") as j:
            x = load_typed(b, DType.f64, a_ptr, b.add(a_row, j))
            y = load_typed(b, DType.f64, b_ptr, b.add(b.add(b_off, b.mul(j, const_i64(n))), col))
            b.store(b.fadd(b.load(acc), b.fmul(x, y)), acc)
        store_typed(b, DType.f64, b.load(acc), out, b.add(out_row, col))
    kb.finish()
    lengths = tuple(t.num_bytes for t in spec.inputs) + (spec.outputs[0].num_bytes,)
    return KernelInfo(spec.name, (1, m, shape.batch_count), (), lengths)
