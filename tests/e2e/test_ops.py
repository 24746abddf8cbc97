"""Every op of the spine, differential-tested against the reference (onnxruntime; the specification
for integer products: harness.run_reference) through the whole toolchain
(ONNX frontend, passes, LLVM kernels, module, C runtime) on this host, and on arm64 and riscv64
under qemu; riscv64-rvv (vector kernels) runs the cases that vectorize.
Tolerance: 1e-4 of the reference's largest magnitude."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from harness import RVV_TARGET, TARGETS, check_against_reference, model

rng = np.random.default_rng(42)


def w(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def node(op: str, ins: list[str], outs: list[str] | None = None, **attrs):
    return helper.make_node(op, ins, outs or ["y"], name=f"{op.lower()}_node", **attrs)


def conv(x_shape, w_shape, bias=True, opset=13, **attrs):
    inits = {"W": w(*w_shape)}
    ins = ["x", "W"]
    if bias:
        inits["B"] = w(w_shape[0])
        ins.append("B")
    return model([node("Conv", ins, **attrs)], {"x": x_shape}, ["y"], inits, opset)


def unary(op, shape=(2, 3, 5, 7), opset=13, **attrs):
    return model([node(op, ["x"], **attrs)], {"x": shape}, ["y"], opset=opset)


def binary(op, a, b, opset=13, const_b=False):
    if const_b:
        return model([node(op, ["a", "b"])], {"a": a}, ["y"], {"b": w(*b)}, opset)
    return model([node(op, ["a", "b"])], {"a": a, "b": b}, ["y"], opset=opset)


def int64_input(m, name: str):
    """`m` with graph input `name` typed int64 (the harness feeds it small indices in [-2, 2))."""
    next(i for i in m.graph.input if i.name == name).type.tensor_type.elem_type = TensorProto.INT64
    return m


def retyped(m, **elem_types: int):
    """`m` with the named graph inputs/outputs given these ONNX element types (TensorProto.INT32, ...)."""
    for v in [*m.graph.input, *m.graph.output]:
        if v.name in elem_types:
            v.type.tensor_type.elem_type = elem_types[v.name]
    return m


def int64_output(m):
    """`m` with its first graph output typed int64 (ArgMax, TopK indices)."""
    m.graph.output[0].type.tensor_type.elem_type = TensorProto.INT64
    return m


CASES = {
    # Conv: pads, strides, dilations, groups, auto_pad, 1x1, no bias, 1-D.
    "conv_3x3_pad1": conv((1, 3, 9, 9), (8, 3, 3, 3), pads=[1, 1, 1, 1]),
    "conv_stride2_asym_pads": conv((2, 4, 11, 10), (6, 4, 3, 3), strides=[2, 2], pads=[0, 1, 2, 1]),
    "conv_dilation2": conv((1, 5, 12, 12), (7, 5, 3, 3), dilations=[2, 2], pads=[2, 2, 2, 2]),
    "conv_group2": conv((1, 8, 7, 7), (6, 4, 3, 3), group=2, pads=[1, 1, 1, 1]),
    "conv_depthwise": conv((1, 16, 10, 10), (16, 1, 3, 3), group=16, pads=[1, 1, 1, 1]),
    "conv_same_upper_stride2": conv((1, 3, 10, 9), (4, 3, 3, 3), auto_pad="SAME_UPPER", strides=[2, 2]),
    "conv_same_lower": conv((1, 3, 8, 8), (4, 3, 4, 4), auto_pad="SAME_LOWER"),
    "conv_valid_5x5_nobias": conv((1, 2, 13, 13), (3, 2, 5, 5), bias=False, auto_pad="VALID"),
    "conv_1x1": conv((1, 32, 6, 6), (20, 32, 1, 1)),
    "conv_1x7": conv((1, 4, 9, 9), (5, 4, 1, 7), pads=[0, 3, 0, 3]),
    "conv_1d": conv((2, 3, 17), (4, 3, 3), pads=[1, 1]),
    "conv_opset7": conv((1, 3, 6, 6), (4, 3, 3, 3), opset=7, pads=[1, 1, 1, 1]),
    # Short output rows: the channel-vector conv path (conv_channels.py) with packed weights.
    "conv_7x7_64to96_pad1": conv((1, 64, 7, 7), (96, 64, 3, 3), pads=[1, 1, 1, 1]),
    "conv_14x14_stride2_m40": conv((2, 24, 28, 28), (40, 24, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1]),
    # Gemm / MatMul.
    "gemm_plain": model([node("Gemm", ["a", "b", "c"])], {"a": (5, 7)}, ["y"], {"b": w(7, 3), "c": w(3)}),
    "gemm_trans_alpha_beta": model([node("Gemm", ["a", "b", "c"], transA=1, transB=1, alpha=0.5, beta=2.0)],
                                   {"a": (7, 5)}, ["y"], {"b": w(3, 7), "c": w(5, 3)}),
    "gemm_c_row": model([node("Gemm", ["a", "b", "c"])], {"a": (4, 6)}, ["y"], {"b": w(6, 9), "c": w(1, 9)}),
    "gemm_c_scalar_opset9": model([node("Gemm", ["a", "b", "c"])], {"a": (4, 6)}, ["y"], {"b": w(6, 9), "c": w(1)}, 9),
    "gemm_no_c_opset11": model([node("Gemm", ["a", "b"], transB=1)], {"a": (2, 6)}, ["y"], {"b": w(5, 6)}, 11),
    "gemm_both_inputs": model([node("Gemm", ["a", "b"])], {"a": (3, 4), "b": (4, 5)}, ["y"]),
    "matmul_2d": model([node("MatMul", ["a", "b"])], {"a": (17, 33)}, ["y"], {"b": w(33, 19)}),
    "matmul_batched": model([node("MatMul", ["a", "b"])], {"a": (2, 3, 5, 8), "b": (2, 3, 8, 4)}, ["y"]),
    "matmul_broadcast": model([node("MatMul", ["a", "b"])], {"a": (3, 5, 8)}, ["y"], {"b": w(8, 6)}),
    "matmul_vec": model([node("MatMul", ["a", "b"])], {"a": (8,)}, ["y"], {"b": w(8, 6)}),
    # Elementwise with numpy broadcasting.
    "add_same": binary("Add", (2, 3, 4, 5), (2, 3, 4, 5)),
    "add_channel": binary("Add", (2, 3, 4, 5), (3, 1, 1), const_b=True),
    "sub_rowvec": binary("Sub", (4, 5), (5,)),
    "mul_scalar": binary("Mul", (3, 4), (1,), const_b=True),
    "div_outer": binary("Div", (4, 1), (1, 5)),
    "add_rank_mismatch_opset7": binary("Add", (2, 3, 4), (3, 4), opset=7),
    "sum_three": model([node("Sum", ["a", "b", "c"])], {"a": (2, 3), "b": (2, 3), "c": (3,)}, ["y"]),
    "sum_one": model([node("Sum", ["a"])], {"a": (2, 3)}, ["y"]),
    "relu": unary("Relu"),
    "leaky_relu": unary("LeakyRelu", alpha=0.2),
    "sigmoid": unary("Sigmoid", (3, 100)),
    "tanh": unary("Tanh", (3, 100)),
    "clip_opset13": model([node("Clip", ["x", "lo", "hi"])], {"x": (3, 17)}, ["y"],
                          {"lo": np.float32(-0.5), "hi": np.float32(0.7)}),
    "clip_min_only_opset11": model([node("Clip", ["x", "lo"])], {"x": (3, 17)}, ["y"], {"lo": np.float32(0.1)}, 11),
    "clip_attrs_opset7": unary("Clip", (3, 17), opset=7, min=-1.0, max=1.0),
    # Elementwise ops of issue 4 (the domain-limited ones behind Abs/Tanh, fused into one kernel).
    **{f"unary_{op.lower()}": unary(op, (3, 37), opset=opset) for op, opset in (
        ("Exp", 13), ("Neg", 13), ("Abs", 13), ("Floor", 13), ("Ceil", 13), ("Round", 13), ("Sign", 13),
        ("Erf", 13), ("Softplus", 13), ("Softsign", 13), ("HardSwish", 14), ("Mish", 18), ("Sin", 13),
        ("Cos", 13), ("Tan", 13), ("Atan", 13), ("Sinh", 13), ("Cosh", 13), ("Asinh", 13))},
    **{f"abs_{op.lower()}": model([node("Abs", ["x"], ["a"]), node(op, ["a"])], {"x": (3, 37)}, ["y"])
       for op in ("Log", "Sqrt", "Reciprocal")},
    **{f"tanh_{op.lower()}": model([node("Tanh", ["x"], ["t"]), node(op, ["t"])], {"x": (3, 37)}, ["y"])
       for op in ("Asin", "Acos", "Atanh")},
    "acosh": model([node("Abs", ["x"], ["a"]), node("Add", ["a", "one"], ["p"]), node("Acosh", ["p"])],
                   {"x": (3, 37)}, ["y"], {"one": np.float32(1.0)}),
    "hard_sigmoid": unary("HardSigmoid", (3, 37), alpha=0.3, beta=0.4),
    "elu": unary("Elu", (3, 37), alpha=0.5),
    "selu_defaults": unary("Selu", (3, 37)),
    "celu_opset12": unary("Celu", (3, 37), opset=12, alpha=2.0),
    "thresholded_relu_opset10": unary("ThresholdedRelu", (3, 37), opset=10, alpha=0.3),
    "gelu_opset20": unary("Gelu", (3, 37), opset=20),
    "gelu_tanh_opset20": unary("Gelu", (3, 37), opset=20, approximate="tanh"),
    "pow_int_exponent": model([node("Pow", ["a", "e"])], {"a": (3, 17)}, ["y"], {"e": np.int64(3)}),
    "pow_abs_base": model([node("Abs", ["x"], ["a"]), node("Pow", ["a", "e"])], {"x": (3, 17), "e": (17,)}, ["y"]),
    "min_three": model([node("Min", ["a", "b", "c"])], {"a": (2, 3, 4), "b": (3, 1), "c": (4,)}, ["y"]),
    "max_two": binary("Max", (4, 5), (5,)),
    "mean_three": model([node("Mean", ["a", "b", "c"])], {"a": (2, 3), "b": (2, 3), "c": (3,)}, ["y"]),
    "prelu_channel": binary("PRelu", (2, 3, 4, 5), (3, 1, 1), const_b=True),
    "mod_fmod": model([node("Mod", ["a", "b"], fmod=1)], {"a": (3, 8)}, ["y"],
                      {"b": np.array([1.5, -2.0, 0.7, 3.0, 1.0, -0.3, 2.5, 4.0], np.float32)}),
    "conv_hardswish": model([node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]), node("HardSwish", ["c"])],
                            {"x": (1, 3, 8, 8)}, ["y"], {"W": w(6, 3, 3, 3), "B": w(6)}, 14),
    "conv_prelu_elu": model([node("Conv", ["x", "W"], ["c"]), node("PRelu", ["c", "s"], ["p"]), node("Elu", ["p"])],
                            {"x": (1, 4, 6, 6)}, ["y"], {"W": w(5, 4, 3, 3), "s": w(5, 1, 1)}),
    "matmul_gelu": model([node("MatMul", ["a", "b"], ["m"]), node("Gelu", ["m"])], {"a": (6, 10)}, ["y"],
                         {"b": w(10, 12)}, 20),
    "matmul_add_pow_max": model([node("MatMul", ["a", "b"], ["m"]), node("Max", ["m", "z"], ["r"]),
                                 node("Pow", ["r", "e"])], {"a": (5, 8)}, ["y"],
                                {"b": w(8, 7), "z": np.float32(0.0), "e": np.float32(1.5)}),
    # Pooling.
    "maxpool_2x2": unary("MaxPool", (1, 3, 8, 8), kernel_shape=[2, 2], strides=[2, 2]),
    "maxpool_3x3_pad_ceil": unary("MaxPool", (1, 2, 10, 9), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
    "maxpool_dilated": unary("MaxPool", (1, 2, 9, 9), kernel_shape=[2, 2], dilations=[2, 2]),
    "maxpool_same_upper_opset8": unary("MaxPool", (1, 2, 7, 7), opset=8, kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
    "avgpool_exclude_pad": unary("AveragePool", (1, 3, 7, 7), kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    "avgpool_include_pad": unary("AveragePool", (1, 3, 7, 7), kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
    "avgpool_ceil_stride": unary("AveragePool", (2, 2, 10, 10), kernel_shape=[3, 3], strides=[3, 3], ceil_mode=1),
    "global_avgpool": unary("GlobalAveragePool", (2, 5, 6, 7)),
    # Normalization.
    "batchnorm_opset9": model([node("BatchNormalization", ["x", "s", "b", "m", "v"], epsilon=1e-3)], {"x": (2, 4, 5, 5)}, ["y"],
                              {"s": w(4), "b": w(4), "m": w(4), "v": np.abs(w(4)) + 0.1}, 9),
    "batchnorm_opset15": model([node("BatchNormalization", ["x", "s", "b", "m", "v"])], {"x": (1, 3, 4, 4)}, ["y"],
                               {"s": w(3), "b": w(3), "m": w(3), "v": np.abs(w(3)) + 0.1}, 15),
    "batchnorm_opset7_spatial": model([node("BatchNormalization", ["x", "s", "b", "m", "v"], spatial=1)], {"x": (1, 3, 4, 4)}, ["y"],
                                      {"s": w(3), "b": w(3), "m": w(3), "v": np.abs(w(3)) + 0.1}, 7),
    "lrn": unary("LRN", (1, 10, 5, 5), size=5, alpha=1e-3, beta=0.75, bias=2.0),
    "lrn_size3": unary("LRN", (2, 7, 3, 3), size=3, alpha=1e-2, beta=0.5),  # onnxruntime takes odd sizes only
    # Shape ops.
    "concat_axis1": model([node("Concat", ["a", "b", "c"], axis=1)], {"a": (1, 2, 3, 3), "b": (1, 5, 3, 3)}, ["y"],
                          {"c": w(1, 1, 3, 3)}),
    "concat_axis_last_neg": model([node("Concat", ["a", "b"], axis=-1)], {"a": (2, 3), "b": (2, 4)}, ["y"]),
    "reshape_zero_minus1": model([node("Reshape", ["x", "s"]), ], {"x": (2, 3, 4)}, ["y"], {"s": np.array([0, -1], np.int64)}),
    "flatten_axis0": unary("Flatten", (2, 3, 4), axis=0),
    "flatten_axis2": unary("Flatten", (2, 3, 4, 5), axis=2),
    "transpose_default": unary("Transpose", (2, 3, 4)),
    "transpose_perm": unary("Transpose", (2, 3, 4, 5), perm=[0, 2, 3, 1]),
    "slice_opset13_steps_int_max": model([node("Slice", ["x", "s", "e", "a", "st"])], {"x": (4, 10, 6)}, ["y"],
                                         {"s": np.array([1, -8], np.int64), "e": np.array([2 ** 63 - 1, 9], np.int64),
                                          "a": np.array([0, 1], np.int64), "st": np.array([2, 3], np.int64)}),
    "slice_opset13_negative_steps": model([node("Slice", ["x", "s", "e", "a", "st"])], {"x": (3, 8, 9)}, ["y"],
                                          {"s": np.array([-1, 100], np.int64), "e": np.array([-(2 ** 63), 1], np.int64),
                                           "a": np.array([2, -2], np.int64), "st": np.array([-1, -2], np.int64)}),
    "slice_opset9_attrs": unary("Slice", (3, 2, 4, 6), opset=9, starts=[0, 1], ends=[2, 1000], axes=[0, 3]),
    "split_opset13_sizes": model([node("Split", ["x", "split"], ["a", "b", "c"], axis=1)], {"x": (2, 10, 3)},
                                 ["a", "b", "c"], {"split": np.array([3, 5, 2], np.int64)}),
    "split_opset11_equal_last_axis": model([node("Split", ["x"], ["a", "b", "c"], axis=-1)], {"x": (4, 6)},
                                           ["a", "b", "c"], opset=11),
    "softmax_opset13_last": unary("Softmax", (3, 4, 10)),
    "softmax_opset13_axis1": unary("Softmax", (2, 5, 3), axis=1),
    "softmax_opset11_flattens": unary("Softmax", (2, 3, 4), opset=11, axis=1),
    "softmax_opset9_default": unary("Softmax", (2, 3, 4), opset=9),
    "logsoftmax_opset13_axis1": unary("LogSoftmax", (2, 5, 3), axis=1),
    "logsoftmax_opset11_flattens": unary("LogSoftmax", (2, 3, 4), opset=11, axis=1),
    "hardmax_opset13_last": unary("Hardmax", (3, 4, 10)),
    "hardmax_opset9_flattens": unary("Hardmax", (2, 3, 4), opset=9, axis=1),
    # Reductions: trailing run (contiguous), middle axis (inner > 1), non-contiguous axes (transpose first).
    "reducesum_opset13_axes_input": model([node("ReduceSum", ["x", "axes"], keepdims=0)], {"x": (2, 3, 20)}, ["y"],
                                          {"axes": np.array([-1], np.int64)}),
    "reducemean_opset11_middle": unary("ReduceMean", (2, 7, 19), opset=11, axes=[1]),
    "reducemax_opset18_split_axes": model([node("ReduceMax", ["x", "axes"])], {"x": (2, 3, 4, 5)}, ["y"],
                                          {"axes": np.array([1, 3], np.int64)}, 18),
    "reducelogsumexp_all": unary("ReduceLogSumExp", (3, 4, 5), opset=13),
    "reducel2_opset18_keepdims": model([node("ReduceL2", ["x", "axes"])], {"x": (4, 6, 3)}, ["y"],
                                       {"axes": np.array([0], np.int64)}, 18),
    "dropout_identity": model([node("Dropout", ["x"]), node("Relu", ["y"], ["z"])], {"x": (3, 4)}, ["z"], opset=12),
    "identity": model([node("Identity", ["x"]), node("Relu", ["y"], ["z"])], {"x": (3, 4)}, ["z"]),
    "constant_node": model([helper.make_node("Constant", [], ["c"], value=helper.make_tensor("v", 1, [4], [1, 2, 3, 4])),
                            node("Add", ["x", "c"])], {"x": (3, 4)}, ["y"]),
    "constant_of_shape_unsqueeze_squeeze": model(
        [helper.make_node("ConstantOfShape", ["shape"], ["c"], value=helper.make_tensor("v", 1, [1], [0.5])),
         helper.make_node("Unsqueeze", ["c", "ax"], ["cu"]), helper.make_node("Squeeze", ["cu", "ax"], ["cs"]),
         node("Mul", ["x", "cs"])], {"x": (2, 3)}, ["y"],
        {"shape": np.array([2, 3], np.int64), "ax": np.array([0], np.int64)}),
    "unsqueeze_squeeze_opset11_attrs": model(
        [helper.make_node("Unsqueeze", ["x"], ["u"], axes=[0, 3]), helper.make_node("Squeeze", ["u"], ["y"], axes=[0])],
        {"x": (2, 3)}, ["y"], opset=11),
    # Fusion shapes: conv + bias + relu; conv + BN + relu; gemm + relu; residual add.
    "conv_bn_relu": model([node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1]),
                           node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]), node("Relu", ["n"])],
                          {"x": (1, 3, 8, 8)}, ["y"],
                          {"W": w(6, 3, 3, 3), "s": w(6), "b": w(6), "m": w(6), "v": np.abs(w(6)) + 0.1}),
    "conv_residual_relu": model([node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]), node("Add", ["c", "x"], ["s"]),
                                 node("Relu", ["s"])], {"x": (1, 4, 6, 6)}, ["y"], {"W": w(4, 4, 3, 3), "B": w(4)}),
    # The residual comes from another kernel (arena), with kernels in between that could reuse its space.
    "conv_residual_from_arena": model([node("Sigmoid", ["x"], ["r"]), node("Tanh", ["x"], ["t"]), node("Relu", ["t"], ["u"]),
                                       node("Conv", ["u", "W", "B"], ["c"], pads=[1, 1, 1, 1]), node("Add", ["c", "r"])],
                                      {"x": (1, 4, 6, 6)}, ["y"], {"W": w(4, 4, 3, 3), "B": w(4)}),
    "matmul_add_sigmoid": model([node("MatMul", ["a", "b"], ["m"]), node("Add", ["m", "c"], ["s"]), node("Sigmoid", ["s"])],
                                {"a": (6, 10)}, ["y"], {"b": w(10, 12), "c": w(12)}),
    "two_outputs": model([node("Relu", ["x"], ["r"]), node("Sigmoid", ["x"], ["s"])], {"x": (2, 5)}, ["r", "s"]),
    "output_is_input": model([node("Identity", ["x"], ["y"])], {"x": (2, 5)}, ["y"]),
    # Integer, bool and mixed-dtype elementwise kernels (iree_py/codegen/llvm/elementwise_typed.py).
    "int32_mul_add_div_mod": retyped(model(
        [node("Mul", ["a", "b"], ["m"]), node("Add", ["m", "c"], ["s"]), node("Div", ["s", "d"], ["q"]),
         node("Mod", ["q", "e"])], {"a": (3, 11), "b": (11,)}, ["y"],
        {"c": np.arange(-5, 6, dtype=np.int32), "d": np.array([3, -2, 7], np.int32).reshape(3, 1),
         "e": np.array(-4, np.int32)}), a=TensorProto.INT32, b=TensorProto.INT32, y=TensorProto.INT32),
    "cast_f32_i8_f32": model([node("Mul", ["x", "k"], ["m"]), node("Cast", ["m"], ["c"], to=TensorProto.INT8),
                              helper.make_node("Cast", ["c"], ["y"], name="cast_back", to=TensorProto.FLOAT)],
                             {"x": (2, 3, 17)}, ["y"],
                             {"k": np.float32(90.0)}),
    "where_less_bool_out": retyped(model([node("Less", ["x", "z"], ["c"]), node("Where", ["c", "x", "z"], ["y"]),
                                          node("Not", ["c"], ["n"])], {"x": (4, 9), "z": (9,)}, ["y", "n"]),
                                   n=TensorProto.BOOL),
    # Narrow storage types (iree_py/codegen/llvm/narrow_values.py): f32 -> float8 (saturating) -> bf16 -> f32,
    # and f32 -> int4 (round half away from zero, wrap) -> f32, each one fused kernel.
    "cast_narrow_f8_bf16_i4": model(
        [node("Mul", ["x", "k"], ["m"]), node("Cast", ["m"], ["c8"], to=TensorProto.FLOAT8E4M3FN),
         helper.make_node("Cast", ["c8"], ["cb"], name="to_bf16", to=TensorProto.BFLOAT16),
         helper.make_node("Cast", ["cb"], ["y"], name="bf16_back", to=TensorProto.FLOAT),
         helper.make_node("Cast", ["x"], ["c4"], name="to_i4", to=TensorProto.INT4),
         helper.make_node("Cast", ["c4"], ["z"], name="i4_back", to=TensorProto.FLOAT)],
        {"x": (2, 3, 17)}, ["y", "z"], {"k": np.float32(200.0)}, opset=21),
    # Quantized (iree_py/frontends/onnx/quantized_ops.py): float in -> QuantizeLinear -> QLinearConv / QLinearMatMul
    # (per-channel int8 weights) -> DequantizeLinear -> float out.
    "qlinearconv_u8_chain": model(
        [node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
         node("QLinearConv", ["xq", "xs", "xz", "W", "ws", "wz", "ys", "yz", "B"], ["yq"], pads=[1, 1, 1, 1]),
         node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])], {"x": (1, 4, 8, 8)}, ["y"],
        {"xs": np.float32(0.02), "xz": np.uint8(128), "W": rng.integers(-127, 128, (6, 4, 3, 3)).astype(np.int8),
         "ws": rng.uniform(0.002, 0.01, 6).astype(np.float32), "wz": np.zeros(6, np.int8), "ys": np.float32(0.05),
         "yz": np.uint8(120), "B": rng.integers(-2000, 2000, 6).astype(np.int32)}),
    "qlinearmatmul_i8_chain": model(
        [node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
         node("QLinearMatMul", ["xq", "xs", "xz", "W", "ws", "wz", "ys", "yz"], ["yq"]),
         node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])], {"x": (3, 5, 24)}, ["y"],
        {"xs": np.float32(0.02), "xz": np.int8(-3), "W": rng.integers(-127, 128, (24, 10)).astype(np.int8),
         "ws": rng.uniform(0.002, 0.01, 10).astype(np.float32), "wz": np.zeros(10, np.int8), "ys": np.float32(0.04),
         "yz": np.int8(2)}),
    # Integer products accumulated in int32 (ConvInteger / MatMulInteger: the qconv / qmatmul kernels without
    # requantization): weights at the ends of their range, depths whose sums pass 2**24 (float32 would round);
    # bit-exact at the extremes on every target: test_integer_accumulation.py. (Own generators: the cases after
    # these keep their data.)
    "convinteger_u8_depth2304": retyped(model(
        [node("ConvInteger", ["x", "W", "xz", "wz"], pads=[1, 1, 1, 1])], {"x": (1, 256, 4, 4)}, ["y"],
        {"W": np.where(np.random.default_rng(14).random((6, 256, 3, 3)) < 0.9, 0, 255).astype(np.uint8), "xz": np.uint8(0),
         "wz": np.array([255, 255, 0, 255, 128, 255], np.uint8)}, 10), x=TensorProto.UINT8, y=TensorProto.INT32),
    "matmulinteger_s8_k2048": retyped(model(
        [node("MatMulInteger", ["a", "B", "az", "bz"])], {"a": (3, 2048)}, ["y"],
        {"B": np.where(np.random.default_rng(15).random((2048, 5)) < 0.9, -128, 127).astype(np.int8), "az": np.int8(-3),
         "bz": np.array([127, 127, 0, -128, 127], np.int8)}, 10), a=TensorProto.INT8, y=TensorProto.INT32),
    # Decompositions (iree_py/frontends/onnx/normalization.py): LayerNormalization over the last axis; attention.
    "layernorm_last_axis": model([node("LayerNormalization", ["x", "s", "b"], epsilon=1e-3)], {"x": (2, 5, 16)}, ["y"],
                                 {"s": w(16), "b": w(16)}, 17),
    "attention_gqa_causal": model([node("Attention", ["q", "k", "v"], is_causal=1)],
                                  {"q": (1, 4, 5, 8), "k": (1, 2, 5, 8), "v": (1, 2, 5, 8)}, ["y"], opset=23),
    # Indexing (iree_py/frontends/onnx/indexing.py): run-time indices, a scatter with a reduction, Tile.
    "gather_runtime_indices": int64_input(model([node("Gather", ["x", "i"], axis=1)], {"x": (3, 5, 4), "i": (2, 3)},
                                                ["y"]), "i"),
    "scatternd_add_opset16": model([node("ScatterND", ["x", "i", "u"], reduction="add")], {"x": (4, 3, 5), "u": (3, 5)},
                                   ["y"], {"i": np.array([[1, 2], [-1, 0], [1, 2]], np.int64)}, 16),
    "tile_repeats": model([node("Tile", ["x", "r"])], {"x": (2, 3, 1)}, ["y"], {"r": np.array([2, 1, 3], np.int64)}),
    # Resize / Pad / ArgMax (iree_py/frontends/onnx/resize.py, pad.py).
    "resize_linear_half_pixel": model([node("Resize", ["x", "", "s"], mode="linear")], {"x": (1, 2, 5, 6)}, ["y"],
                                      {"s": np.array([1, 1, 1.6, 0.5], np.float32)}),
    "pad_reflect_crop": model([node("Pad", ["x", "p"], mode="reflect")], {"x": (2, 3, 7)}, ["y"],
                              {"p": np.array([0, 1, 3, 1, -1, 2], np.int64)}),
    "argmax_axis1": int64_output(model([node("ArgMax", ["x"], axis=1, keepdims=0)], {"x": (3, 6, 5)}, ["y"])),
    # Recurrent layers (iree_py/frontends/onnx/recurrent.py): one kernel per output, all time steps inside.
    "lstm_bidirectional_seq_lens": model(
        [node("LSTM", ["x", "W", "R", "B", "L"], ["y", "y_h", "y_c"], hidden_size=6, direction="bidirectional")],
        {"x": (4, 2, 5)}, ["y", "y_h", "y_c"],
        {"W": w(2, 24, 5), "R": w(2, 24, 6), "B": w(2, 48), "L": np.array([4, 2], np.int32)}),
    "gru_reverse_linear_before_reset": model(
        [node("GRU", ["x", "W", "R", "B"], ["y", "y_h"], hidden_size=5, direction="reverse", linear_before_reset=1)],
        {"x": (3, 2, 4)}, ["y", "y_h"], {"W": w(1, 15, 4), "R": w(1, 15, 5), "B": w(1, 30)}),
    # ConvTranspose and LpPool (iree_py/frontends/onnx/conv.py, pool.py).
    "conv_transpose_stride2_group": model(
        [node("ConvTranspose", ["x", "W", "B"], strides=[2, 2], pads=[1, 1, 0, 0], output_padding=[1, 1], group=2)],
        {"x": (1, 4, 5, 6)}, ["y"], {"W": w(4, 3, 3, 3), "B": w(6)}),
    "lppool_p3_ceil": model([node("LpPool", ["x"], kernel_shape=[3, 3], strides=[2, 2], p=3, ceil_mode=1)],
                            {"x": (1, 2, 9, 8)}, ["y"], opset=18),
    # Compositions (iree_py/frontends/onnx/image_ops.py, loss.py, signal.py).
    "grid_sample_bicubic_border": model([node("GridSample", ["x", "g"], mode="cubic", padding_mode="border")],
                                        {"x": (1, 2, 5, 4), "g": (1, 3, 4, 2)}, ["y"], opset=22),
    "softmax_cross_entropy_weighted_ignore": model(
        [node("SoftmaxCrossEntropyLoss", ["x", "t", "wt"], ["y", "lp"], ignore_index=-1)], {"x": (3, 4, 2)},
        ["y", "lp"], {"t": np.array([[0, 3], [-1, 1], [2, 2]], np.int64), "wt": np.abs(w(4)) + 0.5}, 13),
    "dft_complex_axis2": model([node("DFT", ["x"], axis=2)], {"x": (2, 3, 6, 2)}, ["y"], opset=17),
}


# The cases whose kernels vectorize (convolutions, matmuls, elementwise, pools): riscv64-rvv runs these.
VECTOR_CASE_PREFIXES = ("conv", "gemm", "matmul", "add", "sub", "mul", "div", "sum", "relu", "leaky_relu", "sigmoid",
                        "tanh", "clip", "unary_", "prelu", "max_two", "min_three", "maxpool", "avgpool", "global_avgpool")
VECTOR_CASES = [c for c in sorted(CASES) if c.startswith(VECTOR_CASE_PREFIXES)]


@pytest.mark.parametrize("case,target", [(c, t) for c in sorted(CASES) for t in TARGETS] +
                         [(c, RVV_TARGET) for c in VECTOR_CASES])
def test_op_matches_reference(case: str, target: str):
    check_against_reference(CASES[case], target)
