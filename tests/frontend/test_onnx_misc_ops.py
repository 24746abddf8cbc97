"""Loss ops and other miscellaneous ONNX ops (frontends/onnx/loss.py, ...): imported as normalized ops,
evaluated with the numpy reference, compared with onnxruntime (1e-5 of the largest magnitude of the
expected output; see onnx_models.py)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from iree_py.errors import CompileError
from iree_py.frontends.onnx import import_onnx
from iree_py.ir.reference import evaluate
from onnx.reference import ReferenceEvaluator
from onnx_models import check_against_reference

rng = np.random.default_rng(11)
ONNX_TYPES = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int8: TensorProto.INT8,
              np.int16: TensorProto.INT16, np.int32: TensorProto.INT32, np.int64: TensorProto.INT64}


def typed_model(op: str, feeds: dict[str, np.ndarray], init: dict[str, np.ndarray], names: list[str],
                outputs: list[str], opset: int, **attrs) -> onnx.ModelProto:
    """One node; graph inputs typed like `feeds`, outputs typed like the first feed."""
    out_type = ONNX_TYPES[next(iter(feeds.values())).dtype.type]
    graph = helper.make_graph(
        [helper.make_node(op, names, outputs, **attrs)], "test",
        [helper.make_tensor_value_info(n, ONNX_TYPES[a.dtype.type], a.shape) for n, a in feeds.items()],
        [helper.make_tensor_value_info(n, out_type, None) for n in outputs if n],
        [numpy_helper.from_array(a, n) for n, a in init.items()])
    opset_id = helper.make_opsetid("", opset)
    m = helper.make_model(graph, opset_imports=[opset_id])
    m.ir_version = helper.find_min_ir_version_for([opset_id])
    return m


# ------------------------------------------------------------------------------------------ losses

LOSS_SHAPES = [(5, 4), (3, 5, 2), (2, 3, 2, 3)]


def _targets(shape: tuple[int, ...], ignore_index: int | None) -> np.ndarray:
    """Random classes; with an ignore_index, every third target is ignored and no other is (so some
    weight remains and the mean is defined)."""
    target = rng.integers(0, shape[1], size=(shape[0], *shape[2:])).astype(np.int64)
    if ignore_index is None:
        return target
    target[target == ignore_index] = (ignore_index + 1) % shape[1]
    target.reshape(-1)[::3] = ignore_index
    return target


@pytest.mark.parametrize("op", ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
@pytest.mark.parametrize("shape", LOSS_SHAPES)
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted,ignore_index", [(False, None), (True, None), (False, -1), (True, 2)])
def test_loss(op: str, shape: tuple[int, ...], reduction: str, weighted: bool, ignore_index: int | None) -> None:
    feeds = {"x": rng.standard_normal(shape).astype(np.float32), "t": _targets(shape, ignore_index)}
    init = {"w": rng.uniform(0.5, 2.0, shape[1]).astype(np.float32)} if weighted else {}
    attrs = {"reduction": reduction} | ({"ignore_index": ignore_index} if ignore_index is not None else {})
    outputs = ["loss", "log_prob"] if op == "SoftmaxCrossEntropyLoss" else ["loss"]
    m = typed_model(op, feeds, init, ["x", "t"] + (["w"] if weighted else []), outputs, 13, **attrs)
    check_against_reference(m, feeds)


def test_loss_with_constant_targets_folds_the_masks() -> None:
    target = np.array([[0, 3], [-1, 1]], dtype=np.int64)
    feeds = {"x": rng.standard_normal((2, 4, 2)).astype(np.float32)}
    m = typed_model("NegativeLogLikelihoodLoss", feeds, {"t": target}, ["x", "t"], ["loss"], 13,
                    reduction="mean", ignore_index=-1)
    check_against_reference(m, feeds)
    assert {n.op for n in import_onnx(m).nodes} == {"GatherElements", "Reshape", "Neg", "Mul", "Reduce", "Div"}


@pytest.mark.parametrize("attrs,message", [
    ({"reduction": "max"}, "reduction='max'"),
])
def test_loss_errors(attrs: dict, message: str) -> None:
    feeds = {"x": rng.standard_normal((2, 3)).astype(np.float32), "t": np.array([0, 1], np.int64)}
    m = typed_model("NegativeLogLikelihoodLoss", feeds, {}, ["x", "t"], ["loss"], 13, **attrs)
    with pytest.raises(CompileError, match=message):
        import_onnx(m)


def test_loss_rejects_a_target_of_the_wrong_shape() -> None:
    feeds = {"x": rng.standard_normal((2, 3, 4)).astype(np.float32), "t": np.zeros((2, 3), np.int64)}
    m = typed_model("NegativeLogLikelihoodLoss", feeds, {}, ["x", "t"], ["loss"], 13)
    with pytest.raises(CompileError, match=r"target .* must have shape \[2, 4\]"):
        import_onnx(m)


# ---------------------------------------------------------------------------------- CumSum / CumProd

@pytest.mark.parametrize("op", ["CumSum", "CumProd"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumulative_constant_axis(op: str, dtype: type, exclusive: int, reverse: int) -> None:
    x = rng.uniform(0.5, 1.5, (2, 3, 4)) if dtype in (np.float32, np.float64) else rng.integers(-3, 4, (2, 3, 4))
    feeds = {"x": x.astype(dtype)}
    m = typed_model(op, feeds, {"axis": np.array(-2, np.int64)}, ["x", "axis"], ["y"], 26,
                    exclusive=exclusive, reverse=reverse)
    check_against_reference(m, feeds) if op == "CumSum" else _check_cumprod(m, feeds)


@pytest.mark.parametrize("op", ["CumSum", "CumProd"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_cumulative_runtime_axis_picks_the_named_axis(op: str, axis: int) -> None:
    feeds = {"x": rng.uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32), "axis": np.array(axis, np.int32)}
    m = typed_model(op, feeds, {}, ["x", "axis"], ["y"], 26, reverse=1)
    check_against_reference(m, feeds) if op == "CumSum" else _check_cumprod(m, feeds)


def _check_cumprod(m: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    """onnxruntime 1.32 has no CumProd kernel: the onnx ReferenceEvaluator is the oracle (exact for
    integers, 1e-6 relative for floats)."""
    expected = ReferenceEvaluator(m).run(None, feeds)[0]
    got = evaluate(import_onnx(m), feeds)[0]
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_cumulative_rejects_unsupported_dtypes() -> None:
    m = typed_model("CumSum", {"x": np.ones((3,), np.int16)}, {"axis": np.array(0, np.int64)}, ["x", "axis"], ["y"], 14)
    with pytest.raises(CompileError, match="only float32, float64, int32 and int64"):
        import_onnx(m)


# ------------------------------------------------------------------------------------- GridSample

@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_2d(mode: str, padding: str, align: int) -> None:
    feeds = {"x": rng.standard_normal((2, 3, 5, 4)).astype(np.float32),
             "grid": rng.uniform(-1.6, 1.6, (2, 3, 6, 2)).astype(np.float32)}
    m = typed_model("GridSample", feeds, {}, ["x", "grid"], ["y"], 22, mode=mode, padding_mode=padding,
                    align_corners=align)
    check_against_reference(m, feeds)


@pytest.mark.parametrize("mode", ["linear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
def test_grid_sample_3d(mode: str, padding: str) -> None:
    feeds = {"x": rng.standard_normal((1, 2, 3, 4, 5)).astype(np.float32),
             "grid": rng.uniform(-1.3, 1.3, (1, 2, 3, 4, 3)).astype(np.float32)}
    m = typed_model("GridSample", feeds, {}, ["x", "grid"], ["y"], 22, mode=mode, padding_mode=padding)
    check_against_reference(m, feeds)


def test_grid_sample_opset_16_mode_names() -> None:
    feeds = {"x": rng.standard_normal((1, 2, 4, 4)).astype(np.float32),
             "grid": rng.uniform(-1.2, 1.2, (1, 3, 3, 2)).astype(np.float32)}
    check_against_reference(typed_model("GridSample", feeds, {}, ["x", "grid"], ["y"], 16, mode="bicubic"), feeds)
    with pytest.raises(CompileError, match="mode='linear' not supported"):
        import_onnx(typed_model("GridSample", feeds, {}, ["x", "grid"], ["y"], 16, mode="linear"))


# ---------------------------------------------------------------- RotaryEmbedding and friends

@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rotary_dim", [0, 4])
@pytest.mark.parametrize("layout", ["4d", "3d"])
def test_rotary_embedding(interleaved: int, rotary_dim: int, layout: str) -> None:
    half = (rotary_dim or 8) // 2
    shape = (2, 4, 3, 8) if layout == "4d" else (2, 3, 32)
    feeds = {"x": rng.standard_normal(shape).astype(np.float32),
             "cos": rng.standard_normal((10, half)).astype(np.float32),
             "sin": rng.standard_normal((10, half)).astype(np.float32),
             "pos": rng.integers(0, 10, (2, 3)).astype(np.int64)}
    attrs = {"interleaved": interleaved, "rotary_embedding_dim": rotary_dim} | ({"num_heads": 4} if layout == "3d" else {})
    m = typed_model("RotaryEmbedding", feeds, {}, ["x", "cos", "sin", "pos"], ["y"], 23, **attrs)
    check_against_reference(m, feeds)


@pytest.mark.parametrize("p,axis", [(1, -1), (2, 0), (2, 1)])
def test_lp_normalization(p: int, axis: int) -> None:
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    x[1, :, 2] = 0.0  # a zero vector along axis 1 normalizes to 0
    feeds = {"x": x}
    check_against_reference(typed_model("LpNormalization", feeds, {}, ["x"], ["y"], 22, p=p, axis=axis), feeds)


@pytest.mark.parametrize("shape", [(2, 2), (3, 3), (2, 4, 4), (1, 1)])
def test_det(shape: tuple[int, ...]) -> None:
    feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
    check_against_reference(typed_model("Det", feeds, {}, ["x"], ["y"], 22), feeds)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_bitwise_not(dtype: type) -> None:
    feeds = {"x": rng.integers(-1000, 1000, (3, 4)).astype(dtype)}
    check_against_reference(typed_model("BitwiseNot", feeds, {}, ["x"], ["y"], 18), feeds)


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_swiglu(alpha: float) -> None:
    feeds = {"a": rng.standard_normal((2, 5)).astype(np.float32), "b": rng.standard_normal((2, 5)).astype(np.float32)}
    m = typed_model("SwiGLU", feeds, {}, ["a", "b"], ["y"], 28, alpha=alpha)
    np.testing.assert_allclose(evaluate(import_onnx(m), feeds)[0], ReferenceEvaluator(m).run(None, feeds)[0],
                               rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------------- DFT and windows

DFT_CASES = [(shape, axis, inverse, onesided)
             for shape, axis in [((2, 8, 1), 1), ((2, 6, 5, 2), 1), ((3, 7, 2), 0), ((2, 6, 5, 2), -2)]
             for inverse, onesided in [(0, 0), (1, 0), (0, 1), (1, 1)]
             if not (inverse and onesided and shape[-1] == 1)]  # needs complex input: test_dft_errors


@pytest.mark.parametrize("shape,axis,inverse,onesided", DFT_CASES)
@pytest.mark.parametrize("length", [None, 4, 12])
def test_dft(shape: tuple[int, ...], axis: int, inverse: int, onesided: int, length: int | None) -> None:
    feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
    init = {"axis": np.array(axis, np.int64)} | ({"n": np.array(length, np.int64)} if length else {})
    names = ["x", "n" if length else "", "axis"]
    m = typed_model("DFT", feeds, init, names, ["y"], 20, inverse=inverse, onesided=onesided)
    expected = ReferenceEvaluator(m).run(None, feeds)[0]
    got = evaluate(import_onnx(m), feeds)[0]
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, atol=1e-5 * float(np.abs(expected).max()))


def test_dft_opset_17_axis_attribute_against_onnxruntime() -> None:
    feeds = {"x": rng.standard_normal((2, 6, 5, 2)).astype(np.float32)}
    check_against_reference(typed_model("DFT", feeds, {}, ["x"], ["y"], 17, axis=2), feeds)
    check_against_reference(typed_model("DFT", feeds, {}, ["x"], ["y"], 17, axis=1, inverse=1), feeds)


def test_dft_runtime_axis_picks_the_named_axis() -> None:
    feeds = {"x": rng.standard_normal((2, 5, 5, 2)).astype(np.float32), "axis": np.array(-3, np.int64)}
    m = typed_model("DFT", feeds, {}, ["x", "", "axis"], ["y"], 20)
    np.testing.assert_allclose(evaluate(import_onnx(m), feeds)[0], ReferenceEvaluator(m).run(None, feeds)[0],
                               atol=1e-5)


def test_dft_errors() -> None:
    feeds = {"x": rng.standard_normal((2, 6, 1)).astype(np.float32)}
    with pytest.raises(CompileError, match="needs complex input"):
        import_onnx(typed_model("DFT", feeds, {}, ["x"], ["y"], 17, inverse=1, onesided=1))
    with pytest.raises(CompileError, match="other than the last"):
        import_onnx(typed_model("DFT", feeds, {}, ["x"], ["y"], 17, axis=2))
    uneven = {"x": rng.standard_normal((2, 6, 4, 1)).astype(np.float32), "axis": np.array(1, np.int64)}
    with pytest.raises(CompileError, match="result shape depends on it"):
        import_onnx(typed_model("DFT", uneven, {}, ["x", "", "axis"], ["y"], 20, onesided=1))


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
def test_windows_of_constant_size(op: str, periodic: int) -> None:
    graph = helper.make_graph([helper.make_node(op, ["size"], ["y"], periodic=periodic)], "test", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array(10, np.int64), "size")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    np.testing.assert_allclose(evaluate(import_onnx(m), {})[0], ReferenceEvaluator(m).run(None, {})[0], atol=1e-6)


@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64])
def test_bitwise_binary(op: str, dtype: type) -> None:
    feeds = {"a": rng.integers(-500, 500, (3, 4)).astype(dtype), "b": rng.integers(-500, 500, (4,)).astype(dtype)}
    check_against_reference(typed_model(op, feeds, {}, ["a", "b"], ["y"], 18), feeds)


# ---------------------------------------------------------------------------------- LinearAttention

@pytest.mark.parametrize("rule", ["linear", "gated", "delta", "gated_delta"])
@pytest.mark.parametrize("heads,per_feature,past", [((4, 4), True, False), ((8, 2), False, True)])
def test_linear_attention(rule: str, heads: tuple[int, int], per_feature: bool, past: bool) -> None:
    """onnxruntime 1.32 has no LinearAttention (opset 27): the onnx ReferenceEvaluator is the oracle."""
    hq, hkv = heads
    d_k, d_v, b, t = 4, 3, 2, 3
    feeds = {"q": rng.standard_normal((b, t, hq * d_k)).astype(np.float32),
             "k": rng.standard_normal((b, t, hkv * d_k)).astype(np.float32),
             "v": rng.standard_normal((b, t, hkv * d_v)).astype(np.float32)}
    names = ["q", "k", "v", "", "", ""]
    if past:
        feeds["past"], names[3] = rng.standard_normal((b, hkv, d_k, d_v)).astype(np.float32), "past"
    if rule in ("gated", "gated_delta"):
        width = hkv * d_k if per_feature else hkv
        feeds["decay"], names[4] = -rng.uniform(0.0, 0.5, (b, t, width)).astype(np.float32), "decay"
    if rule in ("delta", "gated_delta"):
        feeds["beta"], names[5] = rng.uniform(0.0, 1.0, (b, t, hkv)).astype(np.float32), "beta"
    m = typed_model("LinearAttention", feeds, {}, names, ["y", "state"], 27, q_num_heads=hq, kv_num_heads=hkv,
                    update_rule=rule)
    got = evaluate(import_onnx(m), feeds)
    for g, e in zip(got, ReferenceEvaluator(m).run(None, feeds)):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, atol=1e-5 * float(np.abs(e).max()))


def test_linear_attention_rule_inputs_are_checked() -> None:
    feeds = {n: rng.standard_normal((1, 2, 8)).astype(np.float32) for n in ("q", "k", "v")}
    m = typed_model("LinearAttention", feeds, {}, ["q", "k", "v"], ["y"], 27, q_num_heads=2, kv_num_heads=2)
    with pytest.raises(CompileError, match="update_rule 'gated_delta' needs decay"):
        import_onnx(m)


# ------------------------------------------------------------------------- BitCast, TensorScatter

@pytest.mark.parametrize("src,dst", [(np.float32, TensorProto.INT32), (np.int64, TensorProto.DOUBLE),
                                     (np.int32, TensorProto.FLOAT)])
def test_bitcast(src: type, dst: int) -> None:
    """onnxruntime 1.32 has no BitCast (opset 26): numpy's view is the oracle (exact)."""
    feeds = {"x": rng.integers(0, 1 << 20, (2, 3)).astype(src)}
    m = typed_model("BitCast", feeds, {}, ["x"], ["y"], 26, to=dst)
    np.testing.assert_array_equal(evaluate(import_onnx(m), feeds)[0],
                                  feeds["x"].view(onnx.helper.tensor_dtype_to_np_dtype(dst)))


