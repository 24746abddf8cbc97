"""Cast/CastLike, comparisons, logic, Where, BitShift, IsNaN/IsInf, Mod, Pow and the integer forms of
the arithmetic ops: our import (evaluated with iree_py.ir.reference) against onnxruntime.
Integers and bools compare exactly, f16 and f64 exactly (one rounding of an exact result), f32 to
1e-6 relative. The dtype lists are the ones onnxruntime's CPU provider implements."""
from __future__ import annotations

import zlib

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from iree_py.errors import CompileError
from iree_py.frontends.onnx import import_onnx
from iree_py.ir.reference import evaluate
from iree_py.ir.text import parse_graph, print_graph

ONNX_TYPES = {"f32": TensorProto.FLOAT, "f64": TensorProto.DOUBLE, "f16": TensorProto.FLOAT16,
              "i8": TensorProto.INT8, "u8": TensorProto.UINT8, "i16": TensorProto.INT16,
              "i32": TensorProto.INT32, "i64": TensorProto.INT64, "bool": TensorProto.BOOL,
              "u16": TensorProto.UINT16, "u32": TensorProto.UINT32, "u64": TensorProto.UINT64}
NUMPY = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i8": np.int8, "u8": np.uint8, "i16": np.int16,
         "i32": np.int32, "i64": np.int64, "bool": np.bool_, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}
FLOATS = ["f32", "f64", "f16"]
INTS = ["i8", "u8", "i16", "i32", "i64", "u16", "u32", "u64"]
ALL = FLOATS + INTS


def typed_model(nodes: list, inputs: dict[str, tuple[str, tuple[int, ...]]], outputs: dict[str, str],
                opset: int, initializers: dict[str, np.ndarray] | None = None):
    graph = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(n, ONNX_TYPES[d], s) for n, (d, s) in inputs.items()],
        [helper.make_tensor_value_info(n, ONNX_TYPES[d], None) for n, d in outputs.items()],
        [helper.make_tensor(n, ONNX_TYPES[str(_dtype_name(a))], a.shape, a.flatten().tolist())
         for n, a in (initializers or {}).items()])
    opset_id = helper.make_opsetid("", opset)
    m = helper.make_model(graph, opset_imports=[opset_id])
    m.ir_version = helper.find_min_ir_version_for([opset_id])
    return m


def _dtype_name(a: np.ndarray) -> str:
    return next(k for k, v in NUMPY.items() if np.dtype(v) == a.dtype)


def sample(dtype: str, shape: tuple[int, ...], rng: np.random.Generator, nonzero: bool = False,
           small: bool = False) -> np.ndarray:
    """Values spread over the type (ints: the whole range unless `small`), with repeats for Equal."""
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in FLOATS:
        x = (rng.standard_normal(shape) * 8).round(1 if dtype == "f16" else 3)
        if nonzero:
            x = np.where(x == 0, 1.5, x)
        return x.astype(NUMPY[dtype])
    info = np.iinfo(NUMPY[dtype])
    lo, hi = (max(info.min, -9), min(info.max, 9)) if small else (info.min, info.max)
    x = rng.integers(lo, hi, shape, endpoint=True, dtype=NUMPY[dtype])
    if nonzero:
        x = np.where(x == 0, 3, x).astype(NUMPY[dtype])
    return x


def check(m, feeds: dict[str, np.ndarray]) -> None:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    expected = ort.InferenceSession(m.SerializeToString(), options,
                                    providers=["CPUExecutionProvider"]).run(None, feeds)
    graph = import_onnx(m)
    text = print_graph(graph)
    assert print_graph(parse_graph(text)) == text
    got = evaluate(graph, feeds)
    for g, e, name in zip(got, expected, graph.output_names, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape, \
            f"{name}: {g.dtype}{g.shape} != onnxruntime {e.dtype}{e.shape}"
        if e.dtype == np.float32:
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=0, err_msg=name)
        else:
            np.testing.assert_array_equal(g, e, err_msg=name)


def binary_case(op: str, dtype: str, out: str, opset: int, nonzero: bool = False, small: bool = False, **attrs):
    rng = np.random.default_rng(zlib.crc32(f"{op}{dtype}".encode()))
    m = typed_model([helper.make_node(op, ["a", "b"], ["y"], **attrs)],
                    {"a": (dtype, (3, 4)), "b": (dtype, (4,))}, {"y": out}, opset)
    check(m, {"a": sample(dtype, (3, 4), rng, small=small), "b": sample(dtype, (4,), rng, nonzero, small)})


ARITH = {op: ALL for op in ("Add", "Sub", "Mul", "Div")} | \
    {op: [d for d in ALL if d not in ("i16", "u16")] for op in ("Min", "Max")}


