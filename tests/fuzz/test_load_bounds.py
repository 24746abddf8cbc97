"""A module whose memory plan asks for more than the machine has is refused at load with the numbers
(issue 20: resource bounds at load; runtime_c/api/api.c sums arena, pool and register windows before
allocating any of them). The C side, with explicit limits, register windows and call depth:
runtime_c/tests/runtime_tests.c (test_memory_limit, bad_modules.txt)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from onnx import TensorProto, helper

import iree_py
from iree_py.errors import IreeRuntimeError
from iree_py.module.reader import read_module
from iree_py.module.writer import write_module


@pytest.fixture(scope="module")
def add_module() -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["z"])], "bounds", [x], [z])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return iree_py.compile(model.SerializeToString(), target="host")


def with_plan(data: bytes, arena: int | None = None, pool: int | None = None) -> bytes:
    module = read_module(data)
    plan = module.memory_plan
    plan = replace(plan, arena_size=plan.arena_size if arena is None else arena,
                   pool_size=plan.pool_size if pool is None else pool)
    return write_module(replace(module, memory_plan=plan))


def test_the_unpatched_module_loads(add_module):
    x = np.array([[-1.0, 2.0, -3.0, 4.0]], np.float32)
    assert iree_py.load(add_module).main.call(x)[0].tolist() == [[0.0, 2.0, 0.0, 4.0]]


def test_an_arena_beyond_the_machine_is_refused_with_the_numbers(add_module):
    with pytest.raises(IreeRuntimeError, match=r"out of memory: module '.*' needs \d+ bytes \(arena 1152921504606846976, "
                                               r"pool 0, registers .*\); limit \d+"):
        iree_py.load(with_plan(add_module, arena=1 << 60))


def test_a_pool_beyond_the_machine_is_refused_with_the_numbers(add_module):
    # The pool is not zeroed, so before this bound an overcommitting OS gave it and a call could
    # touch more memory than there is.
    with pytest.raises(IreeRuntimeError, match=r"out of memory: .*pool 1125899906842624, .*; limit \d+"):
        iree_py.load(with_plan(add_module, pool=1 << 50))
