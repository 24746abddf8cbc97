"""Cast to and from the narrow types on the Vulkan target (spirv/narrow.py) against numpy's model
of them (ir/narrow_types.py:narrow_cast_array, which ml_dtypes backs): every code of each narrow
float widened to f32, f32 values rounded to each narrow type (ties, subnormals, overflow, inf, NaN)
and the 4-/2-bit integers' rounding and wrapping. Tolerance: none; the results must be the same
bits (NaN where numpy has NaN)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from harness import run_iree
from iree_py.ir.narrow_types import NARROW_FLOAT_DTYPES, NARROW_INT_DTYPES, narrow_cast_array
from iree_py.ir.types import DType

ONNX_TYPE = {DType.bf16: TensorProto.BFLOAT16, DType.f8e4m3fn: TensorProto.FLOAT8E4M3FN,
             DType.f8e4m3fnuz: TensorProto.FLOAT8E4M3FNUZ, DType.f8e5m2: TensorProto.FLOAT8E5M2,
             DType.f8e5m2fnuz: TensorProto.FLOAT8E5M2FNUZ, DType.f4e2m1: TensorProto.FLOAT4E2M1,
             DType.f8e8m0: TensorProto.FLOAT8E8M0, DType.i4: TensorProto.INT4, DType.u4: TensorProto.UINT4,
             DType.i2: TensorProto.INT2, DType.u2: TensorProto.UINT2, DType.f32: TensorProto.FLOAT,
             DType.i32: TensorProto.INT32, DType.f16: TensorProto.FLOAT16}
NARROW = sorted(NARROW_FLOAT_DTYPES | NARROW_INT_DTYPES, key=lambda d: d.value)
rng = np.random.default_rng(5)


def _cast_model(src: DType, dst: DType, n: int):
    """y = Cast(x, to=dst) with x of dtype src; opset 25 has every narrow type."""
    graph = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], name="cast", to=ONNX_TYPE[dst])], "cast",
                              [helper.make_tensor_value_info("x", ONNX_TYPE[src], [n])],
                              [helper.make_tensor_value_info("y", ONNX_TYPE[dst], [n])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
    m.ir_version = 11
    return m


def _f32_values() -> np.ndarray:
    """Ties and near-ties of every format, subnormals, the ends of the ranges, inf, NaN, noise."""
    specials = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, 7.5, -8.5, 1.0625, 1.125, 1.1875, 448.0, 464.0, 480.0,
                57344.0, 61440.0, 1e9, -1e9, 3e38, 2.0 ** -7, 2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -10, 2.0 ** -16,
                2.0 ** -17, 2.0 ** -18, 2.0 ** -127, 1.4e-45, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, np.inf, -np.inf,
                np.nan, 6.0, 7.0, -7.0, 0.25, 0.75, 3.5]
    noise = rng.standard_normal(200) * np.float32(10.0) ** rng.integers(-6, 6, 200)
    return np.concatenate([np.array(specials), noise]).astype(np.float32)


def _same(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    assert np.array_equal(np.isnan(a), np.isnan(e)), "NaN where the reference has none, or none where it has one"
    same = np.isnan(e) | (a == e) & (np.signbit(a) == np.signbit(e))
    assert same.all(), f"differ at {np.flatnonzero(~same)[:8]}: {actual[~same][:8]} != {expected[~same][:8]}"


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: d.value)
def test_cast_f32_to_narrow_matches_numpy_on_vulkan(dtype: DType):
    x = _f32_values()
    (y,) = run_iree(_cast_model(DType.f32, dtype, x.size), [x], "vulkan")
    _same(y, narrow_cast_array(x, dtype))


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: d.value)
def test_cast_every_narrow_code_to_f32_matches_numpy_on_vulkan(dtype: DType):
    codes = np.arange(256 if dtype.itemsize == 1 else 65536).astype(np.uint8 if dtype.itemsize == 1 else np.uint16)
    if dtype in NARROW_INT_DTYPES:
        x = narrow_cast_array(np.arange(-8, 16, dtype=np.int32), dtype)  # every value (high bits zero)
    else:
        x = codes.view(dtype.numpy) if dtype != DType.f4e2m1 else (codes & 0xF).astype(np.uint8).view(dtype.numpy)
    (y,) = run_iree(_cast_model(dtype, DType.f32, x.size), [x], "vulkan")
    _same(y, narrow_cast_array(x, DType.f32))


@pytest.mark.parametrize("dtype", sorted(NARROW_INT_DTYPES, key=lambda d: d.value), ids=lambda d: d.value)
def test_cast_i32_to_narrow_int_wraps_on_vulkan(dtype: DType):
    x = np.concatenate([np.arange(-20, 20), [2**31 - 1, -2**31, 1000003]]).astype(np.int32)
    (y,) = run_iree(_cast_model(DType.i32, dtype, x.size), [x], "vulkan")
    assert np.array_equal(y.view(np.uint8), narrow_cast_array(x, dtype).view(np.uint8))


def test_cast_between_narrow_floats_matches_numpy_on_vulkan():
    x = narrow_cast_array(_f32_values(), DType.bf16)
    (y,) = run_iree(_cast_model(DType.bf16, DType.f8e4m3fn, x.size), [x], "vulkan")
    _same(y, narrow_cast_array(x, DType.f8e4m3fn))


def test_cast_to_f16_inside_an_expression_keeps_subnormals_on_vulkan():
    """Cast(Cast(x, f16), f32) * 2 fuses into one expression, whose f16 rounding must keep f16's
    subnormals (OpQuantizeToF16 may flush them; lavapipe does: QLinearMatMul's f16 scale products)."""
    x = np.concatenate([_f32_values(), np.float32(2.0 ** -14) * rng.random(50).astype(np.float32)])
    nodes = [helper.make_node("Cast", ["x"], ["h"], name="to_f16", to=TensorProto.FLOAT16),
             helper.make_node("Cast", ["h"], ["f"], name="back", to=TensorProto.FLOAT),
             helper.make_node("Mul", ["f", "two"], ["y"], name="twice")]
    graph = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [x.size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [x.size])],
                              [helper.make_tensor("two", TensorProto.FLOAT, (), [2.0])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    (y,) = run_iree(m, [x], "vulkan")
    with np.errstate(over="ignore"):
        _same(y, x.astype(np.float16).astype(np.float32) * np.float32(2.0))
