"""IR text form round-trips exactly; the verifier and parser name what is wrong."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from iree_py.errors import CompileError
from iree_py.ir.graph import Graph, Value
from iree_py.ir.text import parse_graph, print_graph
from iree_py.ir.types import DType, TensorType
from iree_py.ir.verifier import verify
from iree_py.passes.pipeline import default_pipeline, run_pipeline

GOLDEN = Path(__file__).parents[1] / "passes" / "golden"


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.ir")), ids=lambda p: p.name)
def test_golden_files_round_trip(path: Path) -> None:
    text = print_graph(parse_graph(path.read_text()))  # hand-written inputs need not be canonical
    assert print_graph(parse_graph(text)) == text
    if path.name.endswith(".out.ir"):  # printed by us: already canonical
        assert text == path.read_text()


def test_constants_round_trip_bit_exactly() -> None:
    arrays = {
        "small_f32": np.array([0.1, -0.0, np.inf, -np.inf, 1e-45, 3.4028235e38], np.float32),
        "nan_f32": np.array([np.nan, 1.0], np.float32),
        "big_f32": np.random.default_rng(1).standard_normal((5, 7)).astype(np.float32),
        "i64": np.array([-(2 ** 62), 0, 7], np.int64),
        "bools": np.array([[True, False]], np.bool_),
        "f16": np.array([0.1, 65504.0], np.float16),
        "scalar": np.array(2.5, np.float32),
    }
    x = Value("x", TensorType(DType.f32, (2,)))
    consts = [Value(k, TensorType(DType.from_numpy(a.dtype), a.shape), const=a) for k, a in arrays.items()]
    g = Graph("main", [x], [x, *consts], [], ["x", *arrays], "model.onnx")
    text = print_graph(g)
    parsed = parse_graph(text)
    assert print_graph(parsed) == text
    for v, a in zip(parsed.outputs[1:], arrays.values()):
        assert v.const.dtype == a.dtype and v.const.shape == a.shape
        assert v.const.tobytes() == a.tobytes()


def test_odd_names_and_attributes_round_trip() -> None:
    text = (
        '// source: "dir/m.onnx"\n'
        'graph @"my graph"(%"in:0": tensor<1x4xf32>) -> (%out/0, %"weird \\"name\\"") {\n'
        '  %"y:1" = Clip(%"in:0") {max = inf, min = -1e-07} : tensor<1x4xf32>  // name: "clip \\u00e9"\n'
        '  %z = LeakyRelu(%"y:1") {alpha = 0.1} : tensor<1x4xf32>\n'
        '  return %"y:1", %z\n'
        '}\n')
    g = parse_graph(text)
    assert print_graph(g) == text
    assert g.output_names == ["out/0", 'weird "name"']
    assert g.nodes[0].attrs == {"max": math.inf, "min": -1e-07} and g.nodes[0].name == "clip é"
    verify(g)


def test_parse_error_names_line() -> None:
    text = "graph @main(%x: tensor<2xf32>) -> (%y) {\n  %y = Relu(%nope) : tensor<2xf32>\n  return %y\n}\n"
    with pytest.raises(CompileError, match=r"line 2: value %nope used before it is defined"):
        parse_graph(text)


def test_verifier_names_node_with_wrong_type() -> None:
    text = "graph @main(%x: tensor<2x3xf32>) -> (%y) {\n  %y = Transpose(%x) {perm = [1, 0]} : tensor<2x3xf32>  // name: \"t\"\n  return %y\n}\n"
    with pytest.raises(CompileError, match=r"node 't' \(Transpose\): result types \['tensor<2x3xf32>'\] but the op gives \['tensor<3x2xf32>'\]"):
        verify(parse_graph(text))


def test_verifier_rejects_unknown_op_and_bad_attrs() -> None:
    text = "graph @main(%x: tensor<2xf32>) -> (%y) {\n  %y = Frobnicate(%x) : tensor<2xf32>  // name: \"f\"\n  return %y\n}\n"
    with pytest.raises(CompileError, match=r"node 'f' \(Frobnicate\): not a normalized op"):
        verify(parse_graph(text))
    text = "graph @main(%x: tensor<2xf32>) -> (%y) {\n  %y = LeakyRelu(%x) : tensor<2xf32>  // name: \"l\"\n  return %y\n}\n"
    with pytest.raises(CompileError, match=r"node 'l' \(LeakyRelu\): LeakyRelu attributes should be \['alpha'\]"):
        verify(parse_graph(text))


def test_verifier_rejects_use_before_definition() -> None:
    g = parse_graph((GOLDEN / "eliminate-dead-code.in.ir").read_text())
    g.nodes.reverse()
    with pytest.raises(CompileError, match=r"node 'dead' \(Mul\): input %dead2|node 'dead2' \(Relu\): input %dead is used before"):
        verify(g)


def test_print_ir_after() -> None:
    g = parse_graph((GOLDEN / "fuse-elementwise.in.ir").read_text())
    printed: list[str] = []
    run_pipeline(g, {"fuse-elementwise"}, out=printed.append)
    assert len(printed) == 1
    assert printed[0].startswith("// ----- IR after fuse-elementwise ----- //\n")
    assert "fused {" in printed[0]
    everything: list[str] = []
    run_pipeline(parse_graph((GOLDEN / "fuse-elementwise.in.ir").read_text()), "all", out=everything.append)
    assert [text.split(" ----- ")[1].removeprefix("IR after ") for text in everything] == \
        [p.name for p in default_pipeline()]
    with pytest.raises(CompileError, match="unknown pass"):
        run_pipeline(g, {"no-such-pass"})


def test_slice_text_round_trips_and_verifier_checks_normalized_attrs() -> None:
    text = ('graph @main(%x: tensor<4x5xf32>) -> (%y) {\n'
            '  %y = Slice(%x) {ends = [4, -1], starts = [1, 4], steps = [2, -2]} : tensor<2x3xf32>  // name: "s"\n'
            '  return %y\n}\n')
    g = parse_graph(text)
    assert print_graph(g) == text
    verify(g)
    bad = text.replace("starts = [1, 4]", "starts = [1, 5]")
    with pytest.raises(CompileError, match=r"node 's' \(Slice\): Slice axis 1 of tensor<4x5xf32>: step -2 wants "
                                           r"-1 <= end -1 <= start 5 < dim 5"):
        verify(parse_graph(bad))
