"""The "expand" kernel: out = in broadcast numpy-style to attrs shape (ONNX Expand, Tile). A
strided gather whose broadcast dims have source stride 0."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import static_shape
from iree_py.codegen.llvm.copy_common import build_strided_gather, element_type
from iree_py.codegen.llvm.shapes import broadcast_strides


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"expand kernel {spec.name}: expects 1 input and 1 output")
    in_t, out_t = spec.inputs[0], spec.outputs[0]
    if in_t.dtype != out_t.dtype:
        raise ValueError(f"expand kernel {spec.name}: dtype {in_t.dtype.value} != output {out_t.dtype.value}")
    in_shape = static_shape(in_t, f"expand kernel {spec.name} input")
    out_shape = static_shape(out_t, f"expand kernel {spec.name} output")
    if tuple(int(d) for d in spec.attrs.get("shape", out_shape)) != out_shape:
        raise ValueError(f"expand kernel {spec.name}: attrs shape {spec.attrs['shape']} != output {out_shape}")
    strides = broadcast_strides(in_shape, out_shape, f"expand kernel {spec.name}")
    elem = element_type(in_t.dtype.itemsize, f"expand kernel {spec.name}")
    grid = build_strided_gather(module, target, spec.name, out_shape, strides, 0, elem)
    return KernelInfo(spec.name, grid, (), (in_t.num_bytes, out_t.num_bytes))
