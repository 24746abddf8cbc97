"""LpPool and ConvTranspose on the Vulkan target (spirv/pool.py, conv_transpose.py) against
onnxruntime within the harness tolerance (1e-4 of the largest magnitude): LpPool with p = 1, 2
(sqrt) and 3 (pow), pads, strides, dilations, ceil_mode; ConvTranspose on 1, 2 and 3 spatial axes
with strides, pads, dilations, groups, output_padding and bias."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from harness import check_against_reference, model

CASES = {
    "p1_3x3": {"p": 1, "kernel_shape": [3, 3]},
    "p2_pads_strides": {"p": 2, "kernel_shape": [2, 3], "pads": [1, 0, 1, 2], "strides": [2, 1]},
    "p3_dilations": {"p": 3, "kernel_shape": [2, 2], "dilations": [2, 1]},
    "p2_ceil": {"p": 2, "kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_lppool_matches_onnxruntime_on_vulkan(case: str):
    m = model([helper.make_node("LpPool", ["x"], ["y"], name="lppool", **CASES[case])], {"x": (2, 3, 9, 8)}, ["y"],
              opset=18)
    check_against_reference(m, "vulkan")


def _conv_transpose(x_shape: tuple[int, ...], w_shape: tuple[int, ...], bias: bool, **attrs):
    rng = np.random.default_rng(len(x_shape))
    inits = {"w": rng.standard_normal(w_shape).astype(np.float32)}
    if bias:
        inits["b"] = rng.standard_normal(w_shape[1] * attrs.get("group", 1)).astype(np.float32)
    return model([helper.make_node("ConvTranspose", ["x", *inits], ["y"], name="deconv", **attrs)], {"x": x_shape},
                 ["y"], inits, opset=18)


CONV_TRANSPOSE = {
    "1d_stride3_pads": ((2, 3, 7), (3, 2, 4), True, {"strides": [3], "pads": [1, 2]}),
    "2d_group2_stride2_dilations": ((1, 4, 5, 6), (4, 3, 3, 2), True,
                                    {"group": 2, "strides": [2, 2], "dilations": [2, 1], "pads": [1, 0, 0, 1]}),
    "2d_output_padding": ((2, 2, 4, 4), (2, 3, 3, 3), False, {"strides": [2, 2], "output_padding": [1, 1]}),
    "3d_stride2": ((1, 2, 3, 4, 3), (2, 2, 2, 3, 2), True, {"strides": [2, 1, 2]}),
}


@pytest.mark.parametrize("case", sorted(CONV_TRANSPOSE))
def test_conv_transpose_matches_onnxruntime_on_vulkan(case: str):
    x_shape, w_shape, bias, attrs = CONV_TRANSPOSE[case]
    check_against_reference(_conv_transpose(x_shape, w_shape, bias, **attrs), "vulkan")
