"""The "slice" kernel: out = in[start:end:step, ...] per axis (normalized attributes, docs/ir.md;
steps may be negative; dims, starts and steps ints or Exprs). A strided gather
(copy_common.strided_gather): output index i on axis k reads input index starts[k] + i * steps[k].

An axis whose sizes are all known is checked when the kernel is built. On the others the kernel
checks, for a non-empty output, that the first and last index it reads lie inside the input before
anything is read (else it fails)."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import I1, const_i64
from iree_py.codegen.llvm.copy_common import attr_dim, element_type, fail_unless, strided_gather, total
from iree_py.codegen.llvm.dims import DynamicKernel, begin_dynamic_kernel
from iree_py.codegen.llvm.shapes import row_major
from iree_py.ir.ops import slice_length
from iree_py.ir.symbols import Expr, dim
from iree_py.ir.types import Dim, TensorType
from iree_py.targets import Target


def _check_reads_inside(dk: DynamicKernel, in_t: TensorType, out_t: TensorType, starts: list[Dim],
                        steps: list[Dim], axes: list[int]) -> None:
    """Fail unless the output is empty or, on each of `axes`, the first index (start) and the last
    (start + (n - 1) * step) lie in [0, dim)."""
    b = dk.builder
    zero = const_i64(0)
    empty: ir.Value = ir.Constant(I1, 0)
    for n in out_t.shape:
        if not isinstance(n, int):
            empty = b.or_(empty, b.icmp_signed("==", dk.dim(n), zero))
    inside: ir.Value = ir.Constant(I1, 1)
    for axis in axes:
        n, size, start, step = (dk.dim(d) for d in (out_t.shape[axis], in_t.shape[axis], starts[axis], steps[axis]))
        last = b.add(start, b.mul(b.sub(n, const_i64(1)), step))
        for index in (start, last):
            inside = b.and_(inside, b.and_(b.icmp_signed(">=", index, zero), b.icmp_signed("<", index, size)))
    fail_unless(dk, b.or_(empty, inside), "slice_bounds")


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
    symbolic_axes = []
    for axis, sizes in enumerate(zip(in_t.shape, starts, ends, steps, out_t.shape)):
        if not all(isinstance(d, int) for d in sizes):
            symbolic_axes.append(axis)
            continue
        size, start, end, step, out = sizes
        try:
            want = slice_length(size, start, end, step)
        except ValueError as e:
            raise ValueError(f"{what} axis {axis}: {e}") from None
        if want != out:
            raise ValueError(f"{what} axis {axis}: {start}:{end}:{step} of {size} gives {want}, output has {out}")
    elem = element_type(in_t.dtype.itemsize, what)
    dk = begin_dynamic_kernel(module, spec, target)
    if symbolic_axes and 0 not in out_t.shape:
        _check_reads_inside(dk, in_t, out_t, starts, steps, symbolic_axes)
    in_strides = row_major(in_t.shape)
    base = total([Expr.of(start) * stride for start, stride in zip(starts, in_strides)])
    src_strides = [dim(Expr.of(step) * stride) for step, stride in zip(steps, in_strides)]
    grid = strided_gather(dk, target, out_t.shape, src_strides, base, elem)
    dk.finish()
    return dk.info(workgroup_count=(grid.groups, 1, 1))
