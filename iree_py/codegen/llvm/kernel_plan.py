"""The CPU backend's plan step: per dispatch, the kernel variant and weight layout its code path
wants for this target. Conv2d: the channel-vector path gets its constant weight packed
(weight_packing.py); QConv: the depthwise or dot-product kernel, with its packed weight
(qconv_packing.py). Every other dispatch is unchanged."""
from __future__ import annotations

import dataclasses

from iree_py.codegen.dispatch import Dispatch
from iree_py.codegen.llvm.conv import choose_conv_strategy, conv_shape
from iree_py.codegen.llvm.qconv_packing import choose_qconv_kernel
from iree_py.codegen.llvm.weight_packing import M_BLOCKED, pack_m_blocked
from iree_py.ir.graph import Value
from iree_py.ir.types import TensorType
from iree_py.targets import Target


def plan(dispatch: Dispatch, target: Target) -> Dispatch:
    if dispatch.spec.kind == "conv2d":
        return _with_packed_conv_weight(dispatch, target)
    if dispatch.spec.kind == "qconv":
        return choose_qconv_kernel(dispatch, target)
    return dispatch


def _with_packed_conv_weight(dispatch: Dispatch, target: Target) -> Dispatch:
    """A Conv whose weight is a constant and whose chosen code path (choose_conv_strategy) wants
    it packed: the weight binding becomes a new constant holding the packed array, and the spec
    says so (attrs weight_layout, weight_lanes). Any other dispatch: unchanged."""
    x, weight = dispatch.inputs[0], dispatch.inputs[1]
    if not weight.is_const or any(op.operand == 1 for op in dispatch.spec.epilogue):
        return dispatch
    if len(x.type.shape) != 4 or len(weight.type.shape) != 4:
        return dispatch
    strategy = choose_conv_strategy(conv_shape(dispatch.spec), target)
    if strategy.path != "channels":
        return dispatch
    group = int(dispatch.spec.attrs.get("group", 1))
    packed = pack_m_blocked(weight.const, group, strategy.lanes)
    packed_value = Value(f"{weight.name}.{M_BLOCKED}{strategy.lanes}", TensorType(weight.type.dtype, packed.shape),
                         const=packed)
    inputs = [dispatch.inputs[0], packed_value, *dispatch.inputs[2:]]
    spec = dataclasses.replace(dispatch.spec, inputs=tuple(v.type for v in inputs),
                               attrs={**dispatch.spec.attrs, "weight_layout": M_BLOCKED,
                                      "weight_lanes": strategy.lanes})
    return Dispatch(dispatch.node, spec, inputs, dispatch.outputs)
