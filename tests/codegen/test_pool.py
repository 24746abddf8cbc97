"""maxpool / avgpool against onnxruntime over kernels 1..3, strides 1..3, pads, dilations,
ceil_mode and count_include_pad; globalavgpool against numpy."""
from __future__ import annotations

import itertools

import numpy as np
import onnxruntime as ort
import pytest

from onnx import TensorProto, helper

import iree_py
from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm.jit import run_kernels
from tests.codegen.conftest import assert_close, f32, run_onnx_op

KERNELS = [(1, 1), (2, 2), (3, 3), (3, 2)]
STRIDES = [(1, 1), (2, 2), (3, 2)]
PADS = [(0, 0, 0, 0), (1, 1, 1, 1), (0, 1, 1, 0)]


def _cases():
    for kind, kernel, strides, pads, ceil_mode in itertools.product(
            ("maxpool", "avgpool"), KERNELS, STRIDES, PADS, (0, 1)):
        if any(p >= k for p, k in zip(pads, kernel + kernel)):
            continue  # ONNX requires pads smaller than the kernel
        extras = [{"dilations": (1, 1)}, {"dilations": (2, 1)}] if kind == "maxpool" else \
                 [{"count_include_pad": c, "dilations": d} for c in (0, 1) for d in ((1, 1), (2, 1))]
        for extra in extras:
            yield kind, {"kernel": kernel, "strides": strides, "pads": pads, "ceil_mode": ceil_mode, **extra}


def test_window_pools_match_onnxruntime() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 7, 8)).astype(np.float32)
    specs, wants = [], []
    for k, (kind, attrs) in enumerate(_cases()):
        onnx_attrs = {"kernel_shape": list(attrs["kernel"]), "strides": list(attrs["strides"]),
                      "pads": list(attrs["pads"]), "ceil_mode": attrs["ceil_mode"]}
        onnx_attrs["dilations"] = list(attrs["dilations"])
        if kind == "avgpool":
            onnx_attrs["count_include_pad"] = attrs["count_include_pad"]
        want = run_onnx_op("MaxPool" if kind == "maxpool" else "AveragePool", {"x": x}, **onnx_attrs)
        specs.append(KernelSpec(f"pool{k}", kind, (f32(*x.shape),), (f32(*want.shape),), attrs))
        wants.append(want)
    assert len(specs) > 100
    for spec, (got,), want in zip(specs, run_kernels(specs, [[x]] * len(specs)), wants):
        assert_close(got, want, 1e-6, f"{spec.kind} {spec.attrs}")


def test_global_avgpool() -> None:
    rng = np.random.default_rng(1)
    shapes = [(2, 3, 7, 7), (1, 5, 3, 11), (1, 2, 17), (1, 1, 1, 1)]
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    specs = [KernelSpec(f"gap{k}", "globalavgpool", (f32(*s),), (f32(*s[:2], *(1,) * (len(s) - 2)),))
             for k, s in enumerate(shapes)]
    for x, (got,) in zip(xs, run_kernels(specs, [[x] for x in xs])):
        want = x.mean(axis=tuple(range(2, x.ndim)), keepdims=True, dtype=np.float64)
        assert_close(got, want, 1e-6, str(x.shape))


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [2, 2], "strides": [2, 2]},
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "storage_order": 1},
    {"kernel_shape": [3, 2], "strides": [2, 1], "dilations": [2, 1], "ceil_mode": 1, "pads": [1, 0, 0, 1]},
])
def test_maxpool_indices_match_onnxruntime(attrs) -> None:
    """ONNX MaxPool's Indices (MaxPoolIndices, kernel maxpool_index) compiled for the host: the flat
    index of each window's first maximum, in both storage orders; ties (rounded inputs) included."""
    x = np.round(np.random.default_rng(1).standard_normal((2, 3, 7, 6)) * 2).astype(np.float32)  # many ties
    graph = helper.make_graph([helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("i", TensorProto.INT64, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    m.ir_version = 8
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = iree_py.load(iree_py.compile(m.SerializeToString(), target="host")).main.call(x)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