@pytest.mark.parametrize("op,dtype", [(op, d) for op, ds in ARITH.items() for d in ds])
def test_arithmetic(op: str, dtype: str) -> None:
    binary_case(op, dtype, dtype, 14 if op not in ("Min", "Max") else 13, nonzero=op == "Div")


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", ALL)
def test_mod(dtype: str, fmod: int) -> None:
    # float Mod with fmod=0 (Python's remainder) is valid ONNX from opset 28
    opset = 28 if dtype in FLOATS and fmod == 0 else 13
    binary_case("Mod", dtype, dtype, opset, nonzero=True, fmod=fmod)


@pytest.mark.parametrize("op", ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"])
@pytest.mark.parametrize("dtype", ALL)
def test_compare(op: str, dtype: str) -> None:
    binary_case(op, dtype, "bool", 19 if op == "Equal" else 16, small=True)


def test_equal_bool() -> None:
    binary_case("Equal", "bool", "bool", 19)


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logic(op: str) -> None:
    binary_case(op, "bool", "bool", 7)


def test_not_and_compare_chain() -> None:
    nodes = [helper.make_node("Less", ["a", "b"], ["l"]), helper.make_node("Not", ["l"], ["y"])]
    m = typed_model(nodes, {"a": ("i32", (5,)), "b": ("i32", (5,))}, {"y": "bool"}, 13)
    check(m, {"a": np.array([1, 2, 3, 4, 5], np.int32), "b": np.array([5, 2, 1, 7, 5], np.int32)})


UNARY = {"Abs": ALL, "Sign": ALL, "Neg": [d for d in ALL if not d.startswith("u")], "Relu": FLOATS + ["i8", "i32"]}


@pytest.mark.parametrize("op,dtype", [(op, d) for op, ds in UNARY.items() for d in ds])
def test_unary(op: str, dtype: str) -> None:
    rng = np.random.default_rng(3)
    m = typed_model([helper.make_node(op, ["x"], ["y"])], {"x": (dtype, (2, 7))}, {"y": dtype}, 14)
    check(m, {"x": sample(dtype, (2, 7), rng)})


@pytest.mark.parametrize("dtype", [d for d in ALL if d not in ("i16", "u16")])
def test_clip(dtype: str) -> None:
    bounds = {"lo": np.array(3 if dtype.startswith("u") else -3, NUMPY[dtype]),
              "hi": np.array(7, NUMPY[dtype])}
    m = typed_model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], {"x": (dtype, (3, 5))}, {"y": dtype}, 13,
                    bounds)
    check(m, {"x": sample(dtype, (3, 5), np.random.default_rng(4), small=True)})


CASTS = [(s, d) for s in ALL + ["bool"] for d in ALL + ["bool"] if s != d]


@pytest.mark.parametrize("src,dst", CASTS)
def test_cast(src: str, dst: str) -> None:
    rng = np.random.default_rng(5)
    x = sample(src, (4, 6), rng)
    if src in FLOATS:  # out of range for the target, NaN and infinities as onnxruntime converts them
        x = (rng.standard_normal((4, 6)) * 300).astype(NUMPY[src])
        x[0, :3] = [np.nan, np.inf, -np.inf]
    m = typed_model([helper.make_node("Cast", ["x"], ["y"], to=ONNX_TYPES[dst])], {"x": (src, (4, 6))},
                    {"y": dst}, 19)
    check(m, {"x": x})


@pytest.mark.parametrize("src,dst", [("f32", "i64"), ("i64", "f16"), ("u8", "f32")])
def test_cast_like(src: str, dst: str) -> None:
    m = typed_model([helper.make_node("CastLike", ["x", "like"], ["y"])], {"x": (src, (5,)), "like": (dst, (1,))},
                    {"y": dst}, 15)
    check(m, {"x": sample(src, (5,), np.random.default_rng(6), small=True), "like": np.zeros(1, NUMPY[dst])})


def test_cast_of_constant_folds() -> None:
    m = typed_model([helper.make_node("Cast", ["c"], ["y"], to=TensorProto.INT32)], {}, {"y": "i32"}, 13,
                    {"c": np.array([1.7, -2.5, 300.0], np.float32)})
    graph = import_onnx(m)
    assert not graph.nodes and graph.outputs[0].const.tolist() == [1, -2, 300]


def test_cast_to_an_unknown_element_type_is_refused() -> None:  # float8e8m0's modes: test_onnx_e8m0.py
    m = typed_model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.COMPLEX64, name="c8")],
                    {"x": ("f32", (2,))}, {"y": "f32"}, 19)
    with pytest.raises(CompileError, match=r"node 'c8' \(op Cast, opset 19\): Cast to COMPLEX64 is not supported"):
        import_onnx(m)


