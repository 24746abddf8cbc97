"""The CPU backend's plan step: per dispatch, the kernel variant and weight layout its code path
wants for this target. Conv2d: the channel-vector path gets its constant weight packed
(weight_packing.py); QConv: the depthwise or dot-product kernel, with its packed weight
(qconv_packing.py); LSTM/GRU/RNN: constant W and R transposed, so each step's gates are one
matrix-vector product across rows (recurrent.py). Every other dispatch is unchanged."""
from __future__ import annotations

import dataclasses

import numpy as np

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
    if dispatch.spec.kind in RECURRENT_KINDS:
        return _with_transposed_recurrent_weights(dispatch)
    return dispatch


RECURRENT_KINDS = ("lstm", "gru", "rnn")


def _with_transposed_recurrent_weights(dispatch: Dispatch) -> Dispatch:
    """W [dirs, G*H, input] and R [dirs, G*H, H], when both are constants, become WT [dirs, input,
    G*H] and RT [dirs, H, G*H], and the spec says attrs weights_transposed."""
    w, r = dispatch.inputs[1], dispatch.inputs[2]
    if not (w.is_const and r.is_const):
        return dispatch
    inputs = list(dispatch.inputs)
    for i, value in ((1, w), (2, r)):
        data = np.ascontiguousarray(np.transpose(np.asarray(value.const), (0, 2, 1)))
        inputs[i] = Value(f"{value.name}.transposed", TensorType(value.type.dtype, data.shape), const=data)
    spec = dataclasses.replace(dispatch.spec, inputs=tuple(v.type for v in inputs),
                               attrs={**dispatch.spec.attrs, "weights_transposed": True})
    return Dispatch(dispatch.node, spec, inputs, dispatch.outputs)


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
