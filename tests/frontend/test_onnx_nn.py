"""Normalizations, Attention, Einsum, Swish, Shrink: imported as compositions of normalized ops,
evaluated with the numpy reference, compared with onnxruntime (1e-5 of the largest magnitude; see
onnx_models.py). Where onnxruntime departs from the ONNX reference (it fills masked attention scores
with the lowest float, the reference with -inf), the onnx ReferenceEvaluator is the oracle."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import iree_py
from iree_py.errors import CompileError
from iree_py.frontends.onnx import import_onnx
from iree_py.ir.ops import OPS
from iree_py.ir.reference import evaluate
from onnx_models import check_against_reference, model, random_inputs

rng = np.random.default_rng(7)


def w(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def single(op: str, inputs: dict[str, tuple[int, ...]], init: dict[str, np.ndarray], names: list[str],
           outputs: list[str], opset: int, **attrs):
    node = helper.make_node(op, names, outputs, **attrs)
    return model([node], inputs, [o for o in outputs if o], opset, init)


def check_against_reference(m, feeds: dict[str, np.ndarray] | None = None) -> None:
    """Compare with the onnx ReferenceEvaluator; infinities must match exactly."""
    feeds = feeds if feeds is not None else random_inputs(m)
    expected = ReferenceEvaluator(m).run(None, feeds)
    got = evaluate(import_onnx(m), feeds)
    for g, e in zip(got, expected):
        assert g.shape == e.shape
        np.testing.assert_array_equal(np.isinf(g), np.isinf(e))
        finite = np.isfinite(e)
        scale = max(float(np.abs(e[finite]).max(initial=0.0)), 1e-30)
        assert float(np.abs(g[finite].astype(np.float64) - e[finite]).max(initial=0.0)) / scale <= 1e-5


# ----------------------------------------------------------------------------------- normalizations

@pytest.mark.parametrize("shape,axis", [((2, 3, 8), -1), ((2, 3, 8), 1), ((4, 6), 0), ((2, 3, 4, 5), -2)])
@pytest.mark.parametrize("bias", [True, False])
def test_layer_normalization(shape: tuple[int, ...], axis: int, bias: bool) -> None:
    norm = shape[axis:] if axis >= 0 else shape[len(shape) + axis:]
    init = {"w": w(*norm)} | ({"b": w(*norm)} if bias else {})
    names = ["x", "w"] + (["b"] if bias else [])
    check_against_reference(single("LayerNormalization", {"x": shape}, init, names, ["y", "mean", "inv_std"], 17,
                                     axis=axis, epsilon=1e-3))


def test_layer_normalization_only_y_and_broadcast_scale() -> None:
    m = single("LayerNormalization", {"x": (3, 4, 6), "w": (6,)}, {}, ["x", "w"], ["y"], 17, axis=1)
    check_against_reference(m)


@pytest.mark.parametrize("shape,axis", [((2, 3, 8), -1), ((2, 3, 4, 5), 1), ((5, 7), 0)])
def test_rms_normalization(shape: tuple[int, ...], axis: int) -> None:
    norm = shape[axis:] if axis >= 0 else shape[len(shape) + axis:]
    m = single("RMSNormalization", {"x": shape}, {"w": w(*norm)}, ["x", "w"], ["y"], 23, axis=axis, epsilon=1e-4)
    check_against_reference(m)


@pytest.mark.parametrize("opset", [18, 21])
@pytest.mark.parametrize("shape,groups", [((2, 6, 4, 4), 3), ((1, 4, 5), 2), ((2, 4, 3, 3), 4), ((2, 4, 3, 3), 1)])
def test_group_normalization(opset: int, shape: tuple[int, ...], groups: int) -> None:
    params = groups if opset == 18 else shape[1]
    init = {"s": w(params), "b": w(params)}
    m = single("GroupNormalization", {"x": shape}, init, ["x", "s", "b"], ["y"], opset, num_groups=groups,
               epsilon=1e-3)
    check_against_reference(m)


@pytest.mark.parametrize("opset", [7, 13, 22])
@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (2, 4, 7), (1, 2, 3, 2, 2)])
def test_instance_normalization(opset: int, shape: tuple[int, ...]) -> None:
    init = {"s": w(shape[1]), "b": w(shape[1])}
    check_against_reference(single("InstanceNormalization", {"x": shape}, init, ["x", "s", "b"], ["y"], opset,
                                     epsilon=1e-3))


@pytest.mark.parametrize("opset", [9, 13])
@pytest.mark.parametrize("axes", [None, [0, 2, 3], [1], [2, 3], [-1]])
def test_mean_variance_normalization(opset: int, axes: list[int] | None) -> None:
    attrs = {} if axes is None else {"axes": axes}
    check_against_reference(single("MeanVarianceNormalization", {"x": (2, 3, 4, 5)}, {}, ["x"], ["y"], opset,
                                     **attrs))


def test_stash_type_other_than_float_is_refused() -> None:
    m = single("LayerNormalization", {"x": (2, 4)}, {"w": w(4)}, ["x", "w"], ["y"], 17, stash_type=11)
    with pytest.raises(CompileError, match="stash_type=11"):
        import_onnx(m)


def test_group_normalization_channels_not_divisible() -> None:
    m = single("GroupNormalization", {"x": (1, 6, 2)}, {"s": w(6), "b": w(6)}, ["x", "s", "b"], ["y"], 21,
               num_groups=4)
    with pytest.raises(CompileError, match="num_groups=4"):
        import_onnx(m)


# ------------------------------------------------------------------------------------ activations

@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_swish(alpha: float) -> None:
    check_against_reference(single("Swish", {"x": (3, 7)}, {}, ["x"], ["y"], 24, alpha=alpha))


@pytest.mark.parametrize("attrs", [{}, {"lambd": 1.5}, {"lambd": 1.5, "bias": 1.5}, {"lambd": 0.2, "bias": 0.7}])
def test_shrink(attrs: dict) -> None:
    m = single("Shrink", {"x": (4, 25)}, {}, ["x"], ["y"], 9, **attrs)
    feeds = {"x": np.concatenate([w(4, 20), np.array([[1.5, -1.5, 0.2, -0.2, 0.0]] * 4, np.float32)], axis=1)}
    check_against_reference(m, feeds)


# -------------------------------------------------------------------------------------- attention

ATTENTION_CASES = {
    "4d": ({"q": (2, 3, 4, 8), "k": (2, 3, 6, 8), "v": (2, 3, 6, 8)}, ["q", "k", "v"], ["y"], {}),
    "4d_scaled_diff_v": ({"q": (2, 3, 4, 8), "k": (2, 3, 6, 8), "v": (2, 3, 6, 5)}, ["q", "k", "v"], ["y"],
                         {"scale": 0.1}),
    "4d_gqa_causal": ({"q": (2, 6, 4, 8), "k": (2, 3, 6, 8), "v": (2, 3, 6, 8)}, ["q", "k", "v"], ["y"],
                      {"is_causal": 1}),
    "3d_gqa": ({"q": (2, 4, 48), "k": (2, 6, 24), "v": (2, 6, 18)}, ["q", "k", "v"], ["y"],
               {"q_num_heads": 6, "kv_num_heads": 3}),
    "3d_softcap": ({"q": (1, 4, 24), "k": (1, 6, 24), "v": (1, 6, 24)}, ["q", "k", "v"], ["y"],
                   {"q_num_heads": 3, "kv_num_heads": 3, "softcap": 2.0}),
    "mask_2d": ({"q": (2, 3, 4, 8), "k": (2, 3, 6, 8), "v": (2, 3, 6, 8), "m": (4, 6)}, ["q", "k", "v", "m"], ["y"],
                {}),
    "mask_4d_causal": ({"q": (2, 3, 4, 8), "k": (2, 3, 6, 8), "v": (2, 3, 6, 8), "m": (2, 1, 4, 6)},
                       ["q", "k", "v", "m"], ["y"], {"is_causal": 1}),
    "past_present": ({"q": (2, 3, 4, 8), "k": (2, 3, 6, 8), "v": (2, 3, 6, 8), "m": (4, 11), "pk": (2, 3, 5, 8),
                      "pv": (2, 3, 5, 8)}, ["q", "k", "v", "m", "pk", "pv"], ["y", "present_k", "present_v"], {}),
    "3d_past_causal_gqa": ({"q": (2, 4, 48), "k": (2, 4, 24), "v": (2, 4, 24), "pk": (2, 3, 3, 8),
                            "pv": (2, 3, 3, 8)}, ["q", "k", "v", "", "pk", "pv"], ["y", "present_k", "present_v"],
                           {"is_causal": 1, "q_num_heads": 6, "kv_num_heads": 3}),
    "qk_mode0_gqa": ({"q": (2, 6, 4, 8), "k": (2, 3, 6, 8), "v": (2, 3, 6, 8)}, ["q", "k", "v"],
                     ["y", "", "", "qk"], {}),
    "qk_mode1_softcap": ({"q": (2, 3, 4, 8), "k": (2, 3, 6, 8), "v": (2, 3, 6, 8), "m": (4, 6)},
                         ["q", "k", "v", "m"], ["y", "", "", "qk"], {"softcap": 2.0, "qk_matmul_output_mode": 1}),
    "qk_mode2_mask": ({"q": (2, 3, 4, 8), "k": (2, 3, 6, 8), "v": (2, 3, 6, 8), "m": (2, 3, 4, 6)},
                      ["q", "k", "v", "m"], ["y", "", "", "qk"], {"qk_matmul_output_mode": 2}),
    "qk_mode3_gqa": ({"q": (2, 6, 4, 8), "k": (2, 3, 6, 8), "v": (2, 3, 6, 8)}, ["q", "k", "v"],
                     ["y", "", "", "qk"], {"qk_matmul_output_mode": 3, "is_causal": 1}),
}


@pytest.mark.parametrize("opset", [23, 24])
@pytest.mark.parametrize("case", sorted(ATTENTION_CASES))
def test_attention(case: str, opset: int) -> None:
    inputs, names, outputs, attrs = ATTENTION_CASES[case]
    check_against_reference(single("Attention", inputs, {}, names, outputs, opset, **attrs))


def test_attention_constant_bool_mask() -> None:
    mask = rng.random((4, 6)) > 0.4
    mask[:, 0] = True
    m = single("Attention", {"q": (2, 3, 4, 8), "k": (2, 3, 6, 8), "v": (2, 3, 6, 8)}, {"m": mask},
               ["q", "k", "v", "m"], ["y"], 23)
    check_against_reference(m)


def test_attention_short_mask_is_padded_with_minus_inf() -> None:
    m = single("Attention", {"q": (1, 2, 3, 4), "k": (1, 2, 5, 4), "v": (1, 2, 5, 4), "m": (3, 3)},
               {}, ["q", "k", "v", "m"], ["y", "", "", "qk"], 23, qk_matmul_output_mode=2)
    check_against_reference(m)


def test_attention_causal_scores_output_has_minus_inf() -> None:
    m = single("Attention", {"q": (1, 2, 4, 4), "k": (1, 2, 6, 4), "v": (1, 2, 6, 4)}, {},
               ["q", "k", "v"], ["y", "", "", "qk"], 23, is_causal=1, qk_matmul_output_mode=2)
    check_against_reference(m)


def test_attention_sliding_window_opset25() -> None:
    m = single("Attention", {"q": (2, 3, 4, 8), "k": (2, 3, 6, 8), "v": (2, 3, 6, 8)}, {},
               ["q", "k", "v"], ["y"], 25, is_causal=1, left_window_size=2)
    check_against_reference(m)


@pytest.mark.parametrize("names,attrs,message", [
    (["q", "k", "v", "", "pk", "pv", "n"], {}, "nonpad_kv_seqlen cannot be combined with past_key"),
    (["q", "k", "v"], {"softmax_precision": 11}, "softmax_precision=11"),
    (["q", "k", "v"], {"softcap": 1.0, "qk_matmul_output_mode": 0}, "qk_matmul_output_mode=0"),
])
def test_attention_refusals(names: list[str], attrs: dict, message: str) -> None:
    init = {"n": np.array([6, 6], np.int64), "pk": w(2, 3, 2, 8), "pv": w(2, 3, 2, 8)} if "n" in names else {}
    outputs = ["y", "", "", "qk"] if "softcap" in attrs else ["y"]
    m = single("Attention", {"q": (2, 3, 4, 8), "k": (2, 3, 6, 8), "v": (2, 3, 6, 8)}, init, names, outputs, 25,
               **attrs)
    with pytest.raises(CompileError, match=message):
        import_onnx(m)


SOFTMAX_OF_MINUS_INF_ROW = "ignore:invalid value encountered in subtract:RuntimeWarning"  # the numpy reference


@pytest.mark.filterwarnings(SOFTMAX_OF_MINUS_INF_ROW)
@pytest.mark.parametrize("mode", [2, 3])
def test_attention_fully_masked_row_gives_zeros(mode: int) -> None:
    mask = np.ones((4, 6), bool)
    mask[2] = False
    m = single("Attention", {"q": (2, 3, 4, 8), "k": (2, 3, 6, 8), "v": (2, 3, 6, 8)}, {"m": mask},
               ["q", "k", "v", "m"], ["y", "", "", "qk"], 23, qk_matmul_output_mode=mode)
    check_against_reference(m)


def attention_model(inputs: dict[str, np.ndarray], outputs: list[str], opset: int, **attrs):
    """An Attention model whose inputs have the element types of the given arrays ('' skips an input)."""
    names = [n for n in inputs]
    infos = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
             for n, a in inputs.items() if not n.startswith("_")]
    graph = helper.make_graph([helper.make_node("Attention", [("" if n.startswith("_") else n) for n in names],
                                                outputs, **attrs)], "test", infos,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs if o])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


NONPAD_CASES = {
    "padding": (np.array([6, 3]), {}),
    "causal": (np.array([6, 4]), {"is_causal": 1}),
    "causal_short_rows_masked": (np.array([2, 5]), {"is_causal": 1}),
    "window_left": (np.array([5, 6]), {"is_causal": 1, "left_window_size": 2}),
    "window_both": (np.array([6, 4]), {"left_window_size": 1, "right_window_size": 1}),
}


@pytest.mark.filterwarnings(SOFTMAX_OF_MINUS_INF_ROW)
@pytest.mark.parametrize("case", sorted(NONPAD_CASES))
def test_attention_nonpad_kv_seqlen(case: str) -> None:
    lengths, attrs = NONPAD_CASES[case]
    opset = 25 if "left_window_size" in attrs else 24
    feeds = {"q": w(2, 2, 4, 8), "k": w(2, 2, 6, 8), "v": w(2, 2, 6, 8), "m": w(2, 1, 4, 6),
             "_pk": None, "_pv": None, "n": lengths.astype(np.int64)}
    m = attention_model(feeds, ["y"], opset, **attrs)
    if not all(op in OPS for op in ("LessOrEqual", "And", "Where", "IsInf")):
        with pytest.raises(CompileError, match="nonpad_kv_seqlen is not supported"):
            import_onnx(m)
        return
    check_against_reference(m, {n: a for n, a in feeds.items() if not n.startswith("_")})


@pytest.mark.filterwarnings(SOFTMAX_OF_MINUS_INF_ROW)
def test_attention_computed_bool_mask() -> None:
    """Needs Where (0 / -inf); without it the import says so."""
    q, k, v = w(2, 3, 4, 8), w(2, 3, 6, 8), w(2, 3, 6, 8)
    mask = rng.random((4, 6)) > 0.4
    mask[:, 0] = True
    mask[2] = False  # a fully masked row: zeros, as the reference
    graph = helper.make_graph(
        [helper.make_node("Attention", ["q", "k", "v", "m"], ["y"])], "test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in (("q", q), ("k", k), ("v", v))]
        + [helper.make_tensor_value_info("m", TensorProto.BOOL, mask.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    if "Where" not in OPS:
        with pytest.raises(CompileError, match="computed bool attn_mask"):
            import_onnx(m)
        return
    check_against_reference(m, {"q": q, "k": k, "v": v, "m": mask})


# ---------------------------------------------------------------------------------------- einsum

EINSUM_CASES = [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhid,bhjd->bhij", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("bhij,bhjd->bhid", [(2, 3, 4, 6), (2, 3, 6, 5)]),
    ("ij->ji", [(3, 4)]),
    ("ij->i", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("abc->cb", [(2, 3, 4)]),
    ("i,i", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("bij,bkj->bkij", [(2, 3, 4), (2, 5, 4)]),
    ("ij,kj->", [(2, 3), (4, 3)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ik,jk->ijk", [(3, 4), (5, 4)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("ii", [(4, 4)]),
    ("iji->ij", [(3, 2, 3)]),
    ("bii,bij->bj", [(2, 3, 3), (2, 3, 4)]),
]


@pytest.mark.parametrize("equation,shapes", EINSUM_CASES, ids=[e for e, _ in EINSUM_CASES])
def test_einsum(equation: str, shapes: list[tuple[int, ...]]) -> None:
    inputs = {f"x{i}": s for i, s in enumerate(shapes)}
    check_against_reference(single("Einsum", inputs, {}, list(inputs), ["y"], 12, equation=equation))


@pytest.mark.parametrize("equation,shapes,message", [
    ("ij,jk->ik", [(2, 3), (4, 5)], "size 3 in one operand and 4"),
])
def test_einsum_refusals(equation: str, shapes: list[tuple[int, ...]], message: str) -> None:
    inputs = {f"x{i}": s for i, s in enumerate(shapes)}
    m = single("Einsum", inputs, {}, list(inputs), ["y"], 12, equation=equation)
    with pytest.raises(CompileError, match=f"equation '{equation}' is not supported.*{message}"):
        import_onnx(m)


# ------------------------------------------------------------------------------------------- range

@pytest.mark.parametrize("start,limit,delta,dtype", [(0, 5, 1, np.int64), (10, 2, -3, np.int32), (0.5, 2.0, 0.4, np.float32),
                                                     (3, 3, 1, np.int64)])
def test_range_of_constants(start, limit, delta, dtype) -> None:
    init = {n: np.array(v, dtype) for n, v in (("s", start), ("l", limit), ("d", delta))}
    nodes = [helper.make_node("Range", ["s", "l", "d"], ["r"]),
             helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", "rf"], ["y"])]
    expected_len = max(int(np.ceil((limit - start) / delta)), 0)
    check_against_reference(model(nodes, {"x": (expected_len,)}, ["y"], 13, init))


def test_range_takes_one_element_tensors_as_scalars() -> None:
    """Expanded ONNX functions (AffineGrid) give Range [1]-shaped bounds; onnx's reference reads them
    as scalars, and so does iree-py."""
    init = {"s": np.array([1], np.int64), "l": np.array([7], np.int64), "d": np.array(2, np.int64)}
    nodes = [helper.make_node("Range", ["s", "l", "d"], ["r"]),
             helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", "rf"], ["y"])]
    m = model(nodes, {"x": (3,)}, ["y"], 13, init)
    x = np.zeros(3, np.float32)
    np.testing.assert_array_equal(iree_py.load(iree_py.compile(m.SerializeToString())).main.call(x)[0], [1, 3, 5])


def test_range_of_a_tensor_bound_names_the_input() -> None:
    init = {"s": np.array(0, np.int64), "l": np.array([3, 4], np.int64), "d": np.array(1, np.int64)}
    nodes = [helper.make_node("Range", ["s", "l", "d"], ["y"], name="r")]
    m = model(nodes, {}, ["y"], 13, init)
    with pytest.raises(CompileError, match=r"node 'r' \(op Range, opset 13\): limit \(input 1\) must be a scalar, got shape \[2\]"):
        import_onnx(m)


def test_range_of_computed_float_start_is_read_at_run_time() -> None:
    """A float Range whose start arrives at run time: its length is a symbol read at run time
    (frontends/onnx/tensor_ops.py), one module for every start."""
    nodes = [helper.make_node("Range", ["x", "l", "d"], ["y"])]
    m = model(nodes, {"x": ()}, ["y"], 13, {"l": np.array(4.0, np.float32), "d": np.array(1.0, np.float32)})
    module = iree_py.load(iree_py.compile(m.SerializeToString()))
    for start in (0.5, 3.0, 7.0):
        x = np.array(start, np.float32)
        np.testing.assert_allclose(module.main.call(x)[0], np.arange(start, 4.0, 1.0, dtype=np.float32))
