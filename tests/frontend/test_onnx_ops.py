"""Each supported ONNX op at several opsets: import, evaluate with the numpy reference, compare
with onnxruntime (tolerance in onnx_models.py)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from onnx_models import NEWEST, OPSETS, check_against_reference, model

rng = np.random.default_rng(42)


def w(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
def test_binary_broadcast(op: str, opset: int) -> None:
    nodes = [helper.make_node(op, ["a", "b"], ["y"])]
    m = model(nodes, {"a": (2, 3, 4), "b": (3, 1)}, ["y"], opset)
    feeds = {"a": w(2, 3, 4), "b": np.abs(w(3, 1)) + 0.5}
    check_against_reference(m, feeds)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("op,attrs", [("Relu", {}), ("Sigmoid", {}), ("Tanh", {}),
                                      ("LeakyRelu", {}), ("LeakyRelu", {"alpha": 0.3})])
def test_unary(op: str, attrs: dict, opset: int) -> None:
    check_against_reference(model([helper.make_node(op, ["x"], ["y"], **attrs)], {"x": (2, 5)}, ["y"], opset))


@pytest.mark.parametrize("opset", OPSETS)
def test_sum_of_three(opset: int) -> None:
    nodes = [helper.make_node("Sum", ["a", "b", "c"], ["y"])]
    check_against_reference(model(nodes, {"a": (2, 3), "b": (2, 3), "c": (2, 3)}, ["y"], opset))


@pytest.mark.parametrize("opset", [7, 9, 11, 13, NEWEST])
@pytest.mark.parametrize("lo,hi", [(-0.5, 0.5), (None, 0.2), (-0.1, None), (None, None)])
def test_clip(opset: int, lo: float | None, hi: float | None) -> None:
    init: dict[str, np.ndarray] = {}
    if opset < 11:
        attrs = {k: v for k, v in (("min", lo), ("max", hi)) if v is not None}
        node = helper.make_node("Clip", ["x"], ["y"], **attrs)
    else:
        names = ["x", "", ""]
        if lo is not None:
            init["lo"], names[1] = np.array(lo, np.float32), "lo"
        if hi is not None:
            init["hi"], names[2] = np.array(hi, np.float32), "hi"
        while names[-1] == "":
            names.pop()
        node = helper.make_node("Clip", names, ["y"])
    check_against_reference(model([node], {"x": (3, 4)}, ["y"], opset, init))


CONV_CASES = [
    dict(),
    dict(pads=[1, 2, 0, 1], strides=[2, 1]),
    dict(auto_pad="SAME_UPPER", strides=[2, 2]),
    dict(auto_pad="SAME_LOWER", strides=[2, 2]),
    dict(auto_pad="SAME_UPPER", strides=[3, 2]),
    dict(auto_pad="VALID", strides=[2, 2]),
    dict(dilations=[2, 2], pads=[2, 2, 2, 2]),
    dict(group=2),
    dict(group=4, pads=[1, 1, 1, 1]),  # depthwise
]


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("case", range(len(CONV_CASES)))
@pytest.mark.parametrize("bias", [True, False])
def test_conv(case: int, opset: int, bias: bool) -> None:
    attrs = CONV_CASES[case]
    group = attrs.get("group", 1)
    init = {"w": w(4, 4 // group, 3, 3)}
    if bias:
        init["b"] = w(4)
    node = helper.make_node("Conv", ["x", "w", "b"] if bias else ["x", "w"], ["y"], **attrs)
    check_against_reference(model([node], {"x": (1, 4, 7, 8)}, ["y"], opset, init))


@pytest.mark.parametrize("opset", [9, 13])
def test_conv_1d(opset: int) -> None:
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], strides=[2], pads=[1, 2])
    check_against_reference(model([node], {"x": (2, 3, 9)}, ["y"], opset, {"w": w(5, 3, 3), "b": w(5)}))


POOL_ATTRS = [
    dict(kernel_shape=[3, 3]),
    dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    dict(kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_UPPER"),
    dict(kernel_shape=[3, 2], strides=[2, 3], auto_pad="SAME_LOWER"),
    dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 1, 0], ceil_mode=1),
    dict(kernel_shape=[2, 2], dilations=[2, 2]),
]


def _pool_valid(op: str, attrs: dict, opset: int) -> bool:
    """ceil_mode and dilations exist from opset 10; dilations only on MaxPool."""
    return not (("ceil_mode" in attrs and opset < 10) or ("dilations" in attrs and (opset < 10 or op != "MaxPool")))


@pytest.mark.parametrize("op,attrs,opset", [(op, a, o) for op in ["MaxPool", "AveragePool", "AveragePool-pad"]
                                            for a in POOL_ATTRS for o in OPSETS if _pool_valid(op, a, o)])
def test_pool(op: str, attrs: dict, opset: int) -> None:
    attrs = dict(attrs)
    if op == "AveragePool-pad":
        op, attrs["count_include_pad"] = "AveragePool", 1
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    check_against_reference(model([node], {"x": (1, 2, 9, 8)}, ["y"], opset))


@pytest.mark.parametrize("opset", OPSETS)
def test_global_average_pool(opset: int) -> None:
    check_against_reference(model([helper.make_node("GlobalAveragePool", ["x"], ["y"])], {"x": (2, 3, 5, 4)}, ["y"], opset))


@pytest.mark.parametrize("opset", OPSETS)
def test_batchnorm(opset: int) -> None:
    attrs = {"epsilon": 1e-3}
    if opset < 9:
        attrs["spatial"] = 1
    init = {"s": w(3), "bias": w(3), "mean": w(3), "var": np.abs(w(3)) + 0.1}
    node = helper.make_node("BatchNormalization", ["x", "s", "bias", "mean", "var"], ["y"], **attrs)
    check_against_reference(model([node], {"x": (2, 3, 4, 5)}, ["y"], opset, init))


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("size", [3, 5])  # onnxruntime accepts odd sizes only
def test_lrn(opset: int, size: int) -> None:
    node = helper.make_node("LRN", ["x"], ["y"], size=size, alpha=0.01, beta=0.75, bias=2.0)
    check_against_reference(model([node], {"x": (1, 6, 3, 3)}, ["y"], opset))


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("axis", [1, -1, 0])
def test_concat(opset: int, axis: int) -> None:
    node = helper.make_node("Concat", ["a", "b"], ["y"], axis=axis)
    shapes = {1: ((2, 3, 4), (2, 5, 4)), -1: ((2, 3, 4), (2, 3, 1)), 0: ((2, 3, 4), (1, 3, 4))}[axis]
    check_against_reference(model([node], {"a": shapes[0], "b": shapes[1]}, ["y"], opset))


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("shape", [[0, -1], [-1, 4], [2, 0, 2, 2], [24]])
def test_reshape(opset: int, shape: list[int]) -> None:
    node = helper.make_node("Reshape", ["x", "s"], ["y"])
    check_against_reference(model([node], {"x": (2, 3, 4)}, ["y"], opset, {"s": np.array(shape, np.int64)}))


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("axis", [0, 1, 2, 3])
def test_flatten(opset: int, axis: int) -> None:
    check_against_reference(model([helper.make_node("Flatten", ["x"], ["y"], axis=axis)], {"x": (2, 3, 4)}, ["y"], opset))


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("perm", [None, [0, 2, 1], [2, 0, 1]])
def test_transpose(opset: int, perm: list[int] | None) -> None:
    attrs = {} if perm is None else {"perm": perm}
    check_against_reference(model([helper.make_node("Transpose", ["x"], ["y"], **attrs)], {"x": (2, 3, 4)}, ["y"], opset))


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1])
def test_softmax(opset: int, axis: int | None) -> None:
    attrs = {} if axis is None else {"axis": axis}
    check_against_reference(model([helper.make_node("Softmax", ["x"], ["y"], **attrs)], {"x": (2, 3, 4)}, ["y"], opset))


@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("c_shape,opset", [(c, o) for c in [None, (), (5,), (1, 5), (3, 5), (3, 1)] for o in OPSETS
                                           if c is not None or o >= 11])  # C is optional from opset 11
def test_gemm(opset: int, trans_a: int, trans_b: int, c_shape: tuple | None) -> None:
    a_shape = (4, 3) if trans_a else (3, 4)
    b_shape = (5, 4) if trans_b else (4, 5)
    init = {"b": w(*b_shape)}
    inputs = ["a", "b"]
    if c_shape is not None:
        init["c"] = w(*c_shape)
        inputs.append("c")
    node = helper.make_node("Gemm", inputs, ["y"], transA=trans_a, transB=trans_b, alpha=0.5, beta=2.0)
    check_against_reference(model([node], {"a": a_shape}, ["y"], opset, init))


@pytest.mark.parametrize("opset", [9, 13])
def test_gemm_defaults_and_computed_b(opset: int) -> None:
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=1.5)
    check_against_reference(model([node], {"a": (3, 4), "b": (4, 2), "c": (2,)}, ["y"], opset))


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("a,b", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (3, 4, 2)),
                                 ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4,))])
def test_matmul(opset: int, a: tuple, b: tuple) -> None:
    check_against_reference(model([helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": a, "b": b}, ["y"], opset))


@pytest.mark.parametrize("opset", OPSETS)
def test_squeeze_unsqueeze(opset: int) -> None:
    init: dict[str, np.ndarray] = {}
    if opset < 13:
        nodes = [helper.make_node("Unsqueeze", ["x"], ["u"], axes=[0, 3]),
                 helper.make_node("Squeeze", ["u"], ["y"], axes=[0]),
                 helper.make_node("Squeeze", ["u"], ["z"])]
    else:
        init = {"ax03": np.array([0, -1], np.int64), "ax0": np.array([0], np.int64)}
        nodes = [helper.make_node("Unsqueeze", ["x", "ax03"], ["u"]),
                 helper.make_node("Squeeze", ["u", "ax0"], ["y"]),
                 helper.make_node("Squeeze", ["u"], ["z"])]
    check_against_reference(model(nodes, {"x": (2, 3)}, ["u", "y", "z"], opset, init))


@pytest.mark.parametrize("opset", OPSETS)
def test_dropout_identity_removed(opset: int) -> None:
    nodes = [helper.make_node("Dropout", ["x"], ["d"]), helper.make_node("Identity", ["d"], ["i"]),
             helper.make_node("Relu", ["i"], ["y"])]
    m = model(nodes, {"x": (2, 3)}, ["y"], opset)
    check_against_reference(m)
    from iree_py.frontends.onnx import import_onnx
    assert [n.op for n in import_onnx(m).nodes] == ["Relu"]


@pytest.mark.parametrize("opset", OPSETS)
def test_shape_constant_of_shape_folded(opset: int) -> None:
    """Shape of a static tensor, ConstantOfShape and Constant become constants at import."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ConstantOfShape", ["s"], ["ones"],
                              value=helper.make_tensor("v", 1, [1], [2.0])),
             helper.make_node("Constant", [], ["k"], value_float=0.5) if opset >= 12 else
             helper.make_node("Constant", [], ["k"], value=helper.make_tensor("k", 1, [], [0.5])),
             helper.make_node("Mul", ["ones", "k"], ["c"]),
             helper.make_node("Add", ["x", "c"], ["y"])]
    m = model(nodes, {"x": (2, 3)}, ["y"], max(opset, 9))
    check_against_reference(m)
    from iree_py.frontends.onnx import import_onnx
    assert [n.op for n in import_onnx(m).nodes] == ["Add"]


