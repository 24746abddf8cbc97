"""The "slice" kernel for symbolic dims: out = in[start:end:step, ...] per axis (normalized
attributes, docs/ir.md; starts, ends and steps may be Exprs). Output index i on axis k reads
input index starts[k] + i * steps[k]; before anything is read the kernel checks, for every
non-empty output, that the first and last index of each axis lie inside the input (else it fails)."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import I1, const_i64
from iree_py.codegen.llvm.copy_common import element_type
from iree_py.codegen.llvm.dynamic.common import begin_dynamic_kernel
from iree_py.codegen.llvm.dynamic.copy_common import (attr_dim, fail_unless, row_major_strides,
                                                       strided_gather)
from iree_py.targets import Target


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"slice kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    in_t, out_t = spec.inputs[0], spec.outputs[0]
    if in_t.dtype != out_t.dtype:
        raise ValueError(f"{what}: dtype {in_t.dtype.value} != output {out_t.dtype.value}")
    starts, ends, steps = ([attr_dim(v) for v in spec.attrs[k]] for k in ("starts", "ends", "steps"))
    if not len(starts) == len(ends) == len(steps) == in_t.rank == out_t.rank:
        raise ValueError(f"{what}: starts {starts}, ends {ends}, steps {steps} and output {out_t} must each "
                         f"have one entry per axis of input {in_t}")
    if any(s == 0 for s in steps):
        raise ValueError(f"{what}: step 0 is not allowed (steps {steps})")
    elem = element_type(in_t.dtype.itemsize, what)
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    in_dims, out_dims = dk.dims(in_t), dk.dims(out_t)
    start_v, step_v = [dk.dim(s) for s in starts], [dk.dim(s) for s in steps]
    # Read only inside the input: an empty output reads nothing; otherwise on each axis the first
    # index (start) and the last (start + (n - 1) * step) must lie in [0, dim).
    zero = const_i64(0)
    empty: ir.Value = ir.Constant(I1, 0)
    inside: ir.Value = ir.Constant(I1, 1)
    for n, d, start, step in zip(out_dims, in_dims, start_v, step_v):
        empty = b.or_(empty, b.icmp_signed("==", n, zero))
        last = b.add(start, b.mul(b.sub(n, const_i64(1)), step))
        for index in (start, last):
            inside = b.and_(inside, b.and_(b.icmp_signed(">=", index, zero), b.icmp_signed("<", index, d)))
    fail_unless(dk, b.or_(empty, inside), "slice_bounds")
    in_strides = row_major_strides(b, in_dims)
    base: ir.Value = zero
    for start, stride in zip(start_v, in_strides):
        base = b.add(base, b.mul(start, stride))
    src_strides = [b.mul(step, stride) for step, stride in zip(step_v, in_strides)]
    grid = strided_gather(dk, out_t.shape, src_strides, base, elem)
    dk.finish()
    return dk.info(workgroup_count=(grid.groups, 1, 1))
