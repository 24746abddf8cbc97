"""Partition: turn each dispatch region of an optimized graph into a KernelSpec.

After the passes, every node that is not a view (Reshape) is one dispatch region: its op, plus the
elementwise nodes the fusion pass folded into it (`node.fused`, applied in order). This module
decides the kernel kind, its inputs (the bindings) and, for fused elementwise ops, the epilogue or
the elementwise expression. What is specific to a backend (its kernel variants, re-laid-out constant
weights) is the backend's plan step (codegen/backend.py), applied after this one.
"""
from __future__ import annotations

from dataclasses import dataclass

from iree_py.codegen.kernel_spec import (EXPR_BINARY_OPS, EXPR_TERNARY_OPS, EXPR_UNARY_OPS, UNARY_OPS, EpilogueOp,
                                        Expr, ExprStep, KernelSpec)
from iree_py.errors import CompileError
from iree_py.ir.graph import Node, Value

ELEMENTWISE_OPS = (*EXPR_UNARY_OPS, *EXPR_BINARY_OPS, *EXPR_TERNARY_OPS)

# op -> (kernel kind, attributes copied to the spec)
DIRECT_KERNELS: dict[str, tuple[str, tuple[str, ...]]] = {
    "Conv": ("conv2d", ("strides", "pads", "dilations", "group")),
    "MatMul": ("matmul", ()),
    "MaxPool": ("maxpool", ("kernel", "strides", "pads", "dilations", "ceil_mode")),
    "MaxPoolIndices": ("maxpool_index", ("kernel", "strides", "pads", "dilations", "ceil_mode", "storage_order")),
    "AveragePool": ("avgpool", ("kernel", "strides", "pads", "ceil_mode", "count_include_pad", "dilations")),
    "GlobalAveragePool": ("globalavgpool", ()),
    "Softmax": ("softmax", ("axis",)),
    "LogSoftmax": ("logsoftmax", ("axis",)),
    "Hardmax": ("hardmax", ("axis",)),
    "Reduce": ("reduce", ("kind", "axes", "keepdims")),
    "LRN": ("lrn", ("size", "alpha", "beta", "bias")),
    "Transpose": ("transpose", ("perm",)),
    "Slice": ("slice", ("starts", "ends", "steps")),
    "Concat": ("concat", ("axis",)),
    "Quantize": ("quantize", ("axis", "dtype", "rounding", "scale", "zero_point")),
    "Dequantize": ("dequantize", ("axis", "scale", "zero_point")),
    "QConv": ("qconv", ("strides", "pads", "dilations", "group", "x_zero_point", "w_zero_point", "y_zero_point", "out_dtype", "act_min", "act_max", "requant", "multiplier", "shift", "scale")),
    "QMatMul": ("qmatmul", ("x_zero_point", "w_zero_point", "y_zero_point", "out_dtype", "act_min", "act_max", "requant", "multiplier", "shift", "scale")),
    "QAdd": ("qadd", ("a_zero_point", "b_zero_point", "y_zero_point", "left_shift", "a_multiplier", "a_shift",
                      "b_multiplier", "b_shift", "y_multiplier", "y_shift", "act_min", "act_max", "out_dtype")),
    "QAveragePool": ("qavgpool", ("kernel", "strides", "pads", "ceil_mode", "count_include_pad", "act_min", "act_max")),
    "Gather": ("gather", ("axis",)),
    "GatherElements": ("gather_elements", ("axis",)),
    "GatherND": ("gather_nd", ("batch_dims",)),
    "ScatterElements": ("scatter_elements", ("axis", "reduction")),
    "ScatterND": ("scatter_nd", ("reduction",)),
    "Expand": ("expand", ("shape",)),
    "Resize": ("resize", ("sizes", "taps", "extrapolation_value")),
    "Pad": ("pad", ("mode", "pads", "value")),
    "ArgMax": ("argmax", ("axis", "select_last_index")),
    "ArgMin": ("argmin", ("axis", "select_last_index")),
    "CumSum": ("cumsum", ("axis", "exclusive", "reverse")),
    "TopK": ("topk", ("axis", "k", "largest", "result")),
    "LSTM": ("lstm", ("direction", "hidden_size", "activations", "activation_alpha", "activation_beta", "clip",
                      "result", "input_forget")),
    "GRU": ("gru", ("direction", "hidden_size", "activations", "activation_alpha", "activation_beta", "clip",
                    "result", "linear_before_reset")),
    "RNN": ("rnn", ("direction", "hidden_size", "activations", "activation_alpha", "activation_beta", "clip",
                    "result")),
    "QLSTM": ("qlstm", ("direction", "hidden_size", "activations", "activation_alpha", "activation_beta", "clip",
                        "result", "input_forget", "r_zero_point", "finished_as_zero")),
    "ConvTranspose": ("conv_transpose", ("strides", "pads", "dilations", "group")),
    "LpPool": ("lppool", ("kernel", "strides", "pads", "dilations", "ceil_mode", "p")),
    "QConvTranspose": ("qconv_transpose", ("strides", "pads", "dilations", "group", "x_zero_point", "w_zero_point",
                                           "y_zero_point", "out_dtype", "act_min", "act_max", "requant",
                                           "multiplier", "shift", "scale")),
    "QSoftmax": ("qsoftmax", ("input_multiplier", "input_left_shift", "diff_min", "out_dtype")),
    "QLookup": ("qlookup", ("table", "out_dtype")),
    "CumProd": ("cumprod", ("axis", "exclusive", "reverse")),
    "BitCast": ("bitcast", ("to",)),
    "ReduceRuntimeAxes": ("reduce_rt", ("kind", "keepdims")),
    "ResizeRuntime": ("resize_rt", ("antialias", "axes", "coordinate_mode", "cubic_coeff_a", "exclude_outside",
                                   "extrapolation_value", "mode", "nearest_mode", "scales_from_sizes")),
    "NonZeroCount": ("nonzero_count", ()),
    "NonZero": ("nonzero", ("count",)),
    "UniqueCount": ("unique_count", ("axis",)),
    "Unique": ("unique", ("axis", "count", "result", "sorted")),
    "NmsSelect": ("nms_select", ("center_point_box", "use_score_threshold")),
    "NmsOutput": ("nms_output", ("count",)),
    "RoiAlign": ("roi_align", ("mode", "output_height", "output_width", "sampling_ratio", "spatial_scale",
                               "half_pixel")),
    "StringEqual": ("string_equal", ()),
}
EPILOGUE_ROOTS = ("Conv", "MatMul")

