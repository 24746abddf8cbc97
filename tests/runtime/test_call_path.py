"""The in-process call path (runtime/devices.py LocalDevice.call, and its fast path for plain
arguments, _CallPlan.fast_call): small static inputs are staged in
buffers the C views point at, outputs are copied out of the arena through cached views. These check
that the shortcuts never change what a call returns."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import iree_py
from iree_py.runtime.module import LoadedModule
from iree_py.errors import IreePyError
from iree_py.runtime.devices import STAGED_INPUT_BYTES


def _add_model(shape: list[int | str]) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, shape)
    graph = helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"])], "add", [x, y], [z])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def add_small() -> LoadedModule:
    return iree_py.load(iree_py.compile(_add_model([2, 8]), target="host"))


@pytest.fixture(scope="module")
def add_large() -> LoadedModule:
    # more than STAGED_INPUT_BYTES per input: passed in place
    return iree_py.load(iree_py.compile(_add_model([4, STAGED_INPUT_BYTES // 4]), target="host"))


@pytest.mark.parametrize("fixture", ["add_small", "add_large"])
def test_each_call_sees_its_own_inputs(fixture: str, request: pytest.FixtureRequest) -> None:
    module = request.getfixturevalue(fixture)
    fn = module.functions["main"] if "main" in module.functions else next(iter(module.functions.values()))
    shape = tuple(fn.inputs[0].shape)
    rng = np.random.default_rng(0)
    results = []
    for _ in range(3):
        x, y = rng.standard_normal(shape, dtype=np.float32), rng.standard_normal(shape, dtype=np.float32)
        z = fn(x, y)
        np.testing.assert_array_equal(z, x + y)
        results.append((z, x + y))
    for z, expected in results:  # earlier results are copies: later calls left them alone
        np.testing.assert_array_equal(z, expected)


def test_non_contiguous_and_other_dtypes_go_through_the_checks(add_small: LoadedModule) -> None:
    fn = next(iter(add_small.functions.values()))
    with pytest.raises(IreePyError, match="was given shape"):
        fn(np.ones((2, 4), np.float32), np.ones((2, 8), np.float32))
    transposed = np.arange(16, dtype=np.float32).reshape(8, 2).T  # (2, 8), not C-contiguous
    strided = np.arange(32, dtype=np.float32).reshape(2, 16)[:, ::2]
    np.testing.assert_array_equal(fn(transposed, strided), transposed + strided)
    base = strided
    with pytest.raises(IreePyError, match="was given dtype float64"):
        fn(base.astype(np.float64), base)


def test_a_refused_call_leaves_the_next_one_right(add_small: LoadedModule) -> None:
    fn = next(iter(add_small.functions.values()))
    device, sig = add_small.device, fn.signature
    ones = np.ones((2, 8), np.float32)
    with pytest.raises(IreePyError, match="shape"):  # past the Python checks: the C API refuses it
        device.call(sig, [np.ones((2, 7), np.float32), ones])
    np.testing.assert_array_equal(fn(ones, 2 * ones), 3 * ones)
    with pytest.raises(IreePyError, match="expected 2 inputs, got 1"):
        device.call(sig, [ones])
    np.testing.assert_array_equal(fn(2 * ones, 2 * ones), 4 * ones)


def test_dynamic_outputs_follow_each_calls_shape() -> None:
    module = iree_py.load(iree_py.compile(_add_model(["n", 3]), target="host"))
    fn = next(iter(module.functions.values()))
    for n in (4, 1, 4, 0, 2):
        x = np.full((n, 3), n, np.float32)
        z = fn(x, x)
        assert z.shape == (n, 3)
        np.testing.assert_array_equal(z, 2 * x)


def test_dynamic_inputs_are_staged_again_when_their_shape_changes() -> None:
    module = iree_py.load(iree_py.compile(_add_model(["n", 4]), target="host"))
    fn = next(iter(module.functions.values()))
    plan = module.device._plan(fn.signature)
    large = STAGED_INPUT_BYTES // 16 + 1  # rows past the staging size: passed in place
    rng = np.random.default_rng(1)
    kept = []
    for n in (3, 3, 5, large, 3, 0, large, 5):
        x, y = rng.standard_normal((n, 4), dtype=np.float32), rng.standard_normal((n, 4), dtype=np.float32)
        z = fn(x, y)
        np.testing.assert_array_equal(z, x + y)
        staged = plan.staged[0]
        assert (staged is not None and staged.shape == (n, 4)) == (n != large)
        kept.append((z, x + y))
    for z, expected in kept:
        np.testing.assert_array_equal(z, expected)
    with pytest.raises(IreePyError, match="was given shape"):  # a fixed axis still goes through the checks
        fn(np.ones((3, 5), np.float32), np.ones((3, 5), np.float32))


def test_plain_arguments_take_the_fast_path_and_others_the_checks(add_small: LoadedModule) -> None:
    """Static inputs and outputs: LoadedFunction.call first tries the device's fast path (an
    ndarray of the exact dtype and shape, any strides); anything else falls through to the checks,
    which take it or say what is wrong, as before."""
    fn = add_small.functions["main"]
    assert fn._fast is not None and add_small.main is fn
    x, y = np.arange(16, dtype=np.float32).reshape(2, 8), np.full((2, 8), 0.5, np.float32)
    fortran = np.asfortranarray(x)
    for args in ((x, y), (fortran, y), (x, y[:, ::-1])):
        got = fn._fast(args)
        assert got is not None
        np.testing.assert_array_equal(got[0], args[0] + args[1])
    for args in ((x.astype(">f4"), y), (x.tolist(), y), (x,), (x, y, y), (x.astype(np.float64), y)):
        assert fn._fast(args) is None
    with pytest.raises(IreePyError, match="was given dtype >f4"):
        fn(x.astype(">f4"), y)
    with pytest.raises(IreePyError, match="expected 2 inputs"):
        fn(x)
    dynamic = iree_py.load(iree_py.compile(_add_model(["n", 3]), target="host")).functions["main"]
    a, b = np.ones((4, 3), np.float32), np.ones((5, 3), np.float32)
    assert dynamic._fast((a, a)) is None  # nothing staged yet: the general path stages shape (4, 3)
    np.testing.assert_array_equal(dynamic(a, a), 2 * a)
    np.testing.assert_array_equal(dynamic._fast((a, 3 * a))[0], 4 * a)  # staged at this shape
    first, second = dynamic._fast((a, a))[0], dynamic._fast((a, 5 * a))[0]  # the same output views
    np.testing.assert_array_equal(first, 2 * a)
    np.testing.assert_array_equal(second, 6 * a)
    assert dynamic._fast((b, b)) is None  # another shape: staged again by the general path
    np.testing.assert_array_equal(dynamic(b, 2 * b), 3 * b)
    assert dynamic._fast((b, b))[0].shape == (5, 3)
