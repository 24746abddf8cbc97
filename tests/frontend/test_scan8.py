"""Scan at opset 8 (frontends/onnx/control_flow.py, scan8: one Loop per batch element, stacked back on axis 0), compiled for host
and run in the C runtime, compared with onnxruntime within 1e-4 of the largest reference value
(tests/e2e/harness.py). Covers several batch elements, two states and two scan inputs (one reversed),
a body reading an outer value, a constant sequence_lens (onnxruntime pads the rest with zeros), and
the combinations refused at compile time."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import iree_py
from iree_py.errors import CompileError
from tests.e2e.harness import assert_close, run_onnxruntime

F = TensorProto.FLOAT
BATCH, SEQ, WIDTH = 3, 4, 2


def body() -> onnx.GraphProto:
    """States (sum, prod) of [WIDTH]; scan inputs a, r of [WIDTH]; outputs sum, prod, sum*w, a-r."""
    nodes = [helper.make_node("Add", ["sum_in", "a"], ["sum_out"]),
             helper.make_node("Mul", ["prod_in", "r"], ["prod_out"]),
             helper.make_node("Mul", ["sum_out", "w"], ["scaled"]),
             helper.make_node("Sub", ["a", "r"], ["diff"])]
    vi = [helper.make_tensor_value_info(n, F, [WIDTH]) for n in
          ("sum_in", "prod_in", "a", "r", "sum_out", "prod_out", "scaled", "diff")]
    return helper.make_graph(nodes, "scan8_body", vi[:4], vi[4:])


def scan_model(directions: list[int], lens: list[int] | None, lens_input: bool = False) -> onnx.ModelProto:
    attrs = {"body": body(), "num_scan_inputs": 2, "directions": directions}
    node = helper.make_node("Scan", ["lens" if lens is not None or lens_input else "", "s0", "p0", "x", "y"],
                            ["s", "p", "sc", "d"], **attrs)
    inputs = [helper.make_tensor_value_info(n, F, [BATCH, WIDTH]) for n in ("s0", "p0")]
    inputs += [helper.make_tensor_value_info(n, F, [BATCH, SEQ, WIDTH]) for n in ("x", "y")]
    inits = [helper.make_tensor("w", F, [WIDTH], [0.5, -2.0])]
    if lens_input:
        inputs.insert(0, helper.make_tensor_value_info("lens", TensorProto.INT64, [BATCH]))
    elif lens is not None:
        inits.append(helper.make_tensor("lens", TensorProto.INT64, [BATCH], lens))
    outputs = [helper.make_tensor_value_info(n, F, None) for n in ("s", "p", "sc", "d")]
    graph = helper.make_graph([node], "scan8", inputs, outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)])
    m.ir_version = 4
    return m


def data(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((BATCH, WIDTH)).astype(np.float32),
            rng.uniform(0.5, 1.5, (BATCH, WIDTH)).astype(np.float32),
            rng.standard_normal((BATCH, SEQ, WIDTH)).astype(np.float32),
            rng.uniform(0.5, 1.5, (BATCH, SEQ, WIDTH)).astype(np.float32)]


def run(m: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device="local")
    return module.main.call(*inputs)


@pytest.mark.parametrize("directions", [[0, 0], [0, 1], [1, 1]])
def test_full_length_batches_match_onnxruntime(directions: list[int]) -> None:
    m, inputs = scan_model(directions, None), data()
    got = run(m, inputs)
    assert [g.shape for g in got] == [(BATCH, WIDTH), (BATCH, WIDTH), (BATCH, SEQ, WIDTH), (BATCH, SEQ, WIDTH)]
    assert_close(got, run_onnxruntime(m, inputs))


def test_constant_sequence_lens_scans_that_many_steps_and_pads_with_zeros() -> None:
    lens = [SEQ, 1, 3]
    m, inputs = scan_model([0, 0], lens), data(1)
    got = run(m, inputs)
    assert_close(got, run_onnxruntime(m, inputs))
    # Checked directly too: element 1 ran one step, element 2 three.
    s0, _, x, _ = inputs
    np.testing.assert_allclose(got[0][1], s0[1] + x[1, 0], rtol=1e-5)
    np.testing.assert_allclose(got[0][2], s0[2] + x[2, :3].sum(axis=0), rtol=1e-5)
    assert not got[2][1, 1:].any() and not got[3][2, 3:].any()


def test_full_sequence_lens_may_scan_in_reverse() -> None:
    m, inputs = scan_model([1, 0], [SEQ] * BATCH), data(2)
    assert_close(run(m, inputs), run_onnxruntime(m, inputs))


@pytest.mark.parametrize("model, message", [
    (scan_model([0, 0], None, lens_input=True), "sequence_lens computed at run time"),
    (scan_model([1, 0], [SEQ, 2, SEQ]), "reverse direction"),
    (scan_model([0, 0], [SEQ, 0, SEQ]), "outside 1..4"),
    (scan_model([0, 0], [SEQ, 5, SEQ]), "outside 1..4"),
])
def test_unsupported_combinations_are_refused(model: onnx.ModelProto, message: str) -> None:
    with pytest.raises(CompileError, match=message):
        iree_py.compile(model.SerializeToString(), target="host")
