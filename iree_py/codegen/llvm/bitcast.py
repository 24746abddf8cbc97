"""The "bitcast" kernel: the input's bytes, unchanged, as the output's element type of the same size
(ONNX BitCast), dims ints or Exprs. A flat copy of the elements as integers of that size
(copy_common.strided_gather)."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.copy_common import element_type, require_same_dims, strided_gather
from iree_py.codegen.llvm.dims import begin_dynamic_kernel
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
    grid = strided_gather(dk, target, (in_t.element_count,), [1], 0, elem)
    dk.finish()
    return dk.info(workgroup_count=(grid.groups, 1, 1))
