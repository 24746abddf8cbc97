"""Resize/Upsample with scales, sizes or roi given at run time, or a symbolic input (rt_resize:
iree_py/frontends/onnx/resize.py -> ResizeRuntime -> codegen/llvm/resize.py, resize_rt).
Each model is compiled ONCE with iree_py.compile and run by the C runtime at two geometries,
against onnxruntime (tolerance 1e-5 of the largest expected magnitude; integers exactly)."""
from __future__ import annotations

import functools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import iree_py
from iree_py.errors import CompileError

from tests.e2e.harness import DEVICE, run_onnxruntime

RTOL = 1e-5
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(inputs: list[tuple[str, int, list]], node_inputs: list[str], opset: int = 19, op: str = "Resize",
           **attrs) -> onnx.ModelProto:
    node = helper.make_node(op, node_inputs, ["y"], name="resize_node", **attrs)
    graph = helper.make_graph([node], "rt_resize", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info("y", inputs[0][1], None)])
    opset_id = helper.make_opsetid("", opset)
    m = helper.make_model(graph, opset_imports=[opset_id])
    m.ir_version = helper.find_min_ir_version_for([opset_id])
    return m


def _check(m: onnx.ModelProto, feeds: list[list[np.ndarray]], target: str = "host") -> None:
    """Compile once, run every feed, compare with onnxruntime."""
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target=target), device=DEVICE[target])
    for inputs in feeds:
        (actual,) = module.main.call(*inputs)
        (expected,) = run_onnxruntime(m, inputs)
        assert actual.shape == expected.shape, (actual.shape, expected.shape, [a.tolist() for a in inputs[1:]])
        if expected.dtype.kind == "f":
            scale = max(float(np.abs(expected).max(initial=0.0)), 1.0)
            np.testing.assert_allclose(actual, expected, rtol=0, atol=RTOL * scale)
        else:
            np.testing.assert_array_equal(actual, expected)


