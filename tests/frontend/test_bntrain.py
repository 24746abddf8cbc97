"""BatchNormalization with training_mode=1 (frontends/onnx/normalization.py): Y normalized with the batch statistics,
running_mean / running_var blended with momentum (biased variance), compiled with iree_py.compile and
run in the C runtime on host, compared with onnx's ReferenceEvaluator within 1e-4 (absolute, the
data are O(1)); training_mode=0 still takes the inference path; unsupported operands are refused at
compile time."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import iree_py
from iree_py.errors import CompileError

rng = np.random.default_rng(14)
PARAMS = ["scale", "B", "mean", "var"]
TOL = 1e-4


def bn_model(x_shape: list[int | str], outputs: list[str], opset: int = 15, const_params: bool = False,
             param_type: int = TensorProto.FLOAT, **attrs) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """One BatchNormalization node; returns the model and its parameter arrays (inputs or initializers)."""
    c = int(x_shape[1])
    params = {"scale": rng.uniform(0.5, 1.5, c), "B": rng.standard_normal(c), "mean": rng.standard_normal(c),
              "var": rng.uniform(0.5, 2.0, c)}
    params = {k: v.astype(np.float64 if param_type == TensorProto.DOUBLE else np.float32) for k, v in params.items()}
    node = helper.make_node("BatchNormalization", ["x", *PARAMS], outputs, **attrs)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    init = []
    if const_params:
        init = [numpy_helper.from_array(v, k) for k, v in params.items()]
    else:
        inputs += [helper.make_tensor_value_info(k, param_type, [c]) for k in PARAMS]
    graph = helper.make_graph([node], "bntrain", inputs,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs if o],
                              init)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m, params


def run_both(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    module = iree_py.load(iree_py.compile(model.SerializeToString(), target="host"), device="local")
    got = module.main.call(*feeds.values())
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    want = ReferenceEvaluator(model).run(None, feeds)
    return [np.asarray(g) for g in got], want


def assert_all_close(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, atol=TOL, rtol=TOL)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 3, 4, 5), (1, 2, 3, 2, 2)])
def test_training_mode_all_outputs(shape: tuple[int, ...]) -> None:
    model, params = bn_model(list(shape), ["y", "running_mean", "running_var"], training_mode=1)
    x = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
    got, want = run_both(model, {"x": x, **params})
    assert_all_close(got, want)
    # the running variance blends the biased batch variance (numpy's default ddof=0)
    batch_var = x.var(axis=tuple(i for i in range(x.ndim) if i != 1))
    np.testing.assert_allclose(got[2], params["var"] * 0.9 + batch_var * 0.1, atol=TOL, rtol=TOL)


@pytest.mark.parametrize("outputs", [["y"], ["y", "running_mean"], ["y", "", "running_var"]])
def test_training_mode_optional_outputs_and_attributes(outputs: list[str]) -> None:
    model, params = bn_model([2, 3, 4], outputs, opset=14, training_mode=1, epsilon=1e-2, momentum=0.7)
    got, want = run_both(model, {"x": rng.standard_normal((2, 3, 4)).astype(np.float32), **params})
    assert_all_close(got, want)


def test_training_mode_constant_parameters() -> None:
    model, _ = bn_model([3, 2, 2, 2], ["y", "running_mean", "running_var"], const_params=True, training_mode=1)
    got, want = run_both(model, {"x": rng.standard_normal((3, 2, 2, 2)).astype(np.float32)})
    assert_all_close(got, want)


def test_symbolic_batch_one_module_several_sizes() -> None:
    model, params = bn_model(["N", 3, 4], ["y", "running_mean", "running_var"], training_mode=1)
    module = iree_py.load(iree_py.compile(model.SerializeToString(), target="host"), device="local")
    for n in (1, 2, 5):
        feeds = {"x": rng.standard_normal((n, 3, 4)).astype(np.float32), **params}
        assert_all_close([np.asarray(g) for g in module.main.call(*feeds.values())],
                         ReferenceEvaluator(model).run(None, feeds))


def test_training_mode_float64_default_attributes_are_float32_values() -> None:
    """The schema defaults momentum=0.9 / epsilon=1e-5 are float32 numbers; float64 data see them exactly."""
    node = helper.make_node("BatchNormalization", ["x", *PARAMS], ["y", "running_mean", "running_var"],
                            training_mode=1)
    graph = helper.make_graph([node], "bntrain64", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2, 3, 4])]
                              + [helper.make_tensor_value_info(k, TensorProto.DOUBLE, [3]) for k in PARAMS],
                              [helper.make_tensor_value_info(o, TensorProto.DOUBLE, None) for o in node.output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    feeds = {"x": rng.standard_normal((2, 3, 4)), "scale": rng.uniform(0.5, 1.5, 3), "B": rng.standard_normal(3),
             "mean": rng.standard_normal(3), "var": rng.uniform(0.5, 2.0, 3)}
    got, want = run_both(model, feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-10, rtol=1e-10)


def test_inference_mode_unchanged() -> None:
    model, params = bn_model([2, 3, 4, 4], ["y"], training_mode=0)
    got, want = run_both(model, {"x": rng.standard_normal((2, 3, 4, 4)).astype(np.float32), **params})
    assert_all_close(got, want)


@pytest.mark.parametrize("kwargs,message", [
    ({"param_type": TensorProto.DOUBLE}, "must have the input's type"),
    ({"training_mode": 2}, "training_mode"),
])
def test_refused(kwargs: dict, message: str) -> None:
    attrs = {"training_mode": kwargs.pop("training_mode", 1)}
    model, _ = bn_model([2, 3, 4], ["y", "running_mean", "running_var"], **kwargs, **attrs)
    with pytest.raises(CompileError, match=message):
        iree_py.compile(model.SerializeToString(), target="host")
