"""Signal-area ops with shape-defining inputs given at run time (iree_py/frontends/onnx/: Range in tensor_ops.py,
the windows in signal.py, ReverseSequence in indexing.py, MaxUnpool in pool.py):
float Range, Hann/Hamming/BlackmanWindow with a run-time size, ReverseSequence with run-time
sequence_lens, MaxUnpool with a run-time output_shape. Each model is compiled ONCE and run by the C
runtime on the host at several parameter values, against onnxruntime (Range, windows,
ReverseSequence) or the ONNX reference implementation (MaxUnpool, whose output_shape padding
onnxruntime does differently). Tolerances: copies exact; Range values within 1e-6 relative (f32) or
one f16 ulp; windows within 1e-6 absolute (float32 cosines of values in [-1, 1])."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import iree_py

from tests.e2e.harness import DEVICE, run_onnxruntime

F, F16, D, I64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.INT64


def _model(op: str, inputs: list[tuple[str, int, list]], out_type: int, opset: int, **attrs) -> onnx.ModelProto:
    node = helper.make_node(op, [n for n, _, _ in inputs], ["y"], name=f"{op}_node", **attrs)
    graph = helper.make_graph([node], "signal_rt", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info("y", out_type, None)])
    opset_id = helper.make_opsetid("", opset)
    m = helper.make_model(graph, opset_imports=[opset_id])
    m.ir_version = helper.find_min_ir_version_for([opset_id])
    return m


def _load(m: onnx.ModelProto) -> iree_py.Module:
    return iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device=DEVICE["host"])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_signal_float_range_matches_onnxruntime(dtype: type) -> None:
    t = F if dtype == np.float32 else D
    m = _model("Range", [("start", t, []), ("limit", t, []), ("delta", t, [])], t, 11)
    module = _load(m)
    for start, limit, delta in [(1.0, 5.0, 0.5), (10.0, -3.0, -2.5), (0.25, 7.1, 1.0), (3.0, 1.0, 1.0),
                                (-1.0, 100.0, 3.3)]:
        inputs = [np.array(v, dtype) for v in (start, limit, delta)]
        actual = module.main.call(*inputs)[0]
        expected = run_onnxruntime(m, inputs)[0]
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, (start, limit, delta)
        np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6, err_msg=str((start, limit, delta)))


def test_signal_float16_range_matches_numpy_arange() -> None:
    m = _model("Range", [("start", F16, []), ("limit", F16, []), ("delta", F16, [])], F16, 11)
    module = _load(m)
    for start, limit, delta in [(1.0, 5.0, 0.5), (2.0, -4.0, -0.75)]:
        inputs = [np.array(v, np.float16) for v in (start, limit, delta)]
        actual = module.main.call(*inputs)[0]
        expected = np.arange(*inputs, dtype=np.float16)
        assert actual.dtype == np.float16 and actual.shape == expected.shape
        np.testing.assert_allclose(actual.astype(np.float32), expected.astype(np.float32), rtol=1e-3)


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
def test_signal_window_of_runtime_size(op: str, periodic: int) -> None:
    m = _model(op, [("size", I64, [])], F, 17, periodic=periodic)
    module = _load(m)
    for size in (1, 2, 7, 16, 33):  # symmetric size 1: 0 / 0, NaN as in onnxruntime
        inputs = [np.array(size, np.int64)]
        actual = module.main.call(*inputs)[0]
        expected = run_onnxruntime(m, inputs)[0]
        assert actual.shape == (size,) and actual.dtype == np.float32
        np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-6, err_msg=f"size {size}")


@pytest.mark.parametrize("batch_axis,time_axis", [(1, 0), (0, 1)])
def test_signal_reverse_sequence_runtime_lengths(batch_axis: int, time_axis: int) -> None:
    shape = [5, 3, 2] if time_axis == 0 else [3, 5, 2]
    m = _model("ReverseSequence", [("x", F, shape), ("lens", I64, [3])], F, 10,
               batch_axis=batch_axis, time_axis=time_axis)
    module = _load(m)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    for lens in ([1, 5, 3], [5, 5, 5], [2, 0, 4]):
        inputs = [x, np.array(lens, np.int64)]
        expected = run_onnxruntime(m, inputs)[0]
        np.testing.assert_array_equal(module.main.call(*inputs)[0], expected, err_msg=str(lens))


def test_signal_max_unpool_runtime_output_shape() -> None:
    m = _model("MaxUnpool", [("x", F, [1, 2, 2, 2]), ("i", I64, [1, 2, 2, 2]), ("shape", I64, [4])], F, 11,
               kernel_shape=[2, 2], strides=[2, 2])
    module = _load(m)
    reference = ReferenceEvaluator(m)
    x = np.arange(1, 9, dtype=np.float32).reshape(1, 2, 2, 2)
    i = np.array([0, 3, 9, 14, 17, 18, 24, 31], np.int64).reshape(1, 2, 2, 2)
    for shape in ([1, 2, 4, 4], [1, 2, 5, 5], [2, 3, 4, 6]):
        inputs = [x, i, np.array(shape, np.int64)]
        expected = reference.run(None, dict(zip(["x", "i", "shape"], inputs)))[0]
        np.testing.assert_array_equal(module.main.call(*inputs)[0], expected, err_msg=str(shape))
    # below the inferred [1, 2, 4, 4]: refused at run time, naming the node whose result would be negative
    with pytest.raises(iree_py.IreeRuntimeError, match=r"node '.*' \(op \w+\): result .* would have a negative size"):
        module.main.call(x, i, np.array([1, 2, 3, 4], np.int64))


def test_signal_window_size_must_be_integer() -> None:
    m = _model("HannWindow", [("size", F, [])], F, 17)
    with pytest.raises(iree_py.CompileError, match="size .* must be one int32 or int64"):
        iree_py.compile(m.SerializeToString(), target="host")
