"""ONNX models with symbolic dims import as one symbolic graph (iree_py/frontends/onnx/symbolic.py):
the output types keep the symbols, the pass pipeline runs, and the numpy reference of the graph
matches onnxruntime at three sizes (rtol/atol 1e-4: float32 with different summation orders)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from dyn_models import MODELS

from iree_py.frontends.onnx import import_onnx
from iree_py.ir.reference import evaluate
from iree_py.passes.pipeline import run_pipeline

OUTPUT_TYPES = {
    "mlp": ["tensor<{batch}x4xf32>"],
    "encoder_block": ["tensor<{batch}x{seq}x16xf32>"],
    "conv_lstm": ["tensor<{T}x1x1x12xf32>", "tensor<1x1x12xf32>", "tensor<1x1x12xf32>"],
    "image_net": ["tensor<1x5xf32>"],
}
SIZES = {
    "mlp": [{"batch": 1}, {"batch": 3}, {"batch": 8}],
    "encoder_block": [{"batch": 1, "seq": 1}, {"batch": 2, "seq": 5}, {"batch": 3, "seq": 9}],
    "conv_lstm": [{"T": 1}, {"T": 6}, {"T": 17}],
    "image_net": [{"height": 8, "width": 8}, {"height": 17, "width": 23}, {"height": 32, "width": 12}],
}
TOLERANCE = 1e-4


def _onnxruntime(model: onnx.ModelProto, arrays: list[np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: a for i, a in zip(session.get_inputs(), arrays)})


@pytest.mark.parametrize("name", sorted(MODELS))
def test_imports_with_symbolic_output_types(name: str) -> None:
    model, _ = MODELS[name]()
    graph = import_onnx(model)
    assert [str(v.type) for v in graph.outputs] == OUTPUT_TYPES[name]
    assert graph.inputs[0].type.symbols == set(SIZES[name][0])


@pytest.mark.parametrize("name", sorted(MODELS))
def test_pipeline_keeps_symbolic_types(name: str) -> None:
    model, _ = MODELS[name]()
    graph = run_pipeline(import_onnx(model), final_check=False)
    assert [str(v.type) for v in graph.outputs] == OUTPUT_TYPES[name]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_reference_matches_onnxruntime_at_three_sizes(name: str) -> None:
    model, make_inputs = MODELS[name]()
    graph = import_onnx(model)
    for sizes in SIZES[name]:
        arrays = make_inputs(sizes)
        expected = _onnxruntime(model, arrays)
        got = evaluate(graph, arrays)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.shape == e.shape, (sizes, g.shape, e.shape)
            np.testing.assert_allclose(g, e, rtol=TOLERANCE, atol=TOLERANCE, err_msg=f"{name} at {sizes}")
