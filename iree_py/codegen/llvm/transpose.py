"""The "transpose" kernel: out = in.transpose(perm). Dims that stay adjacent are merged; the
kernel walks the output row-major as (rows..., cols) and gathers from the input (a vector copy when
the innermost output axis is also the input's innermost). Workgroups split the rows."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import static_shape, strides_of
from iree_py.codegen.llvm.copy_common import build_strided_gather, element_type


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"transpose kernel {spec.name}: expects 1 input and 1 output")
    in_t, out_t = spec.inputs[0], spec.outputs[0]
    in_shape = static_shape(in_t, f"transpose kernel {spec.name} input")
    out_shape = static_shape(out_t, f"transpose kernel {spec.name} output")
    perm = tuple(int(p) for p in spec.attrs.get("perm", range(len(in_shape) - 1, -1, -1)))
    if sorted(perm) != list(range(len(in_shape))):
        raise ValueError(f"transpose kernel {spec.name}: perm {perm} is not a permutation of rank {len(in_shape)}")
    if tuple(in_shape[p] for p in perm) != out_shape:
        raise ValueError(f"transpose kernel {spec.name}: output shape {out_shape} != input {in_shape} permuted by {perm}")
    in_strides = strides_of(in_shape)
    elem = element_type(in_t.dtype.itemsize, f"transpose kernel {spec.name}")
    grid = build_strided_gather(module, target, spec.name, out_shape, tuple(in_strides[p] for p in perm), 0, elem)
    return KernelInfo(spec.name, grid, (), (in_t.num_bytes, out_t.num_bytes))
