"""ONNX If, Loop and Scan end to end: imported as IR regions, lowered to VM branches (not unrolled),
run by the C runtime on host and arm64 (qemu), compared with onnxruntime (relative 1e-4)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import control_flow_models as cf
import iree_py
from harness import DEVICE, assert_close, random_inputs, run_onnxruntime
from iree_py.errors import CompileError, IreePyError
from iree_py.module.dump import dump_module
from iree_py.module.reader import read_module

MODELS = {
    "if": cf.if_relu_or_neg,
    "loop_scan_output": cf.loop_accumulate,
    "loop_condition": lambda: cf.loop_accumulate(with_cond=True),
    "scan": cf.scan_cumulative,
    "scan_reverse": lambda: cf.scan_cumulative(reverse=True),
    "scan_axis_1": lambda: cf.scan_cumulative(axis=1),
    "nested_loop_if": cf.loop_with_if,
}


def inputs_for(name: str, seed: int) -> list[np.ndarray]:
    m = MODELS[name]()
    inputs = random_inputs(m, seed)
    if name == "loop_condition":  # the trip count: a model input, several values
        inputs[-1] = np.array([0, 3, 10, 40][seed % 4], np.int64)
    return inputs


@pytest.mark.parametrize("name", sorted(MODELS))
def test_matches_onnxruntime_on_host(name):
    m = MODELS[name]()
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"))
    for seed in range(4):  # one module, several inputs: both branches, several trip counts
        inputs = inputs_for(name, seed)
        assert_close(module.main.call(*inputs), run_onnxruntime(m, inputs))


@pytest.mark.parametrize("name", ["if", "loop_condition", "scan_reverse", "nested_loop_if"])
def test_matches_onnxruntime_on_arm64(name):
    m = MODELS[name]()
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="arm64"), device=DEVICE["arm64"])
    for seed in (0, 1):
        inputs = inputs_for(name, seed)
        assert_close(module.main.call(*inputs), run_onnxruntime(m, inputs))


def dump(m) -> str:
    data = iree_py.compile(m.SerializeToString(), target="host")
    return dump_module(read_module(data))


def test_loops_are_lowered_to_branches_not_unrolled():
    """The body's kernels are dispatched from one place in the bytecode, whatever the trip count."""
    many, few = dump(cf.loop_accumulate(trips=50)), dump(cf.loop_accumulate(trips=2))
    assert "cond_br" in many and "buffer_subview" in many
    assert many.count(": dispatch ") == few.count(": dispatch ") > 0


def test_if_takes_each_branch():
    m = cf.if_relu_or_neg()
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"))
    positive = np.abs(np.random.default_rng(0).standard_normal((2, 3))).astype(np.float32)
    for x in (positive, -positive):
        assert_close(module.main.call(x), run_onnxruntime(m, [x]))


def test_scan_outputs_need_a_trip_count():
    """A run-time trip count is supported (tests/e2e/test_cf_dynamic.py); none at all is refused."""
    m = cf.loop_accumulate()
    m.graph.node[0].input[0] = ""
    with pytest.raises(CompileError, match=r"node 'Loop_0' \(op Loop, opset 17\): scan outputs of a Loop with no "
                                           r"trip count"):
        iree_py.compile(m.SerializeToString(), target="host")


def test_branches_of_different_ranks_are_refused_with_the_node_named():
    """Different shapes are supported (tests/e2e/test_cf_dynamic.py); different ranks are not."""
    m = cf.if_relu_or_neg(else_shape=(3, 2))
    from onnx import TensorProto, helper
    else_branch = next(a.g for a in m.graph.node[2].attribute if a.name == "else_branch")
    else_branch.initializer[0].CopyFrom(helper.make_tensor("else_shape", TensorProto.INT64, [1], [6]))
    with pytest.raises(CompileError, match=r"node 'If_2' \(op If, opset 17\): result 0 has rank 2 .* in then_branch "
                                           r"and 1 .* in else_branch: iree-py gives each value one rank"):
        iree_py.compile(m.SerializeToString(), target="host")


def test_a_loop_that_ends_before_its_scan_length_is_a_runtime_error():
    m = cf.loop_accumulate(trips=6, stop_after=3)
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"))
    with pytest.raises(IreePyError, match=r"check failed with code 4337"):
        module.main.call(*random_inputs(m, 0))


def _if_with_unsupported_branch(else_op: str) -> onnx.ModelProto:
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node(else_op, ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g, name="branchy")], "if_fail",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]), helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("target", ["host", "arm64"])
def test_a_branch_that_cannot_be_compiled_fails_only_when_taken(target: str):
    """As onnxruntime evaluates only the branch taken (silero-vad's 8 kHz branch at a 16 kHz window)."""
    m = _if_with_unsupported_branch("RandomUniformLike")
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target=target), device=DEVICE[target])
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    assert_close(module.main.call(x, np.array(True)), run_onnxruntime(m, [x, np.array(True)]))
    with pytest.raises(iree_py.IreeRuntimeError, match=r"model check failed: node 'branchy' \(op If\) took a branch "
                                                       r"iree-py could not compile: .*RandomUniformLike.*not supported"):
        module.main.call(x, np.array(False))


def test_an_if_whose_branches_both_cannot_be_compiled_is_refused():
    m = _if_with_unsupported_branch("RandomUniformLike")
    then_branch = next(a.g for a in m.graph.node[0].attribute if a.name == "then_branch")
    then_branch.node[0].op_type = "RandomNormalLike"
    with pytest.raises(iree_py.CompileError, match=r"RandomNormalLike.*not supported"):
        iree_py.compile(m.SerializeToString())
