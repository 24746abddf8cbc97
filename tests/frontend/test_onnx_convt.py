"""ONNX ConvTranspose, LpPool, GlobalMaxPool, GlobalLpPool: import, evaluate with the numpy
reference, compare with onnxruntime (onnx_models.check_against_reference, 1e-5 relative)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from onnx_models import NEWEST, check_against_reference, model

from iree_py.errors import CompileError
from iree_py.frontends.onnx import import_onnx

# (x shape, weight shape, attrs): weight [C, M/group, *kernel]
CONV_TRANSPOSE_CASES = [
    ((1, 3, 5, 5), (3, 2, 3, 3), {}),
    ((2, 4, 4, 5), (4, 3, 2, 3), {"strides": [2, 2], "pads": [1, 0, 1, 2], "output_padding": [1, 0],
                                  "dilations": [1, 2], "group": 2}),
    ((1, 2, 4, 4), (2, 3, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 2, 3, 5), (2, 2, 4, 2), {"strides": [2, 3], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 3, 4), (2, 2, 3, 3), {"strides": [3, 2], "auto_pad": "VALID", "output_padding": [2, 1]}),
    ((1, 2, 3, 3), (2, 1, 3, 3), {"strides": [2, 2], "output_shape": [8, 7]}),
    ((1, 2, 3, 3), (2, 1, 3, 3), {"strides": [2, 2], "output_shape": [6, 5], "auto_pad": "SAME_UPPER"}),
    ((1, 4, 4, 3), (4, 1, 3, 3), {"group": 4, "pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}),  # depthwise
    ((1, 3, 6), (3, 2, 3), {"strides": [2], "pads": [1, 2], "output_padding": [1]}),  # 1-D
    ((1, 2, 3, 2, 3), (2, 2, 2, 3, 2), {"strides": [2, 1, 2], "pads": [0, 1, 1, 1, 0, 0], "dilations": [1, 2, 1]}),
]


@pytest.mark.parametrize("opset", [7, 11, NEWEST])
@pytest.mark.parametrize("case", range(len(CONV_TRANSPOSE_CASES)))
@pytest.mark.parametrize("bias", [False, True])
def test_conv_transpose(case: int, opset: int, bias: bool) -> None:
    x_shape, w_shape, attrs = CONV_TRANSPOSE_CASES[case]
    rng = np.random.default_rng(case)
    init = {"w": rng.standard_normal(w_shape).astype(np.float32)}
    if bias:
        init["b"] = rng.standard_normal(w_shape[1] * attrs.get("group", 1)).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w", *(["b"] if bias else [])], ["y"], **attrs)
    check_against_reference(model([node], {"x": x_shape}, ["y"], opset, init))


LP_POOL_CASES = [
    ((1, 2, 6, 7), {"kernel_shape": [3, 3]}),
    ((1, 2, 6, 7), {"kernel_shape": [2, 3], "strides": [2, 2], "pads": [1, 0, 0, 1], "p": 3}),
    ((1, 2, 5, 5), {"kernel_shape": [3, 2], "auto_pad": "SAME_UPPER", "strides": [2, 1], "p": 1}),
    ((1, 2, 5, 6), {"kernel_shape": [3, 3], "auto_pad": "SAME_LOWER", "strides": [2, 2]}),
    ((1, 1, 8), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
]
# opset 7: LpPool-2; dilations and ceil_mode need opset 18
LP_POOL_NEW_CASES = [
    ((1, 2, 7, 7), {"kernel_shape": [2, 2], "dilations": [2, 2]}),
    ((1, 2, 7, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1, "pads": [1, 1, 0, 0]}),
]


@pytest.mark.parametrize("case,opset", [(c, o) for c in range(len(LP_POOL_CASES)) for o in (7, 11, NEWEST)] +
                         [(len(LP_POOL_CASES) + c, o) for c in range(len(LP_POOL_NEW_CASES)) for o in (18, NEWEST)])
def test_lp_pool(case: int, opset: int) -> None:
    x_shape, attrs = (LP_POOL_CASES + LP_POOL_NEW_CASES)[case]
    node = helper.make_node("LpPool", ["x"], ["y"], **attrs)
    check_against_reference(model([node], {"x": x_shape}, ["y"], opset))


@pytest.mark.parametrize("op,attrs", [("GlobalMaxPool", {}), ("GlobalLpPool", {}), ("GlobalLpPool", {"p": 1}),
                                      ("GlobalLpPool", {"p": 3})])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 2, 7), (1, 2, 2, 3, 4)])
def test_global_pools(op: str, attrs: dict, shape: tuple[int, ...]) -> None:
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    check_against_reference(model([node], {"x": shape}, ["y"], 21))  # onnxruntime has no GlobalLpPool-22


@pytest.mark.parametrize("op,attrs", [
    ("MaxPool", {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    ("MaxPool", {"kernel_shape": [2], "dilations": [2], "ceil_mode": 1, "strides": [2]}),
    ("AveragePool", {"kernel_shape": [3], "pads": [1, 0], "count_include_pad": 1}),
    ("AveragePool", {"kernel_shape": [2], "auto_pad": "SAME_UPPER", "strides": [2]}),
])
def test_pool_1d(op: str, attrs: dict) -> None:
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    check_against_reference(model([node], {"x": (2, 3, 9)}, ["y"], NEWEST))


@pytest.mark.parametrize("op,attrs", [
    ("MaxPool", {"kernel_shape": [2, 3, 2], "strides": [2, 1, 2], "pads": [1, 0, 1, 0, 1, 1]}),
    ("MaxPool", {"kernel_shape": [2, 2, 2], "dilations": [2, 1, 2], "ceil_mode": 1, "strides": [2, 2, 1]}),
    ("AveragePool", {"kernel_shape": [3, 2, 2], "pads": [1, 0, 1, 1, 1, 0], "count_include_pad": 1}),
    ("AveragePool", {"kernel_shape": [2, 2, 3], "auto_pad": "SAME_LOWER", "strides": [2, 2, 2]}),
    ("AveragePool", {"kernel_shape": [2, 3, 2], "pads": [1, 1, 0, 0, 1, 1], "ceil_mode": 1, "strides": [2, 2, 2]}),
    ("AveragePool", {"kernel_shape": [2, 2, 2], "dilations": [2, 1, 2], "ceil_mode": 1, "strides": [2, 2, 1],
                     "pads": [1, 0, 1, 1, 1, 0], "count_include_pad": 1}),
    ("LpPool", {"kernel_shape": [2, 2, 2], "strides": [1, 2, 2], "pads": [0, 1, 0, 1, 0, 0], "p": 3}),
])
def test_pool_3d(op: str, attrs: dict) -> None:
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    check_against_reference(model([node], {"x": (1, 2, 5, 6, 7)}, ["y"], NEWEST))


@pytest.mark.parametrize("op,x_shape,attrs,message", [
    ("ConvTranspose", (1, 2, 4, 4), {"kernel_shape": [2, 2]}, "kernel_shape"),
    ("ConvTranspose", (1, 2, 4, 4), {"auto_pad": "SOMETIMES"}, "auto_pad"),
    ("ConvTranspose", (1, 2, 4, 4), {"output_padding": [1]}, "output_padding"),
    ("LpPool", (1, 2, 4, 4), {"kernel_shape": [2, 2], "p": 0}, "p=0"),
])
def test_unsupported_is_refused(op: str, x_shape: tuple[int, ...], attrs: dict, message: str) -> None:
    inputs = ["x", "w"] if op == "ConvTranspose" else ["x"]
    init = {"w": np.ones((2, 1, 3, 3), np.float32)} if op == "ConvTranspose" else {}
    m = model([helper.make_node(op, inputs, ["y"], **attrs)], {"x": x_shape}, ["y"], NEWEST, init)
    with pytest.raises(CompileError, match=message):
        import_onnx(m)
