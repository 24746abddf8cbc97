"""The "slice" kernel: out = in[start:end:step, ...] per axis (normalized attributes, docs/ir.md;
steps may be negative). A strided gather: output index i on axis k reads input index
starts[k] + i * steps[k]."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import static_shape, strides_of
from iree_py.codegen.llvm.copy_common import build_strided_gather, element_type
from iree_py.ir.ops import slice_length


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"slice kernel {spec.name}: expects 1 input and 1 output")
    in_t, out_t = spec.inputs[0], spec.outputs[0]
    in_shape = static_shape(in_t, f"slice kernel {spec.name} input")
    out_shape = static_shape(out_t, f"slice kernel {spec.name} output")
    starts, ends, steps = ([int(v) for v in spec.attrs[k]] for k in ("starts", "ends", "steps"))
    if not len(starts) == len(ends) == len(steps) == len(in_shape) == len(out_shape):
        raise ValueError(f"slice kernel {spec.name}: starts {starts}, ends {ends}, steps {steps} and output "
                         f"{out_shape} must each have one entry per axis of input {in_shape}")
    if in_t.dtype != out_t.dtype:
        raise ValueError(f"slice kernel {spec.name}: dtype {in_t.dtype.value} != output {out_t.dtype.value}")
    for axis, (dim, start, end, step) in enumerate(zip(in_shape, starts, ends, steps)):
        try:
            want = slice_length(dim, start, end, step)
        except ValueError as e:
            raise ValueError(f"slice kernel {spec.name} axis {axis}: {e}") from None
        if want != out_shape[axis]:
            raise ValueError(f"slice kernel {spec.name} axis {axis}: {start}:{end}:{step} of {dim} gives {want}, "
                             f"output has {out_shape[axis]}")
    in_strides = strides_of(in_shape)
    base = sum(start * stride for start, stride in zip(starts, in_strides))
    src_strides = tuple(step * stride for step, stride in zip(steps, in_strides))
    elem = element_type(in_t.dtype.itemsize, f"slice kernel {spec.name}")
    grid = build_strided_gather(module, target, spec.name, out_shape, src_strides, base, elem)
    return KernelInfo(spec.name, grid, (), (in_t.num_bytes, out_t.num_bytes))