@pytest.mark.parametrize("opset", [9, 11, 13, NEWEST])
def test_reshape_from_shape_computation(opset: int) -> None:
    """PyTorch-style flatten: Shape -> Gather -> Unsqueeze -> Concat -> Reshape."""
    unsq = [helper.make_node("Unsqueeze", ["n"], ["n1"], axes=[0])] if opset < 13 else \
        [helper.make_node("Unsqueeze", ["n", "zero"], ["n1"])]
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "idx"], ["n"], axis=0), *unsq,
             helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["y"])]
    init = {"idx": np.array(0, np.int64), "minus1": np.array([-1], np.int64), "zero": np.array([0], np.int64)}
    check_against_reference(model(nodes, {"x": (2, 3, 4)}, ["y"], opset, init))


# ------------------------------------------------------------------ elementwise ops of issue 4
# op, attrs, first opset that has the op (in its current form), input transform (domain)
def _positive(x: np.ndarray) -> np.ndarray:
    return np.abs(x) + 0.1


def _unit(x: np.ndarray) -> np.ndarray:
    return np.tanh(x) * 0.99


NEW_UNARY = [
    ("Exp", {}, 7, None), ("Log", {}, 7, _positive), ("Sqrt", {}, 7, _positive), ("Abs", {}, 7, None),
    ("Neg", {}, 7, None), ("Reciprocal", {}, 7, _positive), ("Floor", {}, 7, None), ("Ceil", {}, 7, None),
    ("Round", {}, 11, lambda x: np.round(x * 4) / 2), ("Sign", {}, 9, None), ("Erf", {}, 9, None),
    ("Softplus", {}, 7, None), ("Softsign", {}, 7, None),
    ("HardSigmoid", {}, 7, None), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, 7, None),
    ("HardSwish", {}, 14, None), ("Elu", {}, 7, None), ("Elu", {"alpha": 0.5}, 7, None),
    ("Selu", {}, 7, None), ("Selu", {"alpha": 1.5, "gamma": 2.0}, 7, None),
    ("Celu", {}, 12, None), ("Celu", {"alpha": 2.0}, 12, None),
    ("ThresholdedRelu", {}, 10, None), ("ThresholdedRelu", {"alpha": 0.3}, 10, None),
    ("Mish", {}, 18, None), ("Gelu", {}, 20, None), ("Gelu", {"approximate": "tanh"}, 20, None),
    ("Sin", {}, 7, None), ("Cos", {}, 7, None), ("Tan", {}, 7, None), ("Atan", {}, 7, None),
    ("Asin", {}, 7, _unit), ("Acos", {}, 7, _unit), ("Sinh", {}, 9, None), ("Cosh", {}, 9, None),
    ("Asinh", {}, 9, None), ("Acosh", {}, 9, lambda x: np.abs(x) + 1.0), ("Atanh", {}, 9, _unit),
]