@pytest.mark.parametrize("dtype", [d for d in ALL if d not in ("i16", "u16", "u64")])
def test_where(dtype: str) -> None:
    rng = np.random.default_rng(7)
    m = typed_model([helper.make_node("Where", ["c", "x", "y"], ["z"])],
                    {"c": ("bool", (2, 1, 4)), "x": (dtype, (3, 4)), "y": (dtype, (4,))}, {"z": dtype}, 16)
    check(m, {"c": sample("bool", (2, 1, 4), rng), "x": sample(dtype, (3, 4), rng), "y": sample(dtype, (4,), rng)})


def test_where_of_less_picks_minimum() -> None:
    nodes = [helper.make_node("Less", ["x", "y"], ["c"]), helper.make_node("Where", ["c", "x", "y"], ["z"])]
    m = typed_model(nodes, {"x": ("f32", (3, 5)), "y": ("f32", (5,))}, {"z": "f32"}, 16)
    rng = np.random.default_rng(8)
    check(m, {"x": sample("f32", (3, 5), rng), "y": sample("f32", (5,), rng)})


@pytest.mark.parametrize("dtype", ["u8", "u16", "u32", "u64"])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bitshift(direction: str, dtype: str) -> None:
    m = typed_model([helper.make_node("BitShift", ["x", "s"], ["y"], direction=direction)],
                    {"x": (dtype, (6,)), "s": (dtype, (6,))}, {"y": dtype}, 11)
    check(m, {"x": np.array([16, 4, 1, 255, 128, 7], NUMPY[dtype]), "s": np.array([1, 2, 3, 7, 0, 5], NUMPY[dtype])})


@pytest.mark.parametrize("dtype", FLOATS)
def test_isnan_isinf(dtype: str) -> None:
    x = np.array([1.0, np.nan, np.inf, -np.inf, -0.0, 65504.0], NUMPY[dtype])
    nodes = [helper.make_node("IsNaN", ["x"], ["n"]), helper.make_node("IsInf", ["x"], ["i"]),
             helper.make_node("IsInf", ["x"], ["p"], detect_negative=0),
             helper.make_node("IsInf", ["x"], ["q"], detect_positive=0)]
    m = typed_model(nodes, {"x": (dtype, (6,))}, {"n": "bool", "i": "bool", "p": "bool", "q": "bool"}, 20)
    check(m, {"x": x})


@pytest.mark.parametrize("base,exponent", [("f32", "i64"), ("f32", "i32"), ("i32", "i32"), ("i64", "i64"),
                                           ("f16", "f16")])
def test_pow_types(base: str, exponent: str) -> None:
    m = typed_model([helper.make_node("Pow", ["x", "y"], ["z"])], {"x": (base, (6,)), "y": (exponent, (6,))},
                    {"z": base}, 15)
    x = np.array([1, 2, 3, -2, 5, -1], NUMPY[base])
    y = np.array([4, 5, 6, 3, 0, 7], NUMPY[exponent])
    check(m, {"x": x, "y": y})


@pytest.mark.parametrize("base", ["i32", "i64"])
def test_pow_of_integer_with_computed_float_exponent_goes_through_f64(base: str) -> None:
    m = typed_model([helper.make_node("Pow", ["x", "y"], ["z"], name="p")], {"x": (base, (6,)), "y": ("f32", (6,))},
                    {"z": base}, 15)
    assert [n.op for n in import_onnx(m).nodes] == ["Cast", "Cast", "Pow", "Cast"]
    check(m, {"x": np.array([3, 2, 4, -2, 9, 7], NUMPY[base]), "y": np.array([2, 3.5, 0.5, 3, -1, 0], np.float32)})


def test_operand_dtypes_must_match() -> None:
    m = typed_model([helper.make_node("Less", ["a", "b"], ["y"], name="l")], {"a": ("i32", (2,)), "b": ("i64", (2,))},
                    {"y": "bool"}, 13)
    with pytest.raises(CompileError, match=r"node 'l' \(op Less, opset 13\): operand dtypes differ"):
        import_onnx(m)


@pytest.mark.parametrize("dtype", ["f32", "i8", "i64"])
def test_clip_with_computed_bounds(dtype: str) -> None:
    m = typed_model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
                    {"x": (dtype, (3, 5)), "lo": (dtype, ()), "hi": (dtype, ())}, {"y": dtype}, 13)
    x = sample(dtype, (3, 5), np.random.default_rng(9), small=True)
    check(m, {"x": x, "lo": np.array(-2, NUMPY[dtype]), "hi": np.array(4, NUMPY[dtype])})
    check(m, {"x": x, "lo": np.array(5, NUMPY[dtype]), "hi": np.array(1, NUMPY[dtype])})  # min > max: all max
