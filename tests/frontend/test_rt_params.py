"""Squeeze/Unsqueeze/Slice/Pad/OneHot/Dropout with parameters given at run time (rt_reshape:
iree_py/frontends/onnx/layout.py, slicing.py). Each model is compiled ONCE with iree_py.compile and run by
the C runtime on the host with several parameter values, against onnxruntime (floats within 1e-6
of the largest magnitude, which is exact for these copies; integers exactly)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import iree_py

from tests.e2e.harness import DEVICE, run_onnxruntime

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def _model(op: str, inputs: list[tuple[str, int, list]], opset: int, outputs: int = 1, out_type: int | None = None,
           **attrs) -> onnx.ModelProto:
    names = ["y", "mask"][:outputs]
    node = helper.make_node(op, [n for n, _, _ in inputs], names, name=f"{op}_node", **attrs)
    out_types = [inputs[0][1] if out_type is None else out_type, B][:outputs]
    graph = helper.make_graph([node], "rt_params", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info(n, t, None) for n, t in zip(names, out_types)])
    opset_id = helper.make_opsetid("", opset)
    m = helper.make_model(graph, opset_imports=[opset_id])
    m.ir_version = helper.find_min_ir_version_for([opset_id])
    return m


def _load(m: onnx.ModelProto) -> iree_py.Module:
    return iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device=DEVICE["host"])


def _check(m: onnx.ModelProto, feeds: list[list[np.ndarray]]) -> None:
    """Compile once, run every feed, compare each output with onnxruntime."""
    module = _load(m)
    for inputs in feeds:
        actual = module.main.call(*inputs)
        expected = run_onnxruntime(m, inputs)
        for a, e in zip(actual, expected):
            params = [p.tolist() for p in inputs[1:]]
            assert a.shape == e.shape, (a.shape, e.shape, params)
            if e.dtype.kind == "f":
                scale = max(float(np.abs(e).max(initial=0.0)), 1.0)
                np.testing.assert_allclose(a, e, rtol=0, atol=1e-6 * scale, err_msg=str(params))
            else:
                np.testing.assert_array_equal(a, e, err_msg=str(params))


def _x(shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def _i(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def test_squeeze_axes_at_run_time() -> None:
    x = _x((1, 3, 1, 4))
    m = _model("Squeeze", [("x", F, [1, 3, 1, 4]), ("axes", I64, [1])], opset=13)
    _check(m, [[x, _i(0)], [x, _i(2)], [x, _i(-2)], [x, _i(-4)]])


def test_squeeze_of_an_axis_that_is_not_1_fails_at_run_time() -> None:
    m = _model("Squeeze", [("x", F, [1, 3, 1, 4]), ("axes", I64, [1])], opset=13)
    module = _load(m)
    with pytest.raises(Exception, match="Squeeze_node.*element count"):
        module.main.call(_x((1, 3, 1, 4)), _i(1))


def test_unsqueeze_axes_at_run_time() -> None:
    x = _x((3, 4))
    m = _model("Unsqueeze", [("x", F, [3, 4]), ("axes", I64, [2])], opset=13)
    _check(m, [[x, _i(0, 1)], [x, _i(-1, 0)], [x, _i(3, 1)], [x, _i(2, 0)]])


def test_slice_all_parameters_at_run_time() -> None:
    x = _x((5, 6, 7))
    m = _model("Slice", [("x", F, [5, 6, 7]), ("starts", I64, [2]), ("ends", I64, [2]), ("axes", I64, [2]),
                         ("steps", I64, [2])], opset=13)
    _check(m, [
        [x, _i(1, 0), _i(4, 7), _i(0, 2), _i(1, 2)],
        [x, _i(-1, 5), _i(-10**18, 0), _i(-1, 1), _i(-2, -3)],  # negative steps, to the start
        [x, _i(2, 100), _i(1, 200), _i(2, 0), _i(1, 1)],  # an empty result, starts past the end
        [x, _i(0, -3), _i(2**62, -1), _i(1, -3), _i(3, 1)],
    ])


def test_slice_runtime_steps_with_constant_axes() -> None:
    x = _x((4, 9))
    m = _model("Slice", [("x", F, [4, 9]), ("starts", I64, [1]), ("ends", I64, [1]), ("axes", I64, [1]),
                         ("steps", I64, [1])], opset=13)
    _check(m, [[x, _i(8), _i(-100), _i(1), _i(-2)], [x, _i(1), _i(8), _i(-1), _i(3)]])


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pad_pads_at_run_time(mode: str) -> None:
    x = _x((3, 4))
    inputs = [("x", F, [3, 4]), ("pads", I64, [4])] + ([("value", F, [])] if mode == "constant" else [])
    m = _model("Pad", inputs, opset=19, mode=mode)
    value = [np.array(2.5, np.float32)] if mode == "constant" else []
    wide = _i(0, -1, 2, 2) if mode == "reflect" else _i(0, -1, 2, 3)  # onnxruntime: reflect pads <= dim - 1
    _check(m, [[x, _i(1, 2, 2, 1), *value], [x, wide, *value], [x, _i(-1, 0, 1, -2), *value]])


def test_pad_axes_at_run_time() -> None:
    x = _x((2, 3, 4))
    m = _model("Pad", [("x", F, [2, 3, 4]), ("pads", I64, [2]), ("value", F, []), ("axes", I64, [1])],
               opset=19, mode="constant")
    v = np.array(-1.0, np.float32)
    _check(m, [[x, _i(1, 2), v, _i(-1)], [x, _i(2, -1), v, _i(0)]])


def test_one_hot_depth_at_run_time() -> None:
    indices = np.array([[0, 2, -1], [5, -7, 3]], np.int64)
    m = _model("OneHot", [("indices", I64, [2, 3]), ("depth", F, [1]), ("values", F, [2])], opset=11, out_type=F, axis=1)
    values = np.array([-1.0, 3.0], np.float32)
    _check(m, [[indices, np.array([4.0], np.float32), values], [indices, np.array([7.0], np.float32), values]])


def test_dropout_training_mode_at_run_time() -> None:
    x = _x((2, 5))
    m = _model("Dropout", [("x", F, [2, 5]), ("ratio", F, []), ("training_mode", B, [])], opset=13, outputs=2)
    ratio, off, on = np.array(0.5, np.float32), np.array(False), np.array(True)
    _check(m, [[x, ratio, off], [x, np.array(0.0, np.float32), on]])
    module = _load(m)
    with pytest.raises(Exception, match="Dropout_node_training_mode_true_with_ratio_above_0_is_not_supported"):
        module.main.call(x, ratio, on)
