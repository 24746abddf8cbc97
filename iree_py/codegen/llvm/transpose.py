"""The "transpose" kernel: out = in.transpose(perm), dims ints or Exprs. The output is walked
row-major as (rows..., cols) and gathered from the input (copy_common.strided_gather): dims that
stay adjacent are merged, and the innermost run is a vector copy when the innermost output axis is
also the input's. Workgroups split the rows."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.copy_common import element_type, require_same_dims, strided_gather
from iree_py.codegen.llvm.dims import begin_dynamic_kernel
from iree_py.codegen.llvm.shapes import row_major
from iree_py.targets import Target


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"transpose kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    in_t, out_t = spec.inputs[0], spec.outputs[0]
    if in_t.dtype != out_t.dtype:
        raise ValueError(f"{what}: dtype {in_t.dtype.value} != output {out_t.dtype.value}")
    perm = tuple(int(p) for p in spec.attrs.get("perm", range(in_t.rank - 1, -1, -1)))
    if sorted(perm) != list(range(in_t.rank)) or out_t.rank != in_t.rank:
        raise ValueError(f"{what}: perm {perm} is not a permutation of rank {in_t.rank} taking {in_t} to {out_t}")
    elem = element_type(in_t.dtype.itemsize, what)
    dk = begin_dynamic_kernel(module, spec, target)
    require_same_dims(dk, [(in_t.shape[p], out_t.shape[k], f"output dim {k} vs input dim {p}")
                           for k, p in enumerate(perm)], what)
    in_strides = row_major(in_t.shape)
    grid = strided_gather(dk, target, out_t.shape, [in_strides[p] for p in perm], 0, elem)
    dk.finish()
    return dk.info(workgroup_count=(grid.groups, 1, 1))
