"""The elementwise ops fused after a conv2d or matmul result (KernelSpec.epilogue), applied to one
output element before it is stored."""
from __future__ import annotations

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder, Value
from iree_py.codegen.spirv.math import binary, unary


def apply_epilogue(b: KernelBuilder, spec: KernelSpec, value: Value, out_index: Value, channel: Value) -> Value:
    """`channel`: the output element's channel (conv2d: axis 1; matmul: the last axis)."""
    for op in spec.epilogue:
        if op.operand is None:
            value = unary(b, op.op, value, op.attrs)
            continue
        at = {"scalar": b.int(0), "channel": channel, "full": out_index}[op.operand_kind]
        operand = b.load(op.operand, at)
        value = binary(b, op.op, operand, value) if op.operand_first else binary(b, op.op, value, operand)
    return value
