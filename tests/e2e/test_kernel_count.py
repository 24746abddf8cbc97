"""What the optimizer promises, checked on the compiled module: which kernels exist at all."""
from __future__ import annotations

import numpy as np
from onnx import helper

import iree_py
from harness import check_against_reference, model
from iree_py.module.reader import read_module

rng = np.random.default_rng(3)


def entry_points(m) -> list[str]:
    module = read_module(iree_py.compile(m.SerializeToString()), payloads=False)
    return [e.name for e in module.executables[0].entry_points]


def test_conv_bias_batchnorm_relu_is_one_kernel():
    m = model([helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
               helper.make_node("BatchNormalization", ["c", "s", "b", "mu", "var"], ["n"]),
               helper.make_node("Relu", ["n"], ["y"])], {"x": (1, 3, 8, 8)}, ["y"],
              {"W": rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "B": rng.standard_normal(4).astype(np.float32),
               "s": np.ones(4, np.float32), "b": np.zeros(4, np.float32), "mu": np.zeros(4, np.float32),
               "var": np.ones(4, np.float32)})
    assert entry_points(m) == ["k0_conv"]


def test_contiguous_concat_needs_no_kernel():
    """A fire module (SqueezeNet): two convs write straight into the halves of the concat output."""
    w = lambda *s: rng.standard_normal(s).astype(np.float32)
    m = model([helper.make_node("Conv", ["x", "W1"], ["e1"]), helper.make_node("Relu", ["e1"], ["r1"]),
               helper.make_node("Conv", ["x", "W3"], ["e3"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["e3"], ["r3"]),
               helper.make_node("Concat", ["r1", "r3"], ["c"], axis=1),
               helper.make_node("Concat", ["c", "r4"], ["y"], axis=1), helper.make_node("Sigmoid", ["c"], ["r4"])],
              {"x": (1, 4, 5, 5)}, ["y"], {"W1": w(6, 4, 1, 1), "W3": w(5, 4, 3, 3)})
    m.graph.node.insert(6, m.graph.node.pop(5))  # keep the nodes in topological order
    names = entry_points(m)
    assert not any("concat" in n for n in names), names
    check_against_reference(m, "host")
    check_against_reference(m, "arm64")
    check_against_reference(m, "riscv64")
