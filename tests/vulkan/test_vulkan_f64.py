"""f64 elementwise on the Vulkan target (spirv/typed_math.py F64_NATIVE, the Float64 capability):
the steps exact in double precision and Cast to and from f64, against onnxruntime within the harness
tolerance (1e-4 of the largest magnitude), and against numpy bit-exactly where f32 arithmetic would
lose the answer; a transcendental step on f64 is refused naming the node and the kind. Mod's
infinite-divisor and zero cases (C fmod and Python's %) on f32 and f64."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from harness import check_against_reference, model, run_iree
from iree_py.errors import CompileError
from iree_py.ir.narrow_types import narrow_cast_array
from iree_py.ir.types import DType
from test_ops import retyped

rng = np.random.default_rng(3)
D = TensorProto.DOUBLE


def _binary(op: str, dtype: int = D, **attrs):
    m = model([helper.make_node(op, ["x", "y"], ["z"], name=f"{op.lower()}_node", **attrs)], {"x": (4, 5), "y": (5,)},
              ["z"], opset=13)
    return retyped(m, x=dtype, y=dtype, z=TensorProto.BOOL if op in ("Less", "Equal") else dtype)


def _unary(op: str, **attrs):
    m = model([helper.make_node(op, ["x"], ["z"], name=f"{op.lower()}_node", **attrs)], {"x": (3, 7)}, ["z"], opset=13)
    return retyped(m, x=D, z=D)


def _cast(src: int, dst: int):
    m = model([helper.make_node("Cast", ["x"], ["z"], name="cast", to=dst)], {"x": (40,)}, ["z"], opset=21)
    return retyped(m, x=src, z=dst)


def _doubles(shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Min", "Max", "Less", "Equal"])
def test_f64_binary_matches_onnxruntime_on_vulkan(op: str):
    check_against_reference(_binary(op), "vulkan", inputs=[_doubles((4, 5)), _doubles((5,))])


@pytest.mark.parametrize("fmod", [0, 1], ids=["floor_mod", "fmod"])
@pytest.mark.parametrize("dtype", [TensorProto.FLOAT, D], ids=["f32", "f64"])
def test_mod_infinite_and_zero_cases_on_vulkan(fmod: int, dtype: int):
    values = np.array([5.0, -5.0, 0.0, -0.0, 3.5], np.float64)
    x = np.repeat(values, 5).reshape(5, 5)[:4]
    y = np.array([np.inf, -np.inf, 2.0, -2.0, 1.5])
    np_dtype = helper.tensor_dtype_to_np_dtype(dtype)
    x, y = x.astype(np_dtype), y.astype(np_dtype)
    (z,) = run_iree(_binary("Mod", dtype, fmod=fmod), [x, y], "vulkan")
    expected = np.fmod(x, y) if fmod else np.mod(x, y)
    assert np.array_equal(z, expected) and np.array_equal(np.signbit(z), np.signbit(expected)), (z, expected)


@pytest.mark.parametrize("op", ["Abs", "Neg", "Sqrt", "Floor", "Ceil", "Relu", "Sign"])
def test_f64_unary_matches_onnxruntime_on_vulkan(op: str):
    x = _doubles((3, 7))
    check_against_reference(_unary(op), "vulkan", inputs=[np.abs(x) if op == "Sqrt" else x])


def test_f64_keeps_double_precision_on_vulkan():
    """(x + y) - x with x in [1, 2) and y = 1e-9: in f32 the sum rounds to x (y is below half its
    ulp, 6e-8) and the result is 0; in f64 it is y to within x's double ulp (2.2e-16)."""
    x = 1.0 + rng.random((4, 5))
    y = np.full(5, 1e-9)
    m = model([helper.make_node("Add", ["x", "y"], ["s"], name="add"), helper.make_node("Sub", ["s", "x"], ["z"],
                                                                                          name="sub")],
              {"x": (4, 5), "y": (5,)}, ["z"])
    (z,) = run_iree(retyped(m, x=D, y=D, z=D), [x, y], "vulkan")
    assert np.all(np.abs(z - 1e-9) <= 2.3e-16), z


@pytest.mark.parametrize("other", [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT32, TensorProto.INT64,
                                   TensorProto.UINT32, TensorProto.BOOL])
@pytest.mark.parametrize("to_double", [True, False])
def test_cast_to_and_from_f64_matches_onnxruntime_on_vulkan(other: int, to_double: bool):
    src, dst = (other, D) if to_double else (D, other)
    np_src = helper.tensor_dtype_to_np_dtype(src)
    x = _doubles((40,)) * (1000.0 if other in (TensorProto.INT32, TensorProto.INT64) else 1.0)
    if other == TensorProto.UINT32:
        x = np.abs(x) * 1e4
    if other == TensorProto.BOOL:
        x[::3] = 0.0
    x = x.astype(np_src)
    check_against_reference(_cast(src, dst), "vulkan", inputs=[x])


def test_cast_f64_to_float8_rounds_through_f32_on_vulkan():
    x = _doubles((40,))
    (z,) = run_iree(_cast(D, TensorProto.FLOAT8E4M3FN), [x], "vulkan")
    expected = narrow_cast_array(x, DType.f8e4m3fn)
    assert np.array_equal(z.view(np.uint8), expected.view(np.uint8))


def test_f64_transcendental_is_refused_naming_node_and_kind():
    with pytest.raises(CompileError, match=r"node 'exp_node' \(op Exp\): target vulkan \(backend spirv\) cannot build "
                                           r"kernel kind 'elementwise': elementwise Exp on f64"):
        run_iree(_unary("Exp"), [_doubles((3, 7))], "vulkan")