@pytest.mark.parametrize("op,attrs,opset,domain", [(op, a, o, d) for op, a, first, d in NEW_UNARY
                                                   for o in sorted({first, NEWEST}) if o <= NEWEST])
def test_new_unary(op: str, attrs: dict, opset: int, domain) -> None:
    x = w(3, 7) * 2
    feeds = {"x": (domain(x) if domain else x).astype(np.float32)}
    check_against_reference(model([helper.make_node(op, ["x"], ["y"], **attrs)], {"x": (3, 7)}, ["y"], opset), feeds)


def test_gelu_rejects_unknown_approximation() -> None:
    from iree_py.errors import CompileError
    from iree_py.frontends.onnx import import_onnx
    m = model([helper.make_node("Gelu", ["x"], ["y"], approximate="fast")], {"x": (2,)}, ["y"], 20)
    with pytest.raises(CompileError, match="approximate"):
        import_onnx(m)


@pytest.mark.parametrize("opset", [7, 12, 13, NEWEST])
def test_pow(opset: int) -> None:
    nodes = [helper.make_node("Pow", ["a", "b"], ["y"])]
    a = np.concatenate([w(2, 6), np.array([[-2.0, -0.5, 4.0, 3.0, 0.0, -1.0]], np.float32)])
    a[:, 3] = np.abs(a[:, 3])  # the 0.5 power: non-negative bases (NaN would not compare)
    b = np.array([2.0, 3.0, -1.0, 0.5, 2.0, 0.0], np.float32)
    check_against_reference(model(nodes, {"a": (3, 6), "b": (6,)}, ["y"], opset), {"a": a, "b": b})


