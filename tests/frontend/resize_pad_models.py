"""Helpers for the Resize/Pad/ArgMax/CumSum tests: build one-node models, and check a model both
through the numpy reference (check_against_reference) and compiled for the host and run by the
C runtime (tolerance 1e-5 of the largest expected magnitude; integer outputs exactly)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import iree_py
from onnx_models import RTOL, check_against_reference, random_inputs


def one_node(op: str, inputs: dict[str, tuple[int, ...]], opset: int, constants: dict[str, np.ndarray] | None = None,
             input_names: list[str] | None = None, outputs: int = 1, dtype: int = TensorProto.FLOAT,
             out_dtypes: tuple[int, ...] | None = None, **attrs) -> onnx.ModelProto:
    """A model with one `op` node. `input_names` orders the node's inputs ('' for absent ones);
    by default the graph inputs then the constants."""
    constants = constants or {}
    names = input_names if input_names is not None else [*inputs, *constants]
    out_names = [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op, names, out_names, name=f"{op.lower()}_node", **attrs)
    graph = helper.make_graph(
        [node], "test", [helper.make_tensor_value_info(n, dtype, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, t, None) for n, t in zip(out_names, out_dtypes or (dtype,) * outputs)],
        [numpy_helper.from_array(a, n) for n, a in constants.items()])
    opset_id = helper.make_opsetid("", opset)
    m = helper.make_model(graph, opset_imports=[opset_id])
    m.ir_version = helper.find_min_ir_version_for([opset_id])
    return m


def check_compiled(m: onnx.ModelProto, feeds: dict[str, np.ndarray] | None = None, compile: bool = True) -> None:
    """The reference check, then (with `compile`) the compiled module on the host against onnxruntime."""
    feeds = feeds if feeds is not None else random_inputs(m)
    check_against_reference(m, feeds)
    if not compile:
        return
    options = ort.SessionOptions()
    options.log_severity_level = 3
    expected = ort.InferenceSession(m.SerializeToString(), options,
                                    providers=["CPUExecutionProvider"]).run(None, feeds)
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device="local")
    got = module.main.call(*[feeds[vi.name] for vi in m.graph.input])
    got = got if isinstance(got, (list, tuple)) else [got]
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert g.shape == e.shape, f"output {i}: shape {g.shape} != onnxruntime {e.shape}"
        if not np.issubdtype(e.dtype, np.floating):
            np.testing.assert_array_equal(g, e, err_msg=f"output {i}")
            continue
        scale = max(float(np.abs(e).max(initial=0.0)), 1e-30)
        err = float(np.abs(g.astype(np.float64) - e).max(initial=0.0)) / scale
        assert err <= RTOL, f"output {i}: compiled max error {err:.3g} x max|expected| > {RTOL}"