# ConvInteger / MatMulInteger run on the qconv / qmatmul kernels without requantization (int32 out).
# op -> (kernel kind, attributes copied to the spec)
INTEGER_KERNELS: dict[str, tuple[str, tuple[str, ...]]] = {
    "ConvInteger": ("qconv", ("strides", "pads", "dilations", "group")),
    "MatMulInteger": ("qmatmul", ()),
}
NO_REQUANT = {"y_zero_point": 0, "out_dtype": "i32", "act_min": -(1 << 31), "act_max": (1 << 31) - 1,
              "requant": "none", "multiplier": [], "shift": [], "scale": []}


@dataclass
class Dispatch:
    node: Node
    spec: KernelSpec
    inputs: list[Value]   # the bound values, in spec.inputs order
    outputs: list[Value]


def _attrs(node: Node) -> tuple[tuple[str, float], ...]:
    return tuple((name, float(node.attrs[name])) for name in EXPR_UNARY_OPS.get(node.op, ()))


def _sources(node: Node) -> dict[str, str]:
    """Source node name -> the IR op of its first node in the region (Gemm -> MatMul + Add: one name)."""
    sources: dict[str, str] = {}
    for n in (node, *node.fused):
        sources.setdefault(n.name, n.op)
    return sources


def _source_nodes(node: Node) -> tuple[str, ...]:
    return tuple(_sources(node))


def _source_ops(node: Node) -> tuple[str, ...]:
    return tuple(_sources(node).values())


def _unsupported(node: Node, why: str) -> CompileError:
    return CompileError(f"node '{node.name}' (op {node.op}): {why}")


def _chain_operand(f: Node, running: Value) -> tuple[Value | None, bool]:
    """The other operand of fused node f (None for unary ops) and whether it comes first."""
    if f.op in UNARY_OPS:
        return None, False
    lhs, rhs = f.inputs
    if lhs is running and rhs is not running:
        return rhs, False
    if rhs is running and lhs is not running:
        return lhs, True
    raise _unsupported(f, "fused binary op must combine the running value with one other operand")


def _epilogue_spec(node: Node, name: str, kind: str, attrs: dict, defined: set[int]) -> Dispatch:
    inputs = [v for v in node.inputs if v is not None]
    out_type = node.outputs[0].type
    epilogue: list[EpilogueOp] = []
    running = root_result(node, defined)
    for f in node.fused:
        other, first = _chain_operand(f, running)
        if other is None:
            epilogue.append(EpilogueOp(f.op, _attrs(f)))
        else:
            if other not in inputs:
                inputs.append(other)
            epilogue.append(EpilogueOp(f.op, operand=inputs.index(other), operand_kind=_operand_kind(node, other),
                                       operand_first=first))
        running = f.outputs[0]
    spec = KernelSpec(name, kind, tuple(v.type for v in inputs), (out_type,), attrs, tuple(epilogue),
                      _source_nodes(node), _source_ops(node))
    return Dispatch(node, spec, inputs, list(node.outputs))