def test_bitcast_refuses_other_sizes_and_bool() -> None:
    feeds = {"x": np.zeros((2,), np.float32)}
    with pytest.raises(CompileError, match="differs in size"):
        import_onnx(typed_model("BitCast", feeds, {}, ["x"], ["y"], 26, to=TensorProto.INT64))
    feeds = {"x": np.zeros((2,), np.int8)}
    with pytest.raises(CompileError, match="not all valid bools"):
        import_onnx(typed_model("BitCast", feeds, {}, ["x"], ["y"], 26, to=TensorProto.BOOL))


@pytest.mark.parametrize("mode", ["linear", "circular"])
@pytest.mark.parametrize("axis", [-2, 1])
def test_tensor_scatter(mode: str, axis: int) -> None:
    """onnx ReferenceEvaluator as the oracle (exact: the values are moved)."""
    feeds = {"cache": rng.standard_normal((3, 5, 4)).astype(np.float32),
             "update": rng.standard_normal((3, 2, 4)).astype(np.float32),
             "w": np.array([0, 3, 4 if mode == "circular" else 1], np.int64)}
    m = typed_model("TensorScatter", feeds, {}, ["cache", "update", "w"], ["y"], 24, mode=mode, axis=axis)
    np.testing.assert_array_equal(evaluate(import_onnx(m), feeds)[0], ReferenceEvaluator(m).run(None, feeds)[0])


def test_max_unpool() -> None:
    n, c, h, w = 2, 3, 3, 2  # pooled [2, 3, 3, 2] from [2, 3, 6, 4] with 2x2 windows, stride 2
    rows = 2 * np.arange(h)[:, None] + rng.integers(0, 2, (n, c, h, w))
    cols = 2 * np.arange(w)[None, :] + rng.integers(0, 2, (n, c, h, w))
    plane = (np.arange(n)[:, None, None, None] * c + np.arange(c)[None, :, None, None]) * (2 * h * 2 * w)
    feeds = {"x": rng.standard_normal((n, c, h, w)).astype(np.float32),
             "i": (plane + rows * (2 * w) + cols).astype(np.int64)}
    m = typed_model("MaxUnpool", feeds, {}, ["x", "i"], ["y"], 22, kernel_shape=[2, 2], strides=[2, 2])
    check_against_reference(m, feeds)
