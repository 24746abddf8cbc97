"""textops: TfIdfVectorizer (integer pools), QLinearMatMul / QLinearConv with a run-time weight,
uint16 and blocked QuantizeLinear / DequantizeLinear, against the oracle of
tests/e2e/harness.run_reference (the specification for integer products, and where onnxruntime lacks
the case; onnxruntime for the rest). Integer outputs and TfIdf counts bit-exact; float outputs exact too
(one f32 multiply). The imported graph runs through the IR reference kernels; some also on the host."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import iree_py
from iree_py.errors import CompileError
from iree_py.frontends.onnx import import_onnx
from iree_py.ir.reference import evaluate
from tests.e2e.harness import run_reference, run_spec

ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
        np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8,
        np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64,
        np.dtype(np.uint16): TensorProto.UINT16, np.dtype(np.int16): TensorProto.INT16}
RNG = np.random.default_rng(11)


def model(node: onnx.NodeProto, feeds: dict[str, np.ndarray], out_dtype, opset: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [node], "textops",
        [helper.make_tensor_value_info(n, ELEM[a.dtype], a.shape) for n, a in feeds.items()],
        [helper.make_tensor_value_info(node.output[0], ELEM[np.dtype(out_dtype)], None)])
    opset_id = helper.make_opsetid("", opset)
    m = helper.make_model(graph, opset_imports=[opset_id])
    m.ir_version = helper.find_min_ir_version_for([opset_id])
    return m


def check(m: onnx.ModelProto, feeds: dict[str, np.ndarray], targets: tuple[str, ...] = ("reference",),
          onnx_reference: bool = False) -> None:
    inputs = list(feeds.values())
    expected = (run_spec(m, inputs) if onnx_reference else run_reference(m, inputs))[0]
    for target in targets:
        if target == "reference":
            got = np.asarray(evaluate(import_onnx(m), feeds)[0])
        else:
            module = iree_py.load(iree_py.compile(m.SerializeToString(), target=target), device="local")
            got = module.main.call(*feeds.values())[0]
        assert got.dtype == expected.dtype and got.shape == expected.shape, f"{target}: {got.dtype}{got.shape}"
        wrong = np.argwhere(got != expected)
        assert wrong.size == 0, (f"{target}: {len(wrong)} of {got.size} differ, first at {tuple(wrong[0])}: "
                                 f"{got[tuple(wrong[0])]} != {expected[tuple(wrong[0])]}")


# ------------------------------------------------------------------------------ TfIdfVectorizer

POOL = dict(pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7, 2, 3, 2, 5, 2], ngram_counts=[0, 4, 12])
#            unigrams 2 3 5 4 | bigrams (5,6) (7,8) (6,7) (2,3) | trigram (2,5,2)


def tfidf(x: np.ndarray, mode: str, min_n: int, max_n: int, skips: int, indexes: list[int],
          weights: list[float] | None = None) -> onnx.ModelProto:
    attrs = dict(POOL, mode=mode, min_gram_length=min_n, max_gram_length=max_n, max_skip_count=skips,
                 ngram_indexes=indexes)
    if weights is not None:
        attrs["weights"] = weights
    return model(helper.make_node("TfIdfVectorizer", ["x"], ["y"], **attrs), {"x": x}, np.float32, 9)


@pytest.mark.parametrize("mode,min_n,max_n,skips", [("TF", 1, 3, 2), ("TF", 2, 2, 0), ("IDF", 1, 2, 3),
                                                    ("TFIDF", 2, 3, 1), ("TF", 3, 3, 4)])
def test_textops_tfidf_batch(mode: str, min_n: int, max_n: int, skips: int) -> None:
    x = RNG.integers(2, 9, size=(3, 11)).astype(np.int64)
    weights = [0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 0.75, 4.0, 2.5] if mode != "TF" else None
    m = tfidf(x, mode, min_n, max_n, skips, [0, 1, 2, 3, 4, 5, 6, 7, 8], weights)
    check(m, {"x": x})


def test_textops_tfidf_scattered_indexes_1d_host() -> None:
    """Output indexes out of pool order with a gap (index 9 unused -> 0); a 1-D int32 input."""
    x = RNG.integers(2, 9, size=(14,)).astype(np.int32)
    m = tfidf(x, "TF", 1, 3, 2, [8, 7, 6, 5, 4, 3, 2, 10, 0])
    check(m, {"x": x}, targets=("reference", "host"))


def test_textops_tfidf_idf_shared_index_and_wide_pool() -> None:
    """IDF marks an output index once even when two grams add to it; an int32 input never matches a
    pool token beyond int32 (2**32 + 3 must not wrap to 3)."""
    x = RNG.integers(2, 9, size=(2, 12)).astype(np.int32)
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], mode="IDF", min_gram_length=1, max_gram_length=2,
                            max_skip_count=1, ngram_counts=[0, 3], ngram_indexes=[0, 0, 1, 2, 2],
                            pool_int64s=[2, 3, 2**32 + 3, 5, 6, 2**32 + 3, 4])
    check(model(node, {"x": x}, np.float32, 9), {"x": x})


def test_textops_tfidf_refuses_strings() -> None:
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], mode="TF", min_gram_length=1, max_gram_length=1,
                            max_skip_count=0, ngram_counts=[0], ngram_indexes=[0, 1], pool_strings=["a", "b"])
    m = model(node, {"x": np.zeros((2, 3), np.int64)}, np.float32, 9)
    with pytest.raises(CompileError, match="pool_strings"):
        import_onnx(m)


# ------------------------------------------------------------------------------ run-time QLinear weights

def qrandom(dtype, shape) -> np.ndarray:
    low = -128 if np.dtype(dtype) == np.int8 else 0
    return RNG.integers(low, low + 256, size=shape).astype(dtype)


def qlinear_matmul_feeds(dtype, a_shape, b_shape, scale_dtype, b_scale_count: int = 1) -> dict[str, np.ndarray]:
    return {"a": qrandom(dtype, a_shape), "a_scale": np.array([0.0066], scale_dtype),
            "a_zp": qrandom(dtype, (1,)), "b": qrandom(dtype, b_shape),
            "b_scale": (RNG.uniform(0.004, 0.009, b_scale_count)).astype(scale_dtype),
            "b_zp": qrandom(dtype, (b_scale_count,)), "y_scale": np.array([0.0107 * b_shape[-2] / 4], scale_dtype),
            "y_zp": qrandom(dtype, (1,))}


@pytest.mark.parametrize("dtype,a_shape,b_shape,scale_dtype", [
    (np.uint8, (5, 16), (16, 7), np.float32), (np.int8, (2, 3, 8), (2, 8, 5), np.float32),
    (np.int8, (4, 8), (8, 6), np.float16)])
def test_textops_qlinear_matmul_runtime_b(dtype, a_shape, b_shape, scale_dtype) -> None:
    feeds = qlinear_matmul_feeds(dtype, a_shape, b_shape, scale_dtype)
    node = helper.make_node("QLinearMatMul", list(feeds), ["y"])
    check(model(node, feeds, dtype, 21), feeds, onnx_reference=scale_dtype == np.float16)


def test_textops_qlinear_matmul_per_column_host() -> None:
    feeds = qlinear_matmul_feeds(np.uint8, (3, 12), (12, 4), np.float32, b_scale_count=4)
    node = helper.make_node("QLinearMatMul", list(feeds), ["y"])
    check(model(node, feeds, np.uint8, 21), feeds, targets=("reference", "host"), onnx_reference=True)


def test_textops_qlinear_matmul_deep() -> None:
    """300 products per output (300 * 255**2 > 2**24, refused by the old float path): int32 sums."""
    feeds = qlinear_matmul_feeds(np.uint8, (2, 300), (300, 2), np.float32)
    node = helper.make_node("QLinearMatMul", list(feeds), ["y"])
    check(model(node, feeds, np.uint8, 21), feeds, targets=("reference", "host"))


def test_textops_qlinear_conv_runtime_w_host() -> None:
    feeds = {"x": qrandom(np.uint8, (1, 3, 7, 7)), "x_scale": np.array(0.0037, np.float32),
             "x_zp": np.array(132, np.uint8), "w": qrandom(np.uint8, (4, 3, 3, 3)),
             "w_scale": RNG.uniform(0.001, 0.003, 4).astype(np.float32), "w_zp": qrandom(np.uint8, (4,)),
             "y_scale": np.array(0.05, np.float32), "y_zp": np.array(120, np.uint8)}
    node = helper.make_node("QLinearConv", list(feeds), ["y"], pads=[1, 1, 1, 1], strides=[2, 1])
    check(model(node, feeds, np.uint8, 10), feeds, targets=("reference", "host"), onnx_reference=True)


# ------------------------------------------------------------------------------ uint16 / blocked (De)QuantizeLinear

def test_textops_quantize_uint16_runtime_params() -> None:
    feeds = {"x": RNG.uniform(-10, 5000, (4, 6)).astype(np.float32), "s": np.array(0.25, np.float32),
             "zp": np.array(1000, np.uint16)}
    node = helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"])
    check(model(node, feeds, np.uint16, 21), feeds, onnx_reference=True)


def test_textops_dequantize_uint16_host() -> None:
    feeds = {"x": RNG.integers(0, 65536, (3, 5)).astype(np.uint16), "s": np.array(0.5, np.float32),
             "zp": np.array(32767, np.uint16)}
    node = helper.make_node("DequantizeLinear", ["x", "s", "zp"], ["y"])
    check(model(node, feeds, np.float32, 21), feeds, targets=("reference", "host"), onnx_reference=True)


@pytest.mark.parametrize("axis,block", [(1, 2), (0, 4), (-1, 3)])
def test_textops_blocked_quantize_dequantize(axis: int, block: int) -> None:
    shape = (6, 8)
    pshape = list(shape)
    pshape[axis] = -(-shape[axis] // block)
    x = RNG.uniform(-3, 3, shape).astype(np.float32)
    scale = RNG.uniform(0.01, 0.05, pshape).astype(np.float32)
    zp = RNG.integers(-20, 20, pshape).astype(np.int8)
    q = helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"], axis=axis, block_size=block)
    check(model(q, {"x": x, "s": scale, "zp": zp}, np.int8, 21), {"x": x, "s": scale, "zp": zp}, onnx_reference=True)
    xq = RNG.integers(-128, 128, shape).astype(np.int8)
    d = helper.make_node("DequantizeLinear", ["x", "s", "zp"], ["y"], axis=axis, block_size=block)
    check(model(d, {"x": xq, "s": scale, "zp": zp}, np.float32, 21), {"x": xq, "s": scale, "zp": zp},
          onnx_reference=True)


def test_textops_blocked_wrong_param_shape() -> None:
    feeds = {"x": np.zeros((4, 6), np.float32), "s": np.ones((4, 2), np.float32)}
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], axis=1, block_size=2)
    with pytest.raises(CompileError, match="block_size 2"):
        import_onnx(model(node, feeds, np.uint8, 21))
