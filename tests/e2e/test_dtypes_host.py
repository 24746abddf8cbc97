"""int64, bool, f16, f64 and u32 tensors through the whole toolchain on this host: the compiler, the C
runtime and the Python API (`iree_py.load`) take and return them with the signature's dtypes, and
the results equal onnxruntime's exactly."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

import iree_py
from harness import run_onnxruntime


def _model(nodes, inputs: dict[str, tuple[int, tuple[int, ...]]], outputs: dict[str, int], inits=None):
    graph = helper.make_graph(
        nodes, "dtypes",
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs.items()],
        [helper.make_tensor(n, t, a.shape, a.flatten().tolist()) for n, (t, a) in (inits or {}).items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _run_both(m, inputs: list[np.ndarray]) -> None:
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device="local")
    got = module.main.call(*inputs)
    want = run_onnxruntime(m, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, f"{g.dtype}{g.shape} != {w.dtype}{w.shape}"
        np.testing.assert_array_equal(g, w)


def test_int64_and_bool_model() -> None:
    # y = Where(mask And (a > 0), a * b // 7 + c, -a); also returns the combined mask and a's sign as int8.
    nodes = [helper.make_node("Mul", ["a", "b"], ["ab"]), helper.make_node("Div", ["ab", "seven"], ["q"]),
             helper.make_node("Add", ["q", "c"], ["s"]), helper.make_node("Greater", ["a", "zero"], ["pos"]),
             helper.make_node("And", ["mask", "pos"], ["keep"]), helper.make_node("Neg", ["a"], ["na"]),
             helper.make_node("Where", ["keep", "s", "na"], ["y"]), helper.make_node("Sign", ["a"], ["sg"]),
             helper.make_node("Cast", ["sg"], ["sign8"], to=TensorProto.INT8)]
    m = _model(nodes, {"a": (TensorProto.INT64, (3, 10)), "b": (TensorProto.INT64, (10,)),
                       "mask": (TensorProto.BOOL, (3, 1))},
               {"y": TensorProto.INT64, "keep": TensorProto.BOOL, "sign8": TensorProto.INT8},
               {"seven": (TensorProto.INT64, np.array(7, np.int64)), "zero": (TensorProto.INT64, np.array(0, np.int64)),
                "c": (TensorProto.INT64, np.array([2**40, -3], np.int64).repeat(5))})
    rng = np.random.default_rng(0)
    a = rng.integers(-2**31, 2**31, (3, 10), dtype=np.int64)
    b = rng.integers(-2**20, 2**20, (10,), dtype=np.int64)
    mask = np.array([[True], [False], [True]])
    _run_both(m, [a, b, mask])


def test_f16_f64_and_u32_model() -> None:
    nodes = [helper.make_node("Mul", ["h", "h"], ["hh"]), helper.make_node("Add", ["hh", "h"], ["yh"]),
             helper.make_node("Cast", ["h"], ["hd"], to=TensorProto.DOUBLE),
             helper.make_node("Div", ["hd", "d"], ["yd"]),
             helper.make_node("Cast", ["yd"], ["yu"], to=TensorProto.UINT32)]
    m = _model(nodes, {"h": (TensorProto.FLOAT16, (2, 9)), "d": (TensorProto.DOUBLE, (9,))},
               {"yh": TensorProto.FLOAT16, "yd": TensorProto.DOUBLE, "yu": TensorProto.UINT32})
    rng = np.random.default_rng(1)
    _run_both(m, [(rng.standard_normal((2, 9)) * 30).astype(np.float16), rng.uniform(1, 3, 9)])


def _pow_int_float_cases() -> tuple[np.ndarray, np.ndarray]:
    """Integer bases with float32 exponents: integral ones (exact by squaring, 3 ** 2 = 9), negative
    ones (truncate to 0 or +-1; 0 ** -1 is inf, which converts like Cast), and fractions whose
    powers are whole (4 ** 0.5 = 2, 16 ** 0.75 = 8): a truncating Cast turns any result a hair
    below the whole number into the one beneath."""
    integral = [(b, e) for b in range(-7, 12) for e in (0.0, 1.0, 2.0, 3.0, 5.0, 9.0, -1.0, -2.0)]
    fractional = [(4, 0.5), (9, 0.5), (16, 0.25), (16, 0.75), (27, 1.0 / 3.0), (81, 0.25), (2, 0.5),
                  (1024, 0.1), (1000000, 0.5), (625, 0.75), (49, 1.5), (10, 2.5), (0, 0.5), (1, 7.25)]
    x, y = zip(*(integral + fractional))
    return np.array(x), np.array(y, np.float32)


def test_pow_integer_base_float_exponent_is_exact() -> None:
    x, y = _pow_int_float_cases()
    for elem, dtype in ((TensorProto.INT32, np.int32), (TensorProto.INT64, np.int64)):
        m = _model([helper.make_node("Pow", ["x", "y"], ["z"])],
                   {"x": (elem, x.shape), "y": (TensorProto.FLOAT, y.shape)}, {"z": elem})
        module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device="local")
        got = module.main.call(x.astype(dtype), y)[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            want = np.power(x.astype(dtype), y).astype(dtype)  # the ONNX reference's formula
        np.testing.assert_array_equal(got, want)
        _run_both(m, [x.astype(dtype), y])


def test_pow_float64_matches_numpy() -> None:
    """f64 Pow (the path above, on its own): 1e-13 relative to numpy over mixed exponents."""
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.uniform(0.01, 100.0, 40), [-2.0, -2.0, -0.5, 0.0, 0.0, 1.0, 3.0]])
    y = np.concatenate([rng.uniform(-8.0, 8.0, 40), [3.0, 0.5, -3.0, 2.5, -1.0, np.nan, 0.0]])
    m = _model([helper.make_node("Pow", ["x", "y"], ["z"])],
               {"x": (TensorProto.DOUBLE, x.shape), "y": (TensorProto.DOUBLE, y.shape)}, {"z": TensorProto.DOUBLE})
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device="local")
    got = module.main.call(x, y)[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_allclose(got, np.power(x, y), rtol=1e-13, atol=0.0)
