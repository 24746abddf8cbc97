"""ONNX Resize (opsets 10..newest) and Upsample (7, 9) against onnxruntime: every mode, coordinate
transformation mode and nearest_mode, scales and sizes, roi with extrapolation, axes,
keep_aspect_ratio_policy and antialias. Checked through the numpy reference and compiled for the
host (resize_pad_models.check_compiled), tolerance 1e-5."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto
from onnx.reference import ReferenceEvaluator

from onnx_models import NEWEST
from resize_pad_models import check_compiled, one_node

import iree_py
from iree_py.errors import CompileError
from iree_py.frontends.onnx import import_onnx
from iree_py.ir.reference import evaluate

COORDINATE_MODES = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_crop_and_resize"]
GEOMETRIES = [dict(scales=[1, 1, 2.0, 1.5]), dict(scales=[1, 1, 0.6, 0.5]), dict(sizes=[1, 2, 7, 3]),
              dict(sizes=[1, 2, 1, 9])]
ROI = [0, 0, 0.2, -0.1, 1, 1, 0.9, 1.3]


def resize(opset: int, x_shape: tuple[int, ...], scales=None, sizes=None, roi=None, **attrs):
    constants, names = {}, ["x", "", "", ""]
    for slot, name, value, dtype in ((1, "roi", roi, np.float32), (2, "scales", scales, np.float32),
                                     (3, "sizes", sizes, np.int64)):
        if value is not None:
            constants[name], names[slot] = np.array(value, dtype), name
    while names[-1] == "":
        names.pop()
    return one_node("Resize", {"x": x_shape}, opset, constants, names, **attrs)


def _attrs(mode: str, coordinate_mode: str) -> tuple[dict, list | None]:
    attrs = dict(mode=mode, coordinate_transformation_mode=coordinate_mode)
    if coordinate_mode != "tf_crop_and_resize":
        return attrs, None
    return {**attrs, "extrapolation_value": 2.5}, ROI


@pytest.mark.parametrize("geometry", range(len(GEOMETRIES)))
@pytest.mark.parametrize("coordinate_mode", COORDINATE_MODES)
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_linear_and_cubic(mode: str, coordinate_mode: str, geometry: int) -> None:
    attrs, roi = _attrs(mode, coordinate_mode)
    check_compiled(resize(NEWEST, (1, 2, 5, 6), roi=roi, **GEOMETRIES[geometry], **attrs), compile=geometry % 2 == 0)


@pytest.mark.parametrize("nearest_mode", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
@pytest.mark.parametrize("coordinate_mode", COORDINATE_MODES)
def test_nearest(coordinate_mode: str, nearest_mode: str) -> None:
    attrs, roi = _attrs("nearest", coordinate_mode)
    for k, geometry in enumerate(GEOMETRIES):
        check_compiled(resize(NEWEST, (1, 2, 5, 6), roi=roi, nearest_mode=nearest_mode, **geometry, **attrs),
                       compile=k == 0)


CASES = {
    "opset10_nearest_up": (10, (1, 1, 4, 5), dict(scales=[1, 1, 2, 3]), dict(mode="nearest")),
    "opset10_nearest_down": (10, (1, 1, 4, 5), dict(scales=[1, 1, 0.5, 0.7]), dict(mode="nearest")),
    "opset10_linear": (10, (1, 1, 4, 5), dict(scales=[1, 1, 2, 1.5]), dict(mode="linear")),
    "opset11_cubic_a_exclude": (11, (1, 1, 4, 5), dict(scales=[1, 1, 2, 1.5], roi=[]),
                                dict(mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1)),
    "opset11_tf_half_pixel_for_nn": (11, (1, 1, 4, 5), dict(scales=[1, 1, 1.7, 0.6], roi=[]),
                                     dict(mode="nearest", coordinate_transformation_mode="tf_half_pixel_for_nn")),
    "opset13_cubic_sizes_exclude": (13, (1, 1, 4, 5), dict(sizes=[1, 1, 9, 3]), dict(mode="cubic", exclude_outside=1)),
    "rank2_linear": (13, (2, 3), dict(scales=[2.0, 1.5]), dict(mode="linear")),
    "rank3_trilinear": (13, (2, 3, 4), dict(scales=[1.0, 2, 1.5]),
                        dict(mode="linear", coordinate_transformation_mode="align_corners")),
    "rank5_trilinear": (13, (1, 1, 3, 4, 5), dict(scales=[1, 1, 2, 1.5, 0.5]), dict(mode="linear")),
    "nhwc_linear": (13, (1, 4, 5, 3), dict(scales=[1, 1.5, 0.8, 1]), dict(mode="linear")),
    "axes": (18, (1, 1, 4, 5), dict(scales=[2.0, 1.5]), dict(mode="linear", axes=[2, 3])),
    "axes_negative_nearest": (18, (1, 2, 4, 5), dict(sizes=[3, 8]), dict(mode="nearest", axes=[-1, -2])),
    "not_larger": (18, (1, 1, 4, 5), dict(sizes=[7, 3]),
                   dict(mode="linear", axes=[2, 3], keep_aspect_ratio_policy="not_larger")),
    "not_smaller": (18, (1, 1, 4, 5), dict(sizes=[7, 3]),
                    dict(mode="nearest", axes=[2, 3], keep_aspect_ratio_policy="not_smaller")),
    "antialias_linear": (18, (1, 1, 8, 9), dict(scales=[1, 1, 0.5, 0.4]), dict(mode="linear", antialias=1)),
    "antialias_cubic": (18, (1, 1, 8, 9), dict(scales=[1, 1, 0.5, 0.4]), dict(mode="cubic", antialias=1)),
    "antialias_cubic_exclude": (18, (1, 1, 8, 9), dict(scales=[1, 1, 0.6, 0.3]),
                                dict(mode="cubic", antialias=1, exclude_outside=1)),
    "antialias_linear_sizes_up_down": (18, (1, 1, 8, 9), dict(sizes=[1, 1, 3, 13]), dict(mode="linear", antialias=1)),
    "identity_scales": (19, (1, 2, 3, 4), dict(scales=[1, 1, 1, 1]), dict(mode="linear")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_resize_case(case: str) -> None:
    opset, shape, geometry, attrs = CASES[case]
    if opset == 10:  # Resize-10: X, scales
        m = one_node("Resize", {"x": shape}, 10, {"scales": np.array(geometry["scales"], np.float32)}, **attrs)
    else:
        m = resize(opset, shape, **geometry, **attrs)
    check_compiled(m)


@pytest.mark.parametrize("opset", [7, 9])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample(opset: int, mode: str) -> None:
    scales = [1.0, 1.0, 2.0, 1.5]
    if opset == 7:
        m = one_node("Upsample", {"x": (1, 2, 3, 4)}, 7, mode=mode, scales=scales)
    else:
        m = one_node("Upsample", {"x": (1, 2, 3, 4)}, 9, {"s": np.array(scales, np.float32)}, mode=mode)
    check_compiled(m)


def test_computed_scales_are_read_at_run_time() -> None:
    """Scales computed from data: the output dims are read at run time (rt_resize, test_rt_resize.py)."""
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Abs", ["s"], ["sa"]),
             helper.make_node("Resize", ["x", "", "sa"], ["y"], name="r", mode="linear")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 1, 2, 2)),
                                           helper.make_tensor_value_info("s", TensorProto.FLOAT, (4,))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    check_compiled(m, {"x": np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2),
                       "s": np.array([1, -1, -2, 1.5], np.float32)})


def test_bad_mode_is_rejected() -> None:
    with pytest.raises(CompileError, match="attribute mode='area'"):
        import_onnx(resize(13, (1, 1, 2, 2), scales=[1, 1, 2, 2], mode="area"))


@pytest.mark.parametrize("dtype,np_dtype", [(TensorProto.UINT8, np.uint8), (TensorProto.INT32, np.int32)])
def test_nearest_on_integer_data(dtype: int, np_dtype) -> None:
    m = one_node("Resize", {"x": (1, 2, 3, 5)}, NEWEST, {"scales": np.array([1, 1, 2.5, 0.6], np.float32)},
                 ["x", "", "scales"], dtype=dtype, mode="nearest")
    check_compiled(m, {"x": (np.arange(30) * 7 % 251).astype(np_dtype).reshape(1, 2, 3, 5)})


def test_linear_on_integer_data_is_rejected() -> None:
    m = one_node("Resize", {"x": (1, 1, 2, 2)}, NEWEST, {"scales": np.array([1, 1, 2, 2], np.float32)},
                 ["x", "", "scales"], dtype=TensorProto.UINT8, mode="linear")
    with pytest.raises(CompileError, match=r"node 'resize_node' \(op Resize, opset \d+\): .*only f32"):
        import_onnx(m)


# align_corners and tf_crop_and_resize where scale * length is not a whole number: the spec divides
# by length_resized - 1 with scale = length_resized / length_original (fractional), as ONNX's
# reference and its expected data do; onnxruntime divides by the floored output length - 1
# (iree_py/ir/resize_math.py). Checked against onnx.reference, numpy reference and compiled, 1e-5.
SPEC_CASES = {
    "crop_axes": (18, (1, 1, 4, 5), dict(scales=[0.8, 0.6], roi=[0.1, 0.2, 0.9, 0.7]),
                  dict(mode="linear", axes=[2, 3], coordinate_transformation_mode="tf_crop_and_resize")),
    "align_corners_linear_down": (19, (1, 1, 2, 4), dict(scales=[1, 1, 0.6, 0.6]),
                                  dict(mode="linear", coordinate_transformation_mode="align_corners")),
    "align_corners_cubic_down": (19, (1, 2, 4, 5), dict(scales=[1, 1, 0.8, 0.7]),
                                 dict(mode="cubic", coordinate_transformation_mode="align_corners")),
    "align_corners_linear_up": (19, (1, 1, 3, 4), dict(scales=[1, 1, 1.7, 2.3]),
                                dict(mode="linear", coordinate_transformation_mode="align_corners")),
}


@pytest.mark.parametrize("case", sorted(SPEC_CASES))
def test_fractional_resized_length_follows_the_spec(case: str) -> None:
    opset, shape, geometry, attrs = SPEC_CASES[case]
    m = resize(opset, shape, **geometry, **attrs)
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    (want,) = ReferenceEvaluator(m).run(None, {"x": x})
    (from_ort,) = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert np.abs(from_ort - want).max() > 1e-2  # the case tells the two readings apart
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device="local")
    for label, got in (("numpy reference", evaluate(import_onnx(m), {"x": x})[0]), ("compiled", module.main.call(x)[0])):
        assert got.shape == want.shape, label
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * float(np.abs(want).max()), err_msg=label)
