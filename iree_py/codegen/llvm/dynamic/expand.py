"""The "expand" kernel for symbolic dims: out = in broadcast numpy-style to attrs shape (which
may hold Exprs; codegen/llvm/expand.py is the static kernel). As in dynamic/elementwise.py an
input dim that is 1 at run time broadcasts (source stride 0), so one kernel serves both; a dim
that is neither 1 nor the output's makes the kernel fail before it reads anything."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import I1, const_i64
from iree_py.codegen.llvm.copy_common import element_type
from iree_py.codegen.llvm.dynamic.common import begin_dynamic_kernel
from iree_py.codegen.llvm.dynamic.copy_common import (attr_dim, fail_unless, require_same_dims,
                                                       row_major_strides, strided_gather)
from iree_py.targets import Target
from iree_py.ir.symbols import dim


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"expand kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    in_t, out_t = spec.inputs[0], spec.outputs[0]
    if in_t.dtype != out_t.dtype:
        raise ValueError(f"{what}: dtype {in_t.dtype.value} != output {out_t.dtype.value}")
    if in_t.rank > out_t.rank:
        raise ValueError(f"{what}: input {in_t} has more dims than the output {out_t}")
    shape = tuple(attr_dim(d) for d in spec.attrs.get("shape", out_t.shape))
    if len(shape) != out_t.rank:
        raise ValueError(f"{what}: attrs shape {list(shape)} does not have the output's rank ({out_t})")
    elem = element_type(in_t.dtype.itemsize, what)
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    require_same_dims(dk, [(s, o, f"attrs shape dim {k} vs output")
                           for k, (s, o) in enumerate(zip(shape, out_t.shape))], what)
    lead = out_t.rank - in_t.rank
    in_dims, out_dims = dk.dims(in_t), dk.dims(out_t)
    own = row_major_strides(b, in_dims)
    strides = [const_i64(0)] * out_t.rank
    fits: ir.Value = ir.Constant(I1, 1)
    for k, (static_in, d) in enumerate(zip(in_t.shape, in_dims)):
        axis = lead + k
        static_out = dim(out_t.shape[axis])
        if static_in == 1:
            continue
        if dim(static_in) == static_out:
            strides[axis] = own[k]
            continue
        if isinstance(static_in, int) and isinstance(static_out, int):
            raise ValueError(f"{what}: input {in_t} does not broadcast to output {out_t} (axis {axis})")
        is_one = b.icmp_signed("==", d, const_i64(1))
        fits = b.and_(fits, b.or_(is_one, b.icmp_signed("==", d, out_dims[axis])))
        strides[axis] = b.select(is_one, const_i64(0), own[k])
    fail_unless(dk, fits, "broadcast")
    grid = strided_gather(dk, out_t.shape, strides, const_i64(0), elem)
    dk.finish()
    return dk.info(workgroup_count=(grid.groups, 1, 1))
