"""An index outside its axis fails the call, as onnxruntime does, with a message naming the node and
its op (runtime/kernel_failures.py): Gather, GatherElements, GatherND, ScatterElements, ScatterND,
with indices too big and below -dim, on static and (Gather, GatherElements: the others take static
shapes only) symbolic data, on this host, on arm64 under qemu-aarch64, as a cortex-m4 flat image
under qemu-arm (user mode) and on the emulated cortex-m4 board (the device protocol). Indices inside
the axis, negative ones included, give onnxruntime's results exactly."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import iree_py
from harness import run_onnxruntime
from iree_py.runtime.module import LoadedModule

# where each target runs: its devices under test
DEVICES = {"host": ["local"], "arm64": ["qemu"], "cortex-m4": ["qemu-user", "qemu"]}
MESSAGE = "node '{node}' (op {op}): an index is outside the range of its axis (kernel k{k}_{entry}, code 3)"


@dataclass(frozen=True)
class Case:
    op: str
    data: tuple[int | str, ...]           # a str: a symbolic dim (dim_param)
    indices: tuple[int, ...]
    attrs: tuple[tuple[str, int], ...]
    good: tuple[list, ...]                # indices inside the axis, negative ones too (nested lists)
    bad: tuple[list, ...]                 # one index too big, one below -dim
    # symbolic: the checked axis at the size of the static case (good and bad run there), then smaller,
    # where `small_good` is inside and the first of `good` is not
    sizes: tuple[int, ...] = ()
    small_good: tuple[list, ...] = ()

    @property
    def node(self) -> str:
        return f"{self.op}_3"

    def model(self) -> onnx.ModelProto:
        inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, list(self.data)),
                  helper.make_tensor_value_info("indices", TensorProto.INT64, list(self.indices))]
        names = ["data", "indices"]
        if self.op.startswith("Scatter"):
            names.append("updates")
            inputs.append(helper.make_tensor_value_info("updates", TensorProto.FLOAT, list(self.updates_shape)))
        node = helper.make_node(self.op, names, ["y"], name=self.node, **dict(self.attrs))
        graph = helper.make_graph([node], "index_errors", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
        m.ir_version = 8
        return m

    @property
    def updates_shape(self) -> tuple[int, ...]:
        if self.op == "ScatterElements":
            return self.indices
        return (*self.indices[:-1], *self.data[self.indices[-1]:])  # ScatterND

    def inputs(self, indices: list, size: int | None = None) -> list[np.ndarray]:
        shape = tuple(size if isinstance(d, str) else d for d in self.data)
        data = np.arange(1, 1 + int(np.prod(shape)), dtype=np.float32).reshape(shape)
        arrays = [data, np.array(indices, np.int64)]
        if self.op.startswith("Scatter"):
            arrays.append(np.full(self.updates_shape, -7.5, np.float32))
        return arrays


CASES = {
    "gather": Case("Gather", (5, 3), (4,), (("axis", 0),), ([0, -5, 4, -1],), ([0, 5, 1, 2], [0, -6, 1, 2])),
    "gather_elements": Case("GatherElements", (3, 4), (3, 2), (("axis", 1),),
                            ([[0, -4], [3, -1], [1, 2]],), ([[0, 1], [4, 0], [1, 2]], [[0, 1], [2, 0], [-5, 2]])),
    "gather_nd": Case("GatherND", (3, 4), (2, 2), (), ([[-3, 3], [2, -4]],),
                      ([[0, 4], [1, 1]], [[-4, 0], [1, 1]])),
    "scatter_elements": Case("ScatterElements", (3, 4), (1, 4), (("axis", 0),),
                             ([[-3, 2, 0, -1]],), ([[0, 3, 1, 2]], [[0, 1, -4, 2]])),
    "scatter_nd": Case("ScatterND", (3, 4), (2, 1), (), ([[-3], [2]],), ([[3], [0]], [[1], [-4]])),
    # symbolic: the range of the checked axis is its run-time size; at 2 rows, 4 and -5 are outside
    "gather_symbolic": Case("Gather", ("n", 3), (4,), (("axis", 0),), ([0, -5, 4, -1],),
                            ([0, 5, 1, 2], [0, -6, 1, 2]), sizes=(5, 2), small_good=([0, -2, 1, -1],)),
    "gather_elements_symbolic": Case("GatherElements", (3, "m"), (3, 2), (("axis", 1),),
                                     ([[0, -4], [3, -1], [1, 2]],), ([[0, 1], [4, 0], [1, 2]], [[0, 1], [2, 0], [-5, 2]]),
                                     sizes=(4, 2), small_good=([[0, -2], [1, -1], [1, 0]],)),
}
RUNS = [(case, target, device) for case in CASES for target, devices in DEVICES.items() for device in devices
        if device != "qemu" or target != "cortex-m4" or case in ("gather", "scatter_nd", "gather_symbolic")]


@functools.cache
def _module(case: str, target: str) -> bytes:
    return iree_py.compile(CASES[case].model().SerializeToString(), target=target)


def _expected_error(case: Case) -> str:
    return "^" + re.escape(MESSAGE.format(node=case.node, op=case.op, k="KNUM", entry=case.op.lower())).replace("KNUM", r"\d+") + "$"


@pytest.mark.parametrize("case,target,device", RUNS, ids=[f"{c}-{t}-{d}" for c, t, d in RUNS])
def test_index_out_of_range_names_the_node(case: str, target: str, device: str) -> None:
    c = CASES[case]
    module = iree_py.load(_module(case, target), device=device)
    for good in c.good:
        _same_as_onnxruntime(module, c, c.inputs(good, c.sizes[0] if c.sizes else None))
    for bad in c.bad:
        inputs = c.inputs(bad, c.sizes[0] if c.sizes else None)
        with pytest.raises(Exception, match="(?i)out of|invalid ind"):  # onnxruntime refuses these too
            run_onnxruntime(c.model(), inputs)
        with pytest.raises(iree_py.IreeRuntimeError, match=_expected_error(c)):
            module.main.call(*inputs)
    for size in c.sizes[1:]:  # the same module at a smaller size: its own range
        for good in c.small_good:
            _same_as_onnxruntime(module, c, c.inputs(good, size))
        with pytest.raises(iree_py.IreeRuntimeError, match=_expected_error(c)):
            module.main.call(*c.inputs(c.good[0], size))


def _same_as_onnxruntime(module: LoadedModule, c: Case, inputs: list[np.ndarray]) -> None:
    (got,) = module.main.call(*inputs)
    np.testing.assert_array_equal(got, run_onnxruntime(c.model(), inputs)[0])


def test_a_module_without_debug_info_keeps_the_runtimes_message() -> None:
    """Stripped of the source nodes, the error is the C runtime's, which still says what the code means."""
    c = CASES["gather"]
    module = iree_py.load(iree_py.compile(c.model().SerializeToString(), debug_info=False))
    with pytest.raises(iree_py.IreeRuntimeError, match=r"kernel 'k\d+_gather' failed with code 3 \(an index is "
                                                       r"outside the range of its axis\) at workgroup \(0, 0, 0\)"):
        module.main.call(*c.inputs(c.bad[0]))


