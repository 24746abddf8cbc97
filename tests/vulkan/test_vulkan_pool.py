"""LpPool on the Vulkan target (spirv/pool.py) against onnxruntime within the harness tolerance
(1e-4 of the largest magnitude): p = 1, 2 (sqrt) and 3 (pow), pads, strides, dilations, ceil_mode."""
from __future__ import annotations

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
