"""Resize with scales (and roi) given at run time (kind resize_rt, spirv/resize.py) on the Vulkan
target against the CPU backend's kernel, whose arithmetic it follows step for step: every mode,
the coordinate modes, nearest rounding, cubic with exclude_outside, and tf_crop_and_resize's
extrapolation value; nearest moves an int32 element."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from harness import model, run_iree

CASES = {  # attrs, input shape, scales, roi (None: no roi input)
    "linear_half_pixel": ({"mode": "linear"}, (1, 2, 4, 5), [1, 1, 1.7, 0.6], None),
    "cubic_align_corners_exclude": ({"mode": "cubic", "coordinate_transformation_mode": "align_corners",
                                     "exclude_outside": 1, "cubic_coeff_a": -0.5}, (1, 1, 5, 4), [1, 1, 1.5, 2.0], None),
    "cubic_half_pixel_symmetric": ({"mode": "cubic", "coordinate_transformation_mode": "half_pixel_symmetric"},
                                   (2, 1, 4, 4), [1, 1, 0.75, 1.25], None),
    "nearest_floor_asymmetric": ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                  "nearest_mode": "floor"}, (1, 3, 3, 4), [1, 1, 2.5, 0.5], None),
    "nearest_round_prefer_floor": ({"mode": "nearest"}, (1, 1, 6, 6), [1, 1, 0.5, 1.5], None),
    "linear_tf_crop_and_resize": ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
                                   "extrapolation_value": 9.0}, (1, 1, 4, 4), [1, 1, 1.5, 0.8],
                                  [0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4]),
}


def _resize_model(attrs: dict, shape: tuple[int, ...], with_roi: bool, dtype: int):
    inputs = {"x": shape, "roi": (2 * len(shape),), "scales": (len(shape),)}
    m = model([helper.make_node("Resize", ["x", "roi" if with_roi else "", "scales"], ["y"], name="resize", **attrs)],
              inputs if with_roi else {k: v for k, v in inputs.items() if k != "roi"}, ["y"], opset=19)
    m.graph.input[0].type.tensor_type.elem_type = dtype
    m.graph.output[0].type.tensor_type.elem_type = dtype
    return m


@pytest.mark.parametrize("case", sorted(CASES))
def test_runtime_resize_matches_the_cpu_backend(case: str):
    attrs, shape, scales, roi = CASES[case]
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    inputs = [x] + ([np.array(roi, np.float32)] if roi is not None else []) + [np.array(scales, np.float32)]
    m = _resize_model(attrs, shape, roi is not None, TensorProto.FLOAT)
    expected = run_iree(m, inputs, "host")[0]
    np.testing.assert_allclose(run_iree(m, inputs, "vulkan")[0], expected, rtol=1e-6, atol=1e-6)


def test_runtime_nearest_moves_int32_elements():
    attrs, shape, scales, _ = CASES["nearest_floor_asymmetric"]
    x = np.random.default_rng(3).integers(-2**31, 2**31 - 1, shape).astype(np.int32)
    m = _resize_model(attrs, shape, False, TensorProto.INT32)
    inputs = [x, np.array(scales, np.float32)]
    np.testing.assert_array_equal(run_iree(m, inputs, "vulkan")[0], run_iree(m, inputs, "host")[0])
