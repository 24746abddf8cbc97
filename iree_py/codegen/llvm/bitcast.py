"""The "bitcast" kernel: the input's bytes, unchanged, as the output's element type of the same size
(ONNX BitCast). A copy of the elements as integers of that size (copy_common.py)."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.copy_common import build_strided_gather, element_type


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    what = f"bitcast kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    in_t, out_t = spec.inputs[0], spec.outputs[0]
    if in_t.shape != out_t.shape or in_t.dtype.itemsize != out_t.dtype.itemsize:
        raise ValueError(f"{what}: {in_t} -> {out_t} must keep the shape and the element size")
    elem = element_type(in_t.dtype.itemsize, what)
    grid = build_strided_gather(module, target, spec.name, (in_t.num_elements,), (1,), 0, elem)
    return KernelInfo(spec.name, grid, (), (in_t.num_bytes, out_t.num_bytes))
