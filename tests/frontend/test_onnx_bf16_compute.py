"""bf16 operands of float ops (iree_py/frontends/onnx/dtypes.py): compiled for the host and run, against
float32 arithmetic on the widened inputs rounded to bf16 once, as onnx's reference computes bf16
Einsum (onnxruntime's CPU provider has no bf16 Celu/Einsum). Einsum on small integers is exact in
f32, so it compares bit for bit; Celu goes through our f32 expm1, so within one bf16 ulp (2**-7
relative)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
from onnx import TensorProto, helper

import iree_py
from iree_py.frontends.onnx import import_onnx

BF16 = ml_dtypes.bfloat16


def _model(nodes: list, inputs: dict[str, tuple[int, ...]], outputs: list[str]):
    graph = helper.make_graph(nodes, "bf16", [helper.make_tensor_value_info(n, TensorProto.BFLOAT16, s)
                                              for n, s in inputs.items()],
                              [helper.make_tensor_value_info(n, TensorProto.BFLOAT16, None) for n in outputs])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    m.ir_version = 10
    return m


def _run(m, *inputs: np.ndarray) -> list[np.ndarray]:
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device="local")
    return list(module.main.call(*inputs))


def test_bf16_einsum_and_product_round_once() -> None:
    nodes = [helper.make_node("Einsum", ["a", "b"], ["mm"], equation="bij,bjk->bik"),
             helper.make_node("Einsum", ["a"], ["rows"], equation="bij->bi"),
             helper.make_node("Mul", ["a", "a"], ["sq"])]
    m = _model(nodes, {"a": (2, 3, 5), "b": (2, 5, 4)}, ["mm", "rows", "sq"])
    rng = np.random.default_rng(0)
    a = rng.integers(-20, 20, (2, 3, 5)).astype(BF16)
    b = rng.integers(-20, 20, (2, 5, 4)).astype(BF16)
    mm, rows, sq = _run(m, a, b)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    for got, want in ((mm, a32 @ b32), (rows, a32.sum(-1)), (sq, a32 * a32)):
        assert got.dtype == BF16
        np.testing.assert_array_equal(got.view(np.uint16), want.astype(BF16).view(np.uint16))
    ops = [n.op for n in import_onnx(m).nodes]
    # per node: Einsum widens a and b, the second Einsum a, Mul(a, a) a once; three results rounded
    assert "MatMul" in ops and ops.count("Cast") == 4 + 3


def test_bf16_celu_within_one_ulp() -> None:
    x = np.linspace(-6.0, 6.0, 97).astype(BF16)
    m = _model([helper.make_node("Celu", ["x"], ["y"], alpha=2.0)], {"x": (97,)}, ["y"])
    (got,) = _run(m, x)
    x32 = x.astype(np.float32)
    want = (np.maximum(0, x32) + np.minimum(0, 2.0 * np.expm1(x32 / 2.0))).astype(BF16)
    assert got.dtype == BF16
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2.0 ** -7, atol=0)
