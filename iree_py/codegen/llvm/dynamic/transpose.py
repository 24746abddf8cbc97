"""The "transpose" kernel for symbolic dims: out = in.transpose(perm), the output walked
row-major and gathered from the input with run-time strides (codegen/llvm/transpose.py is the
static kernel)."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import const_i64
from iree_py.codegen.llvm.copy_common import element_type
from iree_py.codegen.llvm.dynamic.common import begin_dynamic_kernel
from iree_py.codegen.llvm.dynamic.copy_common import require_same_dims, row_major_strides, strided_gather
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
        raise ValueError(f"{what}: perm {perm} does not take {in_t} to {out_t}")
    elem = element_type(in_t.dtype.itemsize, what)
    dk = begin_dynamic_kernel(module, spec, target)
    require_same_dims(dk, [(in_t.shape[p], out_t.shape[k], f"output dim {k} vs input dim {p}")
                           for k, p in enumerate(perm)], what)
    in_strides = row_major_strides(dk.builder, dk.dims(in_t))
    grid = strided_gather(dk, out_t.shape, [in_strides[p] for p in perm], const_i64(0), elem)
    dk.finish()
    return dk.info(workgroup_count=(grid.groups, 1, 1))
