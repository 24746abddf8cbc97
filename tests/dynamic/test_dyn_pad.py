"""ONNX Pad on symbolic dims (reflect, edge, constant, wrap; crops too): one module per target (host
in-process, arm64 under qemu-aarch64) serves every size and matches onnxruntime exactly; a reflect
pad the run-time axis is too short for is an error naming the node, the op, the axis and the pad, as
onnxruntime refuses it; a pad that can never fit is refused at compile time."""
from __future__ import annotations

import functools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import iree_py
from iree_py.errors import CompileError, IreeRuntimeError

from tests.e2e.harness import DEVICE, assert_close, run_onnxruntime

OPSET = 19  # wrap needs 19

# output -> (mode, pads [begins..., ends...] of x [b, t], constant value or None)
CASES = {
    "reflect_samples": ("reflect", [0, 3, 0, 5], None),      # silero's STFT padding: the samples axis
    "reflect_both": ("reflect", [1, 2, 2, 1], None),
    "edge_crop": ("edge", [2, -1, 0, 3], None),
    "constant_crop": ("constant", [1, 2, -1, 0], 1.5),
    "wrap": ("wrap", [0, 2, 1, 4], None),
}
SIZES = [{"b": 3, "t": 7}, {"b": 4, "t": 12}, {"b": 5, "t": 40}]
ARM64_SIZES = SIZES[:2]  # qemu is slow: two sizes


def _model(cases: dict[str, tuple[str, list[int], float | None]]) -> onnx.ModelProto:
    nodes, inits, outputs = [], [], []
    for name, (mode, pads, value) in cases.items():
        inits.append(numpy_helper.from_array(np.array(pads, np.int64), f"{name}_pads"))
        operands = ["x", f"{name}_pads"]
        if value is not None:
            inits.append(numpy_helper.from_array(np.array(value, np.float32), f"{name}_value"))
            operands.append(f"{name}_value")
        nodes.append(helper.make_node("Pad", operands, [name], name=f"{name}_node", mode=mode))
        outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "pad", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", "t"])],
                              outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model


def _x(b: int, t: int) -> np.ndarray:
    return np.random.default_rng(b * 100 + t).standard_normal((b, t)).astype(np.float32)


@functools.cache
def _compiled(target: str) -> bytes:
    return iree_py.compile(_model(CASES).SerializeToString(), target=target)


@pytest.mark.parametrize("target,sizes", [("host", SIZES), ("arm64", ARM64_SIZES)])
def test_one_module_serves_every_size(target: str, sizes: list[dict[str, int]]) -> None:
    model = _model(CASES)
    module = iree_py.load(_compiled(target), device=DEVICE[target])
    for size in sizes:
        x = _x(size["b"], size["t"])
        assert_close(module.main.call(x), run_onnxruntime(model, [x]), tolerance=0.0)


def test_output_dims_follow_the_pads() -> None:
    sig = repr(iree_py.load(_compiled("host")).main)
    for output in ("reflect_samples: [b, 8 + t]", "edge_crop: [2 + b, 2 + t]", "constant_crop: [b, 2 + t]"):
        assert output in sig, sig


def test_reflect_pad_beyond_the_axis_is_a_run_time_error() -> None:
    """pad 5 at the end of the samples axis needs t >= 6 (onnxruntime refuses t = 5 too)."""
    model = _model({"reflect_samples": CASES["reflect_samples"]})
    module = iree_py.load(iree_py.compile(model.SerializeToString()))
    x = _x(1, 6)
    assert_close(module.main.call(x), run_onnxruntime(model, [x]), tolerance=0.0)
    with pytest.raises(Exception, match=r"exceeds maximum allowed"):
        run_onnxruntime(model, [_x(1, 5)])
    with pytest.raises(IreeRuntimeError, match=r"node 'reflect_samples_node' \(op Pad\): Pad mode reflect needs "
                                               r"axis 1 \(\{t\}\) longer than its end pad 5"):
        module.main.call(_x(1, 5))


def test_reflect_pad_beyond_a_cropped_axis_is_a_run_time_error() -> None:
    """Axis 1 cropped by 2 at the end, then reflected by 3 at the begin: t - 2 must exceed 3."""
    model = _model({"crop_then_reflect": ("reflect", [0, 3, 0, -2], None)})
    module = iree_py.load(iree_py.compile(model.SerializeToString()))
    x = _x(2, 6)
    assert_close(module.main.call(x), run_onnxruntime(model, [x]), tolerance=0.0)
    with pytest.raises(IreeRuntimeError, match=r"crop_then_reflect_node.*axis 1 \(\{t\} cropped to \{-2 \+ t\}\) "
                                               r"longer than its begin pad 3"):
        module.main.call(_x(2, 5))


def test_reflect_pad_that_never_fits_is_refused_at_compile_time() -> None:
    """A fixed axis of 4 cannot be reflected by 4: refused naming node, op and opset."""
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "pads"], ["y"], name="too_wide", mode="reflect")], "pad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([0, 4, 0, 0], np.int64), "pads")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    with pytest.raises(CompileError, match=r"too_wide.*op Pad, opset 19.*reflect pads"):
        iree_py.compile(model.SerializeToString())