@functools.cache
def _x(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _scales(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


SCALE_CASES = {  # attributes -> checked at an upscale and a downscale of one compiled module
    "nearest_half_pixel_round_prefer_floor": dict(mode="nearest"),
    "nearest_asymmetric_floor": dict(mode="nearest", coordinate_transformation_mode="asymmetric",
                                     nearest_mode="floor"),
    "nearest_align_corners_round_prefer_ceil": dict(mode="nearest", coordinate_transformation_mode="align_corners",
                                                    nearest_mode="round_prefer_ceil"),
    "nearest_pytorch_half_pixel_ceil": dict(mode="nearest", coordinate_transformation_mode="pytorch_half_pixel",
                                            nearest_mode="ceil"),
    "linear_half_pixel": dict(mode="linear"),
    "linear_pytorch_half_pixel": dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
    "linear_half_pixel_symmetric": dict(mode="linear", coordinate_transformation_mode="half_pixel_symmetric"),
    "linear_align_corners": dict(mode="linear", coordinate_transformation_mode="align_corners"),
    "cubic_half_pixel": dict(mode="cubic"),
    "cubic_asymmetric_a_half_exclude_outside": dict(mode="cubic", coordinate_transformation_mode="asymmetric",
                                                    cubic_coeff_a=-0.5, exclude_outside=1),
}


@pytest.mark.parametrize("case", sorted(SCALE_CASES))
def test_scales_at_run_time_one_module_two_scales(case: str) -> None:
    m = _model([("x", F, [1, 2, 5, 6]), ("scales", F, [4])], ["x", "", "scales"], **SCALE_CASES[case])
    x = _x((1, 2, 5, 6))
    _check(m, [[x, _scales(1, 1, 2.0, 1.5)], [x, _scales(1, 1, 0.6, 0.5)]])


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_align_corners_with_fractional_length_at_run_time_follows_the_spec(mode: str) -> None:
    """scale * length not whole (4 * 0.6 = 2.4): align_corners divides by 2.4 - 1 as the spec and
    ONNX's reference do, not by the floored 2 - 1 as onnxruntime (iree_py/ir/resize_math.py)."""
    from onnx.reference import ReferenceEvaluator
    m = _model([("x", F, [1, 2, 4, 5]), ("scales", F, [4])], ["x", "", "scales"], mode=mode,
               coordinate_transformation_mode="align_corners")
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device="local")
    x = _x((1, 2, 4, 5))
    for scales in (_scales(1, 1, 0.6, 0.7), _scales(1, 1, 1.7, 2.3), _scales(1, 1, 2.0, 1.5)):
        (actual,) = module.main.call(x, scales)
        (expected,) = ReferenceEvaluator(m).run(None, {"x": x, "scales": scales})
        assert actual.shape == expected.shape
        np.testing.assert_allclose(actual, expected, rtol=0, atol=RTOL * float(np.abs(expected).max()))


def test_sizes_at_run_time_cubic() -> None:
    m = _model([("x", F, [1, 2, 5, 6]), ("sizes", I64, [4])], ["x", "", "", "sizes"], mode="cubic")
    x = _x((1, 2, 5, 6))
    _check(m, [[x, np.array([1, 2, 7, 3], np.int64)], [x, np.array([1, 2, 1, 9], np.int64)]])


def test_roi_and_sizes_at_run_time_tf_crop_and_resize_with_axes() -> None:
    m = _model([("x", F, [1, 2, 5, 6]), ("roi", F, [4]), ("sizes", I64, [2])], ["x", "roi", "", "sizes"],
               mode="linear", coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=2.5,
               axes=[3, 2])
    x = _x((1, 2, 5, 6))
    _check(m, [[x, _scales(-0.1, 0.2, 1.3, 0.9), np.array([4, 7], np.int64)],
               [x, _scales(0.0, 0.0, 1.0, 1.0), np.array([1, 3], np.int64)]])


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
def test_keep_aspect_ratio_policy_with_sizes_at_run_time(policy: str) -> None:
    m = _model([("x", F, [1, 1, 4, 6]), ("sizes", I64, [2])], ["x", "", "", "sizes"], mode="nearest", axes=[2, 3],
               keep_aspect_ratio_policy=policy)
    x = _x((1, 1, 4, 6))
    _check(m, [[x, np.array([7, 8], np.int64)], [x, np.array([3, 3], np.int64)]])


def test_nearest_moves_uint8_elements() -> None:
    m = _model([("x", TensorProto.UINT8, [1, 1, 3, 4]), ("scales", F, [4])], ["x", "", "scales"], mode="nearest")
    x = np.arange(12, dtype=np.uint8).reshape(1, 1, 3, 4)
    _check(m, [[x, _scales(1, 1, 2.0, 1.5)], [x, _scales(1, 1, 0.5, 0.75)]])


def test_resize10_and_upsample9_scales_at_run_time() -> None:
    x = _x((1, 1, 3, 4))
    for op, opset in (("Resize", 10), ("Upsample", 9)):
        m = _model([("x", F, [1, 1, 3, 4]), ("scales", F, [4])], ["x", "scales"], opset=opset, op=op, mode="linear")
        _check(m, [[x, _scales(1, 1, 2.0, 2.5)], [x, _scales(1, 1, 3.0, 1.0)]])


def test_symbolic_image_upsamples_at_any_size() -> None:
    """Input dims h, w symbolic; scales constants: x2 folds to 2*h, x1.5 is computed at run time."""
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear")], "dyn_image",
        [helper.make_tensor_value_info("x", F, [1, 3, "h", "w"])], [helper.make_tensor_value_info("y", F, None)],
        [onnx.numpy_helper.from_array(_scales(1, 1, 2.0, 1.5), "scales")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    m.ir_version = 9
    _check(m, [[_x((1, 3, 4, 5))], [_x((1, 3, 7, 3), 1)]])


def test_arm64_build_and_run() -> None:
    m = _model([("x", F, [1, 2, 5, 6]), ("scales", F, [4])], ["x", "", "scales"], mode="cubic")
    _check(m, [[_x((1, 2, 5, 6)), _scales(1, 1, 1.6, 0.5)]], target="arm64")


@pytest.mark.parametrize("attrs", [dict(mode="linear", antialias=1), dict(mode="cubic", antialias=1),
                                   dict(mode="cubic", antialias=1, exclude_outside=1)])
def test_antialias_with_scales_at_run_time(attrs: dict) -> None:
    m = _model([("x", F, [1, 1, 8, 9]), ("scales", F, [4])], ["x", "", "scales"], **attrs)
    x = _x((1, 1, 8, 9))
    _check(m, [[x, _scales(1, 1, 0.5, 0.4)], [x, _scales(1, 1, 0.3, 1.6)]])


def test_scales_of_the_wrong_length_fail_at_compile_time() -> None:
    m = _model([("x", F, [1, 2, 5, 6]), ("scales", F, [3])], ["x", "", "scales"], mode="linear")
    with pytest.raises(CompileError, match="scales 'scales'.*needs 4 values"):
        iree_py.compile(m.SerializeToString())


def test_symbolic_batch_with_sizes_from_shape() -> None:
    """sizes = Concat(Shape(x)[:2], [8, 10]) as exporters write it: folded at import to {n}, 3, 8, 10."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"], start=0, end=2),
             helper.make_node("Concat", ["shape", "hw"], ["sizes"], axis=0),
             helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="cubic")]
    graph = helper.make_graph(nodes, "dyn_sizes", [helper.make_tensor_value_info("x", F, ["n", 3, "h", 6])],
                              [helper.make_tensor_value_info("y", F, None)],
                              [onnx.numpy_helper.from_array(np.array([8, 10], np.int64), "hw")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    m.ir_version = 9
    _check(m, [[_x((1, 3, 4, 6))], [_x((2, 3, 11, 6), 1)]])


def test_roi_alone_at_run_time_is_a_static_kernel() -> None:
    """Constant sizes, run-time roi: every dim static, the resize_rt kernel built without symbols."""
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], mode="cubic",
                          coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-1.0)],
        "rt_roi", [helper.make_tensor_value_info("x", F, [1, 1, 5, 6]), helper.make_tensor_value_info("roi", F, [8])],
        [helper.make_tensor_value_info("y", F, None)],
        [onnx.numpy_helper.from_array(np.array([1, 1, 4, 7], np.int64), "sizes")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    m.ir_version = 9
    x = _x((1, 1, 5, 6))
    _check(m, [[x, _scales(0, 0, 0.1, -0.2, 1, 1, 0.7, 1.2)], [x, _scales(0, 0, 0, 0, 1, 1, 1, 1)]])
