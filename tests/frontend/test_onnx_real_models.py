"""The real models shipped with the onnx package (weights are ConstantOfShape): all import and go
through the default pipeline; SqueezeNet is evaluated against onnxruntime."""
from __future__ import annotations

import collections
import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from iree_py.frontends.onnx import import_onnx
from iree_py.ir.reference import evaluate
from iree_py.ir.text import parse_graph, print_graph
from iree_py.passes.pipeline import run_pipeline

LIGHT = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"
MODELS = sorted(p.name for p in LIGHT.glob("*.onnx"))
CODEGEN_OPS = {"Conv", "MatMul", "Add", "Sub", "Mul", "Div", "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip",
               "MaxPool", "AveragePool", "GlobalAveragePool", "LRN", "Concat", "Reshape", "Transpose", "Softmax"}


def test_models_are_there() -> None:
    assert len(MODELS) >= 9


@pytest.mark.parametrize("name", MODELS)
def test_imports_and_pipeline(name: str) -> None:
    graph = run_pipeline(import_onnx(LIGHT / name))
    ops = collections.Counter(n.op for n in graph.nodes)
    assert set(ops) <= CODEGEN_OPS, ops  # BatchNormalization is gone
    assert ops["Conv"] > 0


def test_squeezenet_matches_onnxruntime() -> None:
    path = LIGHT / "light_squeezenet.onnx"
    m = onnx.load(path)
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    expected = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"data_0": x})[0]
    graph = run_pipeline(import_onnx(path))
    text = print_graph(graph)
    assert print_graph(parse_graph(text)) == text
    got = evaluate(graph, {"data_0": x})[0]
    assert np.abs(got - expected).max() <= 1e-5 * np.abs(expected).max()