def _constant_gather_model(in_branch: bool) -> onnx.ModelProto:
    """y = x + Gather(table, [3]) of a constant [3, 2] table: the index is outside at compile time
    already. in_branch: the Gather sits in the else branch of an If on the input flag."""
    table = helper.make_tensor("table", TensorProto.FLOAT, [3, 2], [1, 2, 3, 4, 5, 6])
    index = helper.make_tensor("index", TensorProto.INT64, [1], [3])
    gather = [helper.make_node("Constant", [], ["t"], value=table), helper.make_node("Constant", [], ["i"], value=index),
              helper.make_node("Gather", ["t", "i"], ["g"], name="bad_gather", axis=0)]
    out = helper.make_tensor_value_info("g", TensorProto.FLOAT, [1, 2])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])
    if not in_branch:
        graph = helper.make_graph([*gather, helper.make_node("Add", ["x", "g"], ["y"])], "constant_gather", [x], [y])
    else:
        zeros = helper.make_tensor("z", TensorProto.FLOAT, [1, 2], [0, 0])
        then = helper.make_graph([helper.make_node("Constant", [], ["g"], value=zeros)], "then", [], [out])
        orelse = helper.make_graph(gather, "else", [], [out])
        flag = helper.make_tensor_value_info("flag", TensorProto.BOOL, [])
        graph = helper.make_graph([helper.make_node("If", ["flag"], ["g"], then_branch=then, else_branch=orelse),
                                   helper.make_node("Add", ["x", "g"], ["y"])], "constant_gather", [x, flag], [y])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    m.ir_version = 8
    return m


