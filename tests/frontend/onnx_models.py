"""Build small ONNX models and compare our import (evaluated with iree_py.ir.reference) against
onnxruntime. Tolerance: 1e-5 relative to the largest magnitude of the expected output."""
from __future__ import annotations

import numpy as np
import onnx
import onnx.defs
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from iree_py.frontends.onnx import import_onnx
from iree_py.ir.reference import evaluate
from iree_py.ir.text import parse_graph, print_graph

NEWEST = onnx.defs.onnx_opset_version()
OPSETS = (7, 9, 11, 13, NEWEST)
RTOL = 1e-5


def model(nodes: list[onnx.NodeProto], inputs: dict[str, tuple[int, ...]], outputs: list[str],
          opset: int, initializers: dict[str, np.ndarray] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()])
    opset_id = helper.make_opsetid("", opset)
    m = helper.make_model(graph, opset_imports=[opset_id])
    m.ir_version = helper.find_min_ir_version_for([opset_id])
    return m


def random_inputs(m: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    init = {t.name for t in m.graph.initializer}
    feeds = {}
    for vi in m.graph.input:
        if vi.name in init:
            continue
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def check_against_reference(m: onnx.ModelProto, feeds: dict[str, np.ndarray] | None = None) -> None:
    """Import, evaluate with the numpy reference, compare with onnxruntime; also check the text
    form of the imported graph round-trips."""
    feeds = feeds if feeds is not None else random_inputs(m)
    expected = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    graph = import_onnx(m)
    text = print_graph(graph)
    assert print_graph(parse_graph(text)) == text
    got = evaluate(graph, feeds)
    assert len(got) == len(expected)
    for g, e, name in zip(got, expected, graph.output_names):
        assert g.shape == e.shape, f"output {name}: shape {g.shape} != onnxruntime {e.shape}"
        scale = max(float(np.abs(e).max(initial=0.0)), 1e-30)
        err = float(np.abs(g.astype(np.float64) - e).max(initial=0.0)) / scale
        assert err <= RTOL, f"output {name}: max error {err:.3g} x max|expected| > {RTOL}"