@pytest.mark.parametrize("opset", [12, NEWEST])
def test_pow_integer_exponent_constant(opset: int) -> None:
    nodes = [helper.make_node("Pow", ["a", "e"], ["y"])]
    check_against_reference(model(nodes, {"a": (2, 5)}, ["y"], opset, {"e": np.array(3, np.int64)}))


@pytest.mark.parametrize("opset", [8, 12, 13, NEWEST])
@pytest.mark.parametrize("op", ["Min", "Max", "Mean"])
@pytest.mark.parametrize("count", [1, 2, 3])
def test_variadic(op: str, count: int, opset: int) -> None:
    names = ["a", "b", "c"][:count]
    shapes = {"a": (2, 3, 4), "b": (3, 1), "c": (4,)}
    nodes = [helper.make_node(op, names, ["y"])]
    check_against_reference(model(nodes, {n: shapes[n] for n in names}, ["y"], opset))


@pytest.mark.parametrize("opset", [7, 9, 16, NEWEST])
@pytest.mark.parametrize("slope_shape", [(1,), (3, 1, 1), (5,)])
def test_prelu(opset: int, slope_shape: tuple) -> None:
    nodes = [helper.make_node("PRelu", ["x", "s"], ["y"])]
    check_against_reference(model(nodes, {"x": (2, 3, 4, 5)}, ["y"], opset, {"s": w(*slope_shape)}))