def test_constant_indices_outside_fail_when_the_node_runs() -> None:
    """Folding leaves a gather whose constant index is outside to run time, as onnxruntime only
    fails the node it runs: a branch not taken does not fail the call."""
    x = np.ones((1, 2), np.float32)
    module = iree_py.load(iree_py.compile(_constant_gather_model(False).SerializeToString()))
    with pytest.raises(iree_py.IreeRuntimeError, match=r"^node 'bad_gather' \(op Gather\): an index is outside"):
        module.main(x)
    m = _constant_gather_model(True)
    module = iree_py.load(iree_py.compile(m.SerializeToString()))
    np.testing.assert_array_equal(module.main(x, np.array(True)), run_onnxruntime(m, [x, np.array(True)])[0])
    with pytest.raises(iree_py.IreeRuntimeError, match=r"^node 'bad_gather' \(op Gather\): an index is outside"):
        module.main(x, np.array(False))
    with pytest.raises(Exception, match="(?i)out of"):
        run_onnxruntime(m, [x, np.array(False)])


def test_an_index_into_a_shape_known_at_import_is_refused_there() -> None:
    """Gather of Shape(x) with x [n, 3]: shape arithmetic is folded at import, so an index outside
    the rank is a CompileError naming the node (not an internal error from numpy)."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Constant", [], ["i"], value=helper.make_tensor("i", TensorProto.INT64, [1], [2])),
             helper.make_node("Gather", ["s", "i"], ["d"], name="dim_of_x", axis=0),
             helper.make_node("Reshape", ["x", "d"], ["y"])]
    graph = helper.make_graph(nodes, "shape_gather", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    with pytest.raises(iree_py.CompileError, match=r"node 'dim_of_x' \(op Gather.*outside the range \[-2, 1\] of axis 0"):
        iree_py.compile(m.SerializeToString())


def test_a_kernel_shared_by_two_nodes_names_both() -> None:
    """Identical gathers share one entry point (compiler.deduplicate keeps every source node and its
    op): the failure cannot tell which of them it was, so it names both."""
    nodes = [helper.make_node("Gather", ["x", "i"], ["a"], name="gather_a", axis=0),
             helper.make_node("Gather", ["x", "j"], ["b"], name="gather_b", axis=0),
             helper.make_node("Add", ["a", "b"], ["y"], name="add")]
    graph = helper.make_graph(nodes, "shared", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2]),
                                                helper.make_tensor_value_info("i", TensorProto.INT64, [3]),
                                                helper.make_tensor_value_info("j", TensorProto.INT64, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    m.ir_version = 8
    module = iree_py.load(iree_py.compile(m.SerializeToString()))
    x, fine = np.arange(8, dtype=np.float32).reshape(4, 2), np.array([0, -4, 3])
    np.testing.assert_array_equal(module.main(x, fine, fine[::-1].copy()), run_onnxruntime(m, [x, fine, fine[::-1].copy()])[0])
    with pytest.raises(iree_py.IreeRuntimeError, match=r"^nodes 'gather_a' \(op Gather\), 'gather_b' \(op Gather\): an "
                                                       r"index is outside the range of its axis \(kernel k\d+_gather, code 3\)$"):
        module.main(x, fine, np.array([0, 4, 1]))
