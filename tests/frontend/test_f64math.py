"""float64 Exp / Log / Reciprocal (codegen/llvm/math_f64.py) and f64 reductions (the "reduce" kernel,
codegen/llvm/reduce.py, and the run-time axes "reduce_rt" kernel), compiled for the host and run.

References: numpy in float64. Exp and Log are fdlibm's algorithms (< 1 ulp), so they are compared at
rtol 4e-16 (about 2 ulp) plus the ulp of the value; reductions at rtol 1e-13 (summation order
differs from numpy's pairwise sum). An op still without an f64 kernel (Sin) fails at compile time.
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import iree_py


def _model(nodes: list, inputs: dict[str, tuple[int, ...]], outputs: list[str], initializers=(),
           int_inputs: dict[str, tuple[int, ...]] | None = None, opset: int = 18):
    infos = [helper.make_tensor_value_info(n, TensorProto.DOUBLE, s) for n, s in inputs.items()]
    infos += [helper.make_tensor_value_info(n, TensorProto.INT64, s) for n, s in (int_inputs or {}).items()]
    graph = helper.make_graph(nodes, "f64math", infos,
                              [helper.make_tensor_value_info(n, TensorProto.DOUBLE, None) for n in outputs],
                              initializer=list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _run(m, *feeds: np.ndarray) -> list[np.ndarray]:
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device="local")
    return [np.asarray(r) for r in module.main.call(*feeds)]


def _close_ulp(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == np.float64 and got.shape == want.shape
    both_nan = np.isnan(got) & np.isnan(want)
    with np.errstate(invalid="ignore"):
        err = np.abs(got - want)
    ok = both_nan | (got == want) | (err <= 4e-16 * np.abs(want) + np.spacing(np.abs(want)))
    assert ok.all(), f"bad at {np.argwhere(~ok)[:5].ravel()}: got {got[~ok][:5]}, want {want[~ok][:5]}"


def test_f64math_exp_log_reciprocal() -> None:
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-740.0, 705.0, 200), rng.normal(0.0, 2.0, 200),
                        [0.0, -0.0, 709.8, -746.0, np.inf, -np.inf, np.nan, 1e-310, 1.0]])
    pos = np.concatenate([np.exp(rng.uniform(-700.0, 700.0, 200)), rng.uniform(0.0, 3.0, 200),
                          [5e-324, 1e-310, 0.0, -1.0, np.inf, np.nan, 1.0, 2.0, 0.5]])
    m = _model([helper.make_node("Exp", ["x"], ["e"]), helper.make_node("Log", ["p"], ["l"]),
                helper.make_node("Reciprocal", ["p"], ["r"])], {"x": x.shape, "p": pos.shape}, ["e", "l", "r"])
    e, l, r = _run(m, x, pos)
    with np.errstate(all="ignore"):
        _close_ulp(e, np.exp(x))
        _close_ulp(l, np.log(pos))
        _close_ulp(r, 1.0 / pos)


def _logsumexp(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    return np.log(np.sum(np.exp(x), axis=axes, keepdims=keepdims))


def test_f64math_static_reduce() -> None:
    x = np.random.default_rng(3).normal(0.0, 3.0, (3, 4, 5))
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    m = _model([helper.make_node("ReduceLogSumExp", ["x", "axes"], ["lse"], keepdims=1),
                helper.make_node("ReduceL2", ["x", "axes"], ["l2"], keepdims=0),
                helper.make_node("ReduceMean", ["x"], ["mean"], keepdims=1)],
               {"x": x.shape}, ["lse", "l2", "mean"], initializers=[axes])
    lse, l2, mean = _run(m, x)
    np.testing.assert_allclose(lse, _logsumexp(x, (1,), True), rtol=1e-13, atol=0)
    np.testing.assert_allclose(l2, np.sqrt(np.sum(x * x, axis=1)), rtol=1e-13, atol=0)
    np.testing.assert_allclose(mean, np.mean(x, keepdims=True), rtol=1e-13, atol=0)
    assert lse.dtype == np.float64 and lse.shape == (3, 1, 5)


@pytest.mark.parametrize("axes", [(0, 2), (-1,), (1,)])
def test_f64math_runtime_axes_reduce(axes: tuple[int, ...]) -> None:
    x = np.random.default_rng(5).normal(0.0, 3.0, (3, 4, 5))
    m = _model([helper.make_node("ReduceLogSumExp", ["x", "axes"], ["lse"], keepdims=0),
                helper.make_node("ReduceMean", ["x", "axes"], ["mean"], keepdims=1)],
               {"x": x.shape}, ["lse", "mean"], int_inputs={"axes": (len(axes),)})
    lse, mean = _run(m, x, np.array(axes, np.int64))
    np.testing.assert_allclose(lse, _logsumexp(x, axes, False), rtol=1e-13, atol=0)
    np.testing.assert_allclose(mean, np.mean(x, axis=axes, keepdims=True), rtol=1e-13, atol=0)


def test_f64math_sin_refused_at_compile_time() -> None:
    m = _model([helper.make_node("Sin", ["x"], ["y"])], {"x": (4,)}, ["y"])
    with pytest.raises(Exception, match="f64"):
        iree_py.compile(m.SerializeToString(), target="host")


@pytest.mark.parametrize("axis", [-1, 1])
def test_f64math_softmax_logsoftmax(axis: int) -> None:
    x = np.random.default_rng(11).normal(0.0, 5.0, (2, 3, 7))
    x[0, 0, 0] = 700.0  # exp would overflow without the max shift
    m = _model([helper.make_node("Softmax", ["x"], ["s"], axis=axis),
                helper.make_node("LogSoftmax", ["x"], ["l"], axis=axis)], {"x": x.shape}, ["s", "l"], opset=13)
    s, l = _run(m, x)
    shifted = x - x.max(axis=axis, keepdims=True)
    want_l = shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
    np.testing.assert_allclose(s, np.exp(want_l), rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(l, want_l, rtol=1e-13, atol=1e-13)
    assert s.dtype == np.float64


def test_f64math_symbolic_softmax_refused() -> None:
    graph = helper.make_graph([helper.make_node("Softmax", ["x"], ["s"], axis=-1)], "f64math",
                              [helper.make_tensor_value_info("x", TensorProto.DOUBLE, ["n", 4])],
                              [helper.make_tensor_value_info("s", TensorProto.DOUBLE, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    with pytest.raises(Exception, match="f32"):
        iree_py.compile(m.SerializeToString(), target="host")


@pytest.mark.parametrize("a_shape, b_shape", [((3, 5), (5, 4)), ((2, 1, 3, 5), (4, 5, 6)), ((5,), (5,)),
                                              ((2, 3, 5), (5,))])
def test_f64math_matmul(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(13)
    a, b = rng.normal(size=a_shape), rng.normal(size=b_shape)
    m = _model([helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": a_shape, "b": b_shape}, ["y"], opset=13)
    (y,) = _run(m, a, b)
    want = np.matmul(a, b)
    assert y.dtype == np.float64 and y.shape == want.shape
    np.testing.assert_allclose(y, want, rtol=1e-13, atol=1e-14)


def test_f64math_matmul_then_add() -> None:
    """An f64 MatMul followed by Add (not fused into an f64 epilogue: the f64 kernel has none)."""
    rng = np.random.default_rng(17)
    a, b, c = rng.normal(size=(3, 5)), rng.normal(size=(5, 4)), rng.normal(size=(4,))
    m = _model([helper.make_node("MatMul", ["a", "b"], ["t"]), helper.make_node("Add", ["t", "c"], ["y"])],
               {"a": a.shape, "b": b.shape, "c": c.shape}, ["y"], opset=13)
    (y,) = _run(m, a, b, c)
    np.testing.assert_allclose(y, a @ b + c, rtol=1e-13, atol=1e-14)