@pytest.mark.parametrize("opset", [10, 13, NEWEST])
def test_mod_fmod(opset: int) -> None:
    nodes = [helper.make_node("Mod", ["a", "b"], ["y"], fmod=1)]
    feeds = {"a": w(3, 4) * 10, "b": np.array([1.5, -2.0, 0.7, 3.0], np.float32)}
    check_against_reference(model(nodes, {"a": (3, 4), "b": (4,)}, ["y"], opset), feeds)


def test_mod_with_bad_fmod_is_rejected() -> None:
    from iree_py.errors import CompileError
    from iree_py.frontends.onnx import import_onnx
    with pytest.raises(CompileError, match="fmod=2"):
        import_onnx(model([helper.make_node("Mod", ["a", "b"], ["y"], fmod=2)], {"a": (2,), "b": (2,)}, ["y"], 13))


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("op", ["LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_logsoftmax_hardmax(opset: int, op: str, axis: int | None) -> None:
    attrs = {} if axis is None else {"axis": axis}
    check_against_reference(model([helper.make_node(op, ["x"], ["y"], **attrs)], {"x": (2, 3, 4)}, ["y"], opset))


REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]


def _reduce_model(op: str, opset: int, axes: list[int] | None, keepdims: int | None, noop: int | None = None):
    axes_as_input = opset >= (13 if op == "ReduceSum" else 18)
    attrs = {k: v for k, v in (("keepdims", keepdims), ("noop_with_empty_axes", noop)) if v is not None}
    init: dict[str, np.ndarray] = {}
    inputs = ["x"]
    if axes is not None and axes_as_input:
        init["axes"] = np.array(axes, np.int64)
        inputs.append("axes")
    elif axes is not None:
        attrs["axes"] = axes
    return model([helper.make_node(op, inputs, ["y"], **attrs)], {"x": (2, 3, 4)}, ["y"], opset, init)


def _reduce_feeds(op: str) -> dict[str, np.ndarray]:
    x = w(2, 3, 4)
    return {"x": np.abs(x) + 0.1 if op == "ReduceLogSum" else x}


@pytest.mark.parametrize("opset", [11, 13, 18, NEWEST])
@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("axes,keepdims", [(None, None), ([1], 1), ([-1], 0), ([0, 2], 1), ([2, 0], 0), ([0, 1], 0)])
def test_reduce(opset: int, op: str, axes: list[int] | None, keepdims: int | None) -> None:
    check_against_reference(_reduce_model(op, opset, axes, keepdims), _reduce_feeds(op))


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceL2"])
@pytest.mark.parametrize("noop", [0, 1])
def test_reduce_empty_axes_noop(op: str, noop: int) -> None:
    check_against_reference(_reduce_model(op, 18, None, 1, noop), _reduce_feeds(op))


def test_reduce_non_contiguous_axes_become_transpose_then_reduce() -> None:
    from iree_py.frontends.onnx import import_onnx
    g = import_onnx(_reduce_model("ReduceMean", 18, [0, 2], 1))
    assert [n.op for n in g.nodes] == ["Transpose", "Reduce", "Reshape"]
    assert g.nodes[1].attrs == {"kind": "mean", "axes": [1, 2], "keepdims": 0}


INT_MAX, INT_MIN = 2 ** 63 - 1, -(2 ** 63)
SLICES = {  # name: (starts, ends, axes, steps); input shape (4, 5, 6)
    "prefix": ([1], [3], [0], [1]),
    "negative_indices": ([-4, -2], [-1, INT_MAX], [1, 2], [1, 1]),
    "out_of_range_clamps": ([-100, 2], [100, 1000], [0, -1], [1, 1]),
    "steps": ([0, 1, 5], [4, 5, 0], [0, 1, 2], [3, 2, -2]),
    "reverse_all": ([-1, INT_MAX], [INT_MIN, -100], [1, 0], [-1, -1]),
    "negative_step_partial": ([4, 3], [0, -7], [2, 1], [-3, -1]),
    "empty": ([3], [1], [0], [1]),
    "empty_negative_step": ([1], [3], [2], [-1]),
}


SLICE_RUNS = [(opset, case) for case in sorted(SLICES) for opset in (9, 10, 13, NEWEST)
              if opset >= 10 or all(s == 1 for s in SLICES[case][3])]  # opset 9 has no steps


@pytest.mark.parametrize("opset,case", SLICE_RUNS)
def test_slice(opset: int, case: str) -> None:
    starts, ends, axes, steps = SLICES[case]
    if opset < 10:
        node = helper.make_node("Slice", ["x"], ["y"], starts=starts, ends=ends, axes=axes)
        check_against_reference(model([node], {"x": (4, 5, 6)}, ["y"], opset))
        return
    inits = {k: np.array(v, np.int64) for k, v in zip(("s", "e", "a", "st"), (starts, ends, axes, steps))}
    node = helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])
    check_against_reference(model([node], {"x": (4, 5, 6)}, ["y"], opset, inits))


