"""MatMulInteger and ConvInteger on the Vulkan target (spirv/quantized.py, the int32 sums of kinds
qmatmul and qconv) against the
ONNX specification (onnx's reference evaluator: the harness's oracle for integer products), which
must match exactly: i8 and u8 operands, zero points per tensor and per column of B, a batched B,
and depths whose sums pass 2**24; a zero point per row of A against numpy; ConvInteger with pads,
strides, dilations and groups, with and without zero points."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from harness import check_against_reference, model, run_iree
from test_ops import retyped

rng = np.random.default_rng(17)
ONNX = {np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8}


def _ints(shape: tuple[int, ...], dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


CASES = {
    "u8_s8_per_tensor": ((3, 40), np.uint8, (40, 5), np.int8, (1,), (1,)),
    "s8_u8_per_column": ((4, 7), np.int8, (7, 6), np.uint8, (1,), (6,)),
    "u8_batched_b": ((2, 3, 9), np.uint8, (2, 9, 4), np.uint8, None, (1,)),
    "s8_deep_k1024": ((2, 1024), np.int8, (1024, 3), np.int8, None, None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matmulinteger_matches_the_specification_on_vulkan(case: str):
    a_shape, a_dtype, b_shape, b_dtype, a_zp, b_zp = CASES[case]
    names, inits = ["a", "b"], {}
    if a_zp or b_zp:
        inits["az"] = _ints(a_zp or (1,), a_dtype) if a_zp else np.zeros(1, a_dtype)
        inits["bz"] = _ints(b_zp, b_dtype) if b_zp else np.zeros(1, b_dtype)
        names += ["az", "bz"]
    m = model([helper.make_node("MatMulInteger", names, ["y"], name="mmi")], {"a": a_shape, "b": b_shape}, ["y"],
              inits, opset=13)
    m = retyped(m, a=ONNX[a_dtype], b=ONNX[b_dtype], y=TensorProto.INT32)
    check_against_reference(m, "vulkan", inputs=[_ints(a_shape, a_dtype), _ints(b_shape, b_dtype)])


def test_matmulinteger_per_row_zero_point_on_vulkan():
    """A zero point per row of A (onnx's evaluator does not broadcast it): numpy's exact sums."""
    a, b = _ints((4, 7), np.int8), _ints((7, 6), np.uint8)
    az, bz = _ints((4,), np.int8), _ints((6,), np.uint8)
    m = model([helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"], name="mmi")],
              {"a": (4, 7), "b": (7, 6)}, ["y"], {"az": az, "bz": bz}, opset=13)
    m = retyped(m, a=TensorProto.INT8, b=TensorProto.UINT8, y=TensorProto.INT32)
    (y,) = run_iree(m, [a, b], "vulkan")
    expected = (a.astype(np.int64) - az[:, None]) @ (b.astype(np.int64) - bz[None, :])
    assert np.array_equal(y, expected.astype(np.int32))


CONV = {
    "u8_pads_zero_points": ((1, 3, 7, 6), np.uint8, (4, 3, 3, 3), np.uint8, True,
                            {"pads": [1, 1, 1, 1]}),
    "s8_group2_strides_dilations": ((2, 4, 9, 8), np.int8, (6, 2, 2, 3), np.int8, False,
                                    {"group": 2, "strides": [2, 1], "dilations": [2, 2]}),
}


@pytest.mark.parametrize("case", sorted(CONV))
def test_convinteger_matches_the_specification_on_vulkan(case: str):
    x_shape, x_dtype, w_shape, w_dtype, zero_points, attrs = CONV[case]
    inits = {"w": _ints(w_shape, w_dtype)}
    if zero_points:
        inits["xz"], inits["wz"] = _ints((1,), x_dtype), _ints((1,), w_dtype)
    m = model([helper.make_node("ConvInteger", ["x", *inits], ["y"], name="convint", **attrs)], {"x": x_shape}, ["y"],
              inits, opset=13)
    m = retyped(m, x=ONNX[x_dtype], y=TensorProto.INT32)
    check_against_reference(m, "vulkan", inputs=[_ints(x_shape, x_dtype)])
