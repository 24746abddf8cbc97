"""ONNX Pad (opsets 7 (Pad-2), 11, 13, 18, 19+) against onnxruntime: modes constant, reflect, edge and wrap;
pads as attribute or constant input, negative pads (cropping), axes, constant_value; non-float
data. Checked through the numpy reference and compiled for the host."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from onnx_models import NEWEST
from resize_pad_models import check_compiled, one_node

from iree_py.errors import CompileError
from iree_py.frontends.onnx import import_onnx

PADS = {
    "grow": [1, 0, 2, 1, 1, 3],
    "crop_and_grow": [1, -1, 2, 0, 1, -2],
    "last_axis_only": [0, 0, 3, 0, 0, 1],
    "crop_only": [0, -1, -1, -1, 0, -2],
}


@pytest.mark.parametrize("pads", sorted(PADS))
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_modes(mode: str, pads: str) -> None:
    constants = {"pads": np.array(PADS[pads], np.int64), "value": np.array(-1.5, np.float32)}
    check_compiled(one_node("Pad", {"x": (2, 3, 5)}, NEWEST, constants, mode=mode))


@pytest.mark.parametrize("opset", [7, 11, 13, 18])
def test_opsets(opset: int) -> None:
    pads = [1, 2, 0, 1]
    if opset == 7:  # Pad-2 (opsets 2..10): pads and value are attributes
        m = one_node("Pad", {"x": (3, 4)}, 7, mode="reflect", pads=pads)
    else:
        m = one_node("Pad", {"x": (3, 4)}, opset, {"pads": np.array(pads, np.int64)}, mode="edge")
    check_compiled(m, compile=opset in (7, 18))


def test_opset7_constant_value_attribute() -> None:
    check_compiled(one_node("Pad", {"x": (3, 4)}, 7, pads=[0, 1, 2, 0], value=3.25))


@pytest.mark.parametrize("mode", ["constant", "wrap"])
def test_axes_input(mode: str) -> None:
    constants = {"pads": np.array([2, -1, 1, 3], np.int64), "value": np.array(0.5, np.float32),
                 "axes": np.array([-1, 1], np.int64)}
    check_compiled(one_node("Pad", {"x": (2, 3, 4)}, NEWEST, constants, mode=mode))


def test_no_constant_value_means_zero() -> None:
    check_compiled(one_node("Pad", {"x": (2, 3)}, 13, {"pads": np.array([1, 1, 1, 1], np.int64)}))


@pytest.mark.parametrize("dtype,np_dtype", [(TensorProto.INT64, np.int64), (TensorProto.INT32, np.int32),
                                            (TensorProto.UINT8, np.uint8)])
def test_integer_data(dtype: int, np_dtype) -> None:
    constants = {"pads": np.array([1, 0, 0, 2], np.int64), "value": np.array(7, np_dtype)}
    m = one_node("Pad", {"x": (3, 4)}, 13, constants, dtype=dtype, mode="constant")
    feeds = {"x": (np.arange(12) % 50).astype(np_dtype).reshape(3, 4)}
    check_compiled(m, feeds)
    check_compiled(one_node("Pad", {"x": (3, 4)}, 13, {"pads": np.array([1, 2, 2, 1], np.int64)}, dtype=dtype,
                            mode="reflect"), feeds)


def test_reflect_pads_wider_than_the_input_are_rejected() -> None:
    m = one_node("Pad", {"x": (2, 3)}, 13, {"pads": np.array([0, 3, 0, 0], np.int64)}, mode="reflect")
    with pytest.raises(CompileError, match=r"node 'pad_node' \(op Pad, opset 13\): reflect pads"):
        import_onnx(m)


def test_wrap_before_opset19_is_rejected() -> None:
    m = one_node("Pad", {"x": (2, 3)}, 18, {"pads": np.array([0, 1, 0, 0], np.int64)}, mode="wrap")
    with pytest.raises(CompileError, match="attribute mode='wrap'"):
        import_onnx(m)