def root_result(node: Node, defined: set[int]) -> Value:
    """The root op's own result. With fused ops it is the intermediate value that fused[0] reads and
    that no remaining graph node defines (the fusion pass removed its other users)."""
    if not node.fused:
        return node.outputs[0]
    candidates = [v for v in node.fused[0].inputs if v is not None and not v.is_const and id(v) not in defined]
    if len(candidates) != 1:
        raise _unsupported(node, f"fused chain does not start from the root's result (candidates: {candidates})")
    return candidates[0]


def _operand_kind(node: Node, operand: Value) -> str:
    out_shape = node.outputs[0].type.shape
    shape = operand.type.shape
    if operand.type.element_count == 1:
        return "scalar"
    # Right-align the operand's shape against the output's.
    padded = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    if padded == tuple(out_shape):
        return "full"
    varying = [i for i, d in enumerate(padded) if d != 1]
    channel_axis = 1 if node.op == "Conv" else len(out_shape) - 1
    if varying == [channel_axis] and padded[channel_axis] == out_shape[channel_axis]:
        return "channel"
    raise _unsupported(node, f"cannot fuse an operand of shape {list(shape)} into an output of shape {list(out_shape)}")


def _elementwise_spec(node: Node, name: str, defined: set[int]) -> Dispatch:
    inputs: list[Value] = []
    steps: list[ExprStep] = []

    def arg(v: Value, produced: dict[int, int]) -> tuple[str, int]:
        if id(v) in produced:
            return ("step", produced[id(v)])
        if v not in inputs:
            inputs.append(v)
        return ("in", inputs.index(v))

    produced: dict[int, int] = {}
    results = [root_result(node, defined), *(f.outputs[0] for f in node.fused)]
    for n, result in zip([node, *node.fused], results):
        steps.append(ExprStep(n.op, tuple(arg(v, produced) for v in n.inputs), _attrs(n), result.type.dtype))
        produced[id(result)] = len(steps) - 1
    out = node.outputs[0]
    spec = KernelSpec(name, "elementwise", tuple(v.type for v in inputs), (out.type,), {"expr": Expr(tuple(steps))},
                      (), _source_nodes(node), _source_ops(node))
    return Dispatch(node, spec, inputs, [out])


def _integer_spec(node: Node, name: str) -> Dispatch:
    """ConvInteger / MatMulInteger as a qconv / qmatmul spec with requant "none". A constant zero
    point becomes the kernel's attribute (x_zero_point when it is one value, w_zero_point per
    channel / column); a computed one (DynamicQuantizeLinear), or a per-row one, stays a binding, and
    attrs operands name the bindings (codegen/llvm/requant.py)."""
    kind, attr_names = INTEGER_KERNELS[node.op]
    if node.fused:
        raise _unsupported(node, "ops were fused into a kernel that takes no epilogue")
    x, w, x_zp, w_zp = node.inputs
    attrs = {a: node.attrs[a] for a in attr_names}
    attrs.update(NO_REQUANT, x_zero_point=0, w_zero_point=[0])
    inputs, operands = [x, w], ["x", "w"]
    if x_zp.is_const and x_zp.type.element_count == 1:
        attrs["x_zero_point"] = int(x_zp.const.reshape(-1)[0])
    else:
        inputs.append(x_zp)
        operands.append("x_zero_point")
    if w_zp.is_const:
        attrs["w_zero_point"] = [int(z) for z in w_zp.const.reshape(-1)]
    else:
        inputs.append(w_zp)
        operands.append("w_zero_point")
    attrs["operands"] = tuple(operands)
    spec = KernelSpec(name, kind, tuple(v.type for v in inputs), (node.outputs[0].type,), attrs, (),
                      _source_nodes(node), _source_ops(node))
    return Dispatch(node, spec, inputs, list(node.outputs))


def dispatch_for(node: Node, name: str, defined: set[int]) -> Dispatch:
    """The kernel for one dispatch region. `defined`: ids of the graph's inputs and node results."""
    if node.op in ELEMENTWISE_OPS:
        return _elementwise_spec(node, name, defined)
    if node.op in INTEGER_KERNELS:
        return _integer_spec(node, name)
    if node.op not in DIRECT_KERNELS:
        raise _unsupported(node, "no kernel for this op")
    kind, attr_names = DIRECT_KERNELS[node.op]
    attrs = {a: node.attrs[a] for a in attr_names}
    if node.op in EPILOGUE_ROOTS:
        return _epilogue_spec(node, name, kind, attrs, defined)
    if node.fused:
        raise _unsupported(node, "ops were fused into a kernel that takes no epilogue")
    inputs = [v for v in node.inputs if v is not None]
    spec = KernelSpec(name, kind, tuple(v.type for v in inputs), tuple(v.type for v in node.outputs), attrs, (),
                      _source_nodes(node), _source_ops(node))
    return Dispatch(node, spec, inputs, list(node.outputs))
