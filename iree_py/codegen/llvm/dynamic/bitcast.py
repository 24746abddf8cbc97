"""The "bitcast" kernel for symbolic dims (codegen/llvm/bitcast.py is the static kernel): the
input's bytes, unchanged, as the output's element type of the same size; a flat copy of the
elements as integers of that size."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import const_i64
from iree_py.codegen.llvm.copy_common import element_type
from iree_py.codegen.llvm.dynamic.common import begin_dynamic_kernel
from iree_py.codegen.llvm.dynamic.copy_common import require_same_dims, strided_gather
from iree_py.targets import Target


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"bitcast kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    in_t, out_t = spec.inputs[0], spec.outputs[0]
    if in_t.rank != out_t.rank or in_t.dtype.itemsize != out_t.dtype.itemsize:
        raise ValueError(f"{what}: {in_t} -> {out_t} must keep the shape and the element size")
    elem = element_type(in_t.dtype.itemsize, what)
    dk = begin_dynamic_kernel(module, spec, target)
    require_same_dims(dk, [(i, o, f"dim {k}") for k, (i, o) in enumerate(zip(in_t.shape, out_t.shape))], what)
    grid = strided_gather(dk, (in_t.element_count,), [const_i64(1)], const_i64(0), elem)
    dk.finish()
    return dk.info(workgroup_count=(grid.groups, 1, 1))