def test_slice_of_whole_tensor_emits_nothing() -> None:
    node = helper.make_node("Slice", ["x", "s", "e"], ["y"])
    m = model([node, helper.make_node("Relu", ["y"], ["z"])], {"x": (2, 3)}, ["z"], 13,
              {"s": np.array([0, 0], np.int64), "e": np.array([INT_MAX, 3], np.int64)})
    from iree_py.frontends.onnx import import_onnx
    assert [n.op for n in import_onnx(m).nodes] == ["Relu"]


def test_slice_of_shape_folds_to_a_constant() -> None:
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Slice", ["shape", "s", "e"], ["hw"]),
             helper.make_node("Concat", ["minus1", "hw"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    inits = {"s": np.array([2], np.int64), "e": np.array([INT_MAX], np.int64), "minus1": np.array([-1], np.int64)}
    m = model(nodes, {"x": (2, 3, 4, 5)}, ["y"], 13, inits)
    from iree_py.frontends.onnx import import_onnx
    g = import_onnx(m)
    assert [(n.op, n.attrs) for n in g.nodes] == [("Reshape", {"shape": [6, 4, 5]})]
    check_against_reference(m)


@pytest.mark.parametrize("opset", [11, 13, NEWEST])
@pytest.mark.parametrize("sizes", [None, [1, 4, 1]])
def test_split(opset: int, sizes: list[int] | None) -> None:
    inits, ins, attrs = {}, ["x"], {"axis": -2}
    if sizes is not None and opset < 13:
        attrs["split"] = sizes
    elif sizes is not None:
        inits["split"] = np.array(sizes, np.int64)
        ins.append("split")
    elif opset >= 18:
        attrs["num_outputs"] = 3
    node = helper.make_node("Split", ins, ["a", "b", "c"], **attrs)
    check_against_reference(model([node], {"x": (2, 6, 3)}, ["a", "b", "c"], opset, inits))


def test_split_num_outputs_uneven() -> None:
    node = helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)
    check_against_reference(model([node], {"x": (2, 7)}, ["a", "b", "c"], 18))
