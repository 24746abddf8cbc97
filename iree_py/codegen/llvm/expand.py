"""The "expand" kernel: out = in broadcast numpy-style to attrs shape (ONNX Expand, Tile), dims
ints or Exprs. A strided gather (copy_common.strided_gather) whose broadcast dims have source
stride 0 (shapes.broadcast_strides). An input dim that is neither known to be 1 nor known to equal
the output's broadcasts when it is 1 at run time (a RuntimeBroadcast stride, chosen by the kernel),
so one kernel serves both; a dim that is neither 1 nor the output's at run time makes the kernel
fail before it reads anything."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.copy_common import attr_dim, element_type, require_same_dims, strided_gather
from iree_py.codegen.llvm.dims import Agreements, begin_dynamic_kernel
from iree_py.codegen.llvm.shapes import broadcast_strides
from iree_py.targets import Target


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
    strides = broadcast_strides(in_t.shape, out_t.shape, what)
    fits = Agreements(what)  # each input dim is 1 or the output's (a known pair: checked above)
    lead = out_t.rank - in_t.rank
    for k, size in enumerate(in_t.shape):
        fits.one_or_equal(size, out_t.shape[lead + k], f"input dim {k}")
    elem = element_type(in_t.dtype.itemsize, what)
    dk = begin_dynamic_kernel(module, spec, target)
    require_same_dims(dk, [(s, o, f"attrs shape dim {k} vs output")
                           for k, (s, o) in enumerate(zip(shape, out_t.shape))], what)
    fits.emit(dk)
    grid = strided_gather(dk, target, out_t.shape, strides, 0, elem)
    dk.finish()
    return dk.info(workgroup_count=(grid.groups, 1, 1))
