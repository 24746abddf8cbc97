"""Each pass: input IR text -> expected output IR text (golden files in golden/), and the numpy
reference gives the same results before and after the pass."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from iree_py.ir.reference import evaluate
from iree_py.ir.text import parse_graph, print_graph
from iree_py.ir.verifier import verify
from iree_py.passes.pipeline import PASSES

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("IREE_PY_UPDATE_GOLDEN") == "1"


# fuse-qdq reads Graph.dequantized, which the text form does not carry: tests/passes/test_fuse_qdq.py
@pytest.mark.parametrize("name", sorted(set(PASSES) - {"fuse-qdq"}))
def test_pass_golden(name: str) -> None:
    source = (GOLDEN / f"{name}.in.ir").read_text()
    graph = parse_graph(source)
    verify(graph)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(v.type.shape).astype(np.float32) for v in graph.inputs]
    before = evaluate(graph, inputs)

    result = PASSES[name]().run(graph)
    verify(result)
    text = print_graph(result)
    expected_path = GOLDEN / f"{name}.out.ir"
    if UPDATE:
        expected_path.write_text(text)
    assert text == expected_path.read_text()
    after = evaluate(parse_graph(text), inputs)
    for b, a in zip(before, after, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
