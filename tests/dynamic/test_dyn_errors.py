"""Dynamic shapes: a bad input shape is refused before anything runs, with the input and the dim
named; a shape conflict inside the model is a run-time error naming the node; bounded symbols
(`dim_bounds`, the CLI's --dim NAME=LO..HI) give a static plan and an entry check."""
from __future__ import annotations

import functools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import iree_py
from dyn_models import MODELS
from iree_py.errors import CompileError, IreePyError, IreeRuntimeError
from iree_py.module.reader import read_module

from tests.e2e.harness import assert_close, run_onnxruntime


@functools.cache
def _encoder(**bounds: tuple[int, int]) -> bytes:
    model, _ = MODELS["encoder_block"]()
    return iree_py.compile(model.SerializeToString(), dim_bounds=bounds or None)


def _two_symbol_add() -> onnx.ModelProto:
    """y = x + z with x [n] and z [m]: n and m must agree (or be 1) at run time."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "z"], ["y"], name="add_xz")], "add",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, ["m"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_wrong_rank_names_the_input() -> None:
    module = iree_py.load(_encoder())
    x = np.zeros((2, 5), np.float32)
    mask = np.ones((2, 5), bool)
    with pytest.raises(IreePyError, match=r"'x'.*rank 2, expected rank 3"):
        module.main.call(x, mask)


def test_fixed_dim_mismatch_names_input_and_dim() -> None:
    module = iree_py.load(_encoder())
    x = np.zeros((2, 5, 15), np.float32)   # the model dim is 16
    mask = np.ones((2, 5), bool)
    with pytest.raises(IreePyError, match=r"'x'.*dim 2 is 15, expected 16"):
        module.main.call(x, mask)


def test_one_symbol_two_values_names_both_inputs() -> None:
    module = iree_py.load(_encoder())
    x = np.zeros((2, 5, 16), np.float32)
    mask = np.ones((2, 6), bool)
    with pytest.raises(IreeRuntimeError, match=r"seq") as err:
        module.main.call(x, mask)
    assert "'x'" in str(err.value) and "'mask'" in str(err.value)


def test_broadcast_conflict_inside_the_model_names_the_node() -> None:
    model = _two_symbol_add()
    module = iree_py.load(iree_py.compile(model.SerializeToString()))
    for n, m in ((4, 4), (4, 1), (1, 3)):
        x, z = np.arange(n, dtype=np.float32), np.arange(m, dtype=np.float32) * 10
        assert_close(module.main.call(x, z), run_onnxruntime(model, [x, z]))
    with pytest.raises(IreeRuntimeError, match=r"add_xz.*Add"):
        module.main.call(np.zeros(4, np.float32), np.zeros(3, np.float32))


@pytest.mark.parametrize("target,device", [("host", "local"), ("arm64", "qemu")])
def test_a_failed_dim_check_reports_the_run_time_dims(target: str, device: str) -> None:
    """The VM's check_dims fills the dims in: the user sees which sizes met."""
    module = iree_py.load(iree_py.compile(_two_symbol_add().SerializeToString(), target=target), device=device)
    with pytest.raises(IreeRuntimeError, match=r"model check failed: node 'add_xz' \(op Add\): broadcast operands axis 0: "
                                               r"(n = 4, m = 3|m = 3, n = 4) \(needs .*== 1\)"):
        module.main.call(np.zeros(4, np.float32), np.zeros(3, np.float32))


def test_squeezing_a_symbolic_dim_checks_it_is_one_at_run_time() -> None:
    """Paddle2ONNX squeezes the height its backbone reduced to 1: not provable, so checked."""
    graph = helper.make_graph(
        [helper.make_node("Squeeze", ["x", "axes"], ["y"], name="squeeze_h")], "squeeze",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "h", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.array([1], np.int64), "axes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    module = iree_py.load(iree_py.compile(model.SerializeToString()))
    x = np.arange(6, dtype=np.float32).reshape(2, 1, 3)
    assert_close(module.main.call(x), run_onnxruntime(model, [x]))
    with pytest.raises(IreeRuntimeError, match=r"node 'squeeze_h' \(op Reshape\): dim 1 of the input, which the "
                                               r"reshape drops: h = 2 \(needs h == 1\)"):
        module.main.call(np.zeros((2, 2, 3), np.float32))


def test_bounded_symbols_plan_statically_and_check_the_range() -> None:
    data = _encoder(batch=(1, 4), seq=(1, 32))
    plan = read_module(data).memory_plan
    assert plan.pool_size == 0 and plan.arena_size > 0
    unbounded = read_module(_encoder()).memory_plan
    assert unbounded.pool_size > 0
    model, make_inputs = MODELS["encoder_block"]()
    module = iree_py.load(data)
    for size in ({"batch": 1, "seq": 1}, {"batch": 4, "seq": 32}, {"batch": 3, "seq": 9}):
        inputs = make_inputs(size)
        assert_close(module.main.call(*inputs), run_onnxruntime(model, inputs))
    with pytest.raises(IreeRuntimeError, match=r"seq is outside 1\.\.32"):
        module.main.call(*make_inputs({"batch": 1, "seq": 33}))


def test_board_target_needs_a_bound_or_a_pool_size() -> None:
    model, _ = MODELS["mlp"]()
    with pytest.raises(CompileError, match=r"batch.*--dim"):
        iree_py.compile(model.SerializeToString(), target="cortex-m4")
    data = iree_py.compile(model.SerializeToString(), target="cortex-m4", dim_bounds={"batch": (1, 8)})
    assert read_module(data).memory_plan.pool_size == 0
