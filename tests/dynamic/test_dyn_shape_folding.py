"""Shape arithmetic on symbolic dims at import (iree_py/frontends/onnx/symbolic.py): the types the
frontend gives, the symbols it reads at run time, and the numpy reference of the imported graph
against onnxruntime (exact for integer results, 1e-6 for float)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from iree_py.errors import CompileError
from iree_py.frontends.onnx import import_onnx
from iree_py.ir import symbols
from iree_py.ir.reference import evaluate

I64, F32 = TensorProto.INT64, TensorProto.FLOAT


def _model(nodes: list, inputs: dict, outputs: list[str], inits: dict | None = None,
           opset: int = 17) -> onnx.ModelProto:
    """inputs: name -> (elem type, shape with ints / dim_param strings)."""
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [onnx.ValueInfoProto(name=o) for o in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _ints(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def _check(model: onnx.ModelProto, *input_sets: list[np.ndarray]) -> None:
    """The imported graph's reference equals onnxruntime for each set of inputs."""
    graph = import_onnx(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for arrays in input_sets:
        expected = session.run(None, {i.name: a for i, a in zip(session.get_inputs(), arrays)})
        got = evaluate(graph, arrays)
        for g, e in zip(got, expected, strict=True):
            assert g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6)


def _f32(*shape: int) -> np.ndarray:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


# --- input dims ------------------------------------------------------------------------------------

def test_dim_params_become_identifiers_and_unnamed_dims_get_input_axis_names() -> None:
    m = _model([helper.make_node("Relu", ["x"], ["y"])], {"x": (F32, ["batch size", None, 3])}, ["y"])
    assert str(import_onnx(m).inputs[0].type) == "tensor<{batch_size}x{x_d1}x3xf32>"
    assert import_onnx(m, {"batch size": 2, "x:1": 5}).inputs[0].type.shape == (2, 5, 3)
    assert import_onnx(m, {"batch_size": 2, "x_d1": 5}).inputs[0].type.shape == (2, 5, 3)


def test_static_shape_arithmetic_still_folds_to_constants() -> None:
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Reshape", ["x", "s2"], ["y"])]
    m = _model(nodes + [helper.make_node("Concat", ["s", "s"], ["s2_unused"], axis=0)],
               {"x": (F32, [2, 3])}, ["y"], {"s2": _ints(3, 2)})
    graph = import_onnx(m)
    assert [n.op for n in graph.nodes] == ["Reshape"] and graph.symbol_sources == {}


# --- folding known values --------------------------------------------------------------------------

def test_reshape_with_zero_and_minus_one_over_symbolic_dims() -> None:
    m = _model([helper.make_node("Reshape", ["x", "shape"], ["y"])], {"x": (F32, ["batch", "seq", 8])}, ["y"],
               {"shape": _ints(0, 0, 2, -1)})
    assert str(import_onnx(m).outputs[0].type) == "tensor<{batch}x{seq}x2x4xf32>"
    _check(m, [_f32(2, 3, 8)], [_f32(1, 5, 8)])


def test_minus_one_over_a_sum_of_symbols_divides_exactly() -> None:
    """ddddocr's CNN -> LSTM: a stride-2 conv makes the width 1 + floordiv(-1 + w, 2), and
    Reshape [0, 0, -1] of [width', 1, 8, 2] divides (16 + 16*q) by (1 + q): exactly 16, a static
    input size for the LSTM after it, not floordiv(16 + 16*q, max(1 + q, 1))."""
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[1, 3], strides=[1, 2], pads=[0, 1, 0, 1]),
             helper.make_node("Transpose", ["p"], ["t"], perm=[3, 0, 1, 2]),
             helper.make_node("Reshape", ["t", "shape"], ["y"])]
    m = _model(nodes, {"x": (F32, [1, 8, 2, "w"])}, ["y"], {"shape": _ints(0, 0, -1)})
    assert str(import_onnx(m).outputs[0].type) == "tensor<{1 + floordiv(-1 + w, 2)}x1x16xf32>"
    _check(m, [_f32(1, 8, 2, 9)], [_f32(1, 8, 2, 4)])


def test_torch_style_flatten_shape_from_shape_slice_concat() -> None:
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Slice", ["s", "zero", "one"], ["b"]),
             helper.make_node("Concat", ["b", "minus_one"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    m = _model(nodes, {"x": (F32, ["batch", 3, 4])}, ["y"],
               {"zero": _ints(0), "one": _ints(1), "minus_one": _ints(-1)})
    assert str(import_onnx(m).outputs[0].type) == "tensor<{batch}x12xf32>"
    _check(m, [_f32(1, 3, 4)], [_f32(5, 3, 4)])


def test_size_gather_and_integer_arithmetic() -> None:
    nodes = [helper.make_node("Size", ["x"], ["n"]),
             helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["rows"], axis=0),
             helper.make_node("Mul", ["rows", "two"], ["rows2"]),
             helper.make_node("Div", ["n", "rows2"], ["half_cols"]),
             helper.make_node("Unsqueeze", ["rows2", "axes0"], ["r"]),
             helper.make_node("Unsqueeze", ["half_cols", "axes0"], ["c"]),
             helper.make_node("Concat", ["r", "c"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    m = _model(nodes, {"x": (F32, ["n", 6])}, ["y"], {"zero": np.array(0, np.int64), "two": np.array(2, np.int64),
                                                      "axes0": _ints(0)})
    assert str(import_onnx(m).outputs[0].type) == "tensor<{2*n}x3xf32>"
    _check(m, [_f32(1, 6)], [_f32(4, 6)])


def test_constant_of_shape_of_a_symbolic_shape() -> None:
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ConstantOfShape", ["s"], ["ones"],
                              value=numpy_helper.from_array(np.array([1.5], np.float32))),
             helper.make_node("Add", ["x", "ones"], ["y"])]
    m = _model(nodes, {"x": (F32, ["a", "b"])}, ["y"])
    assert str(import_onnx(m).outputs[0].type) == "tensor<{a}x{b}xf32>"
    _check(m, [_f32(2, 3)], [_f32(4, 1)])


def test_range_up_to_a_symbolic_dim() -> None:
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "one"], ["seq"], axis=0),
             helper.make_node("Range", ["start", "seq", "step"], ["y"])]
    m = _model(nodes, {"x": (F32, ["batch", "seq"])}, ["y"],
               {"one": np.array(1, np.int64), "start": np.array(1, np.int64), "step": np.array(2, np.int64)})
    assert str(import_onnx(m).outputs[0].type) == "tensor<{ceildiv(-1 + seq, 2)}xi64>"  # seq >= 0: never below 0
    _check(m, [_f32(2, 7)], [_f32(1, 1)], [_f32(3, 2)])


def test_slice_with_a_computed_end_and_a_static_start() -> None:
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Slice", ["s", "one", "two"], ["seq"]),
             helper.make_node("Sub", ["seq", "one"], ["end"]),
             helper.make_node("Slice", ["x", "one", "end", "one"], ["y"])]
    m = _model(nodes, {"x": (F32, ["batch", "seq"])}, ["y"], {"one": _ints(1), "two": _ints(2)})
    length = import_onnx(m).outputs[0].type.shape[1]  # x[:, 1:seq-1], clamped for seq < 2
    assert [symbols.evaluate(length, {"seq": seq}) for seq in (0, 1, 2, 3, 7)] == [0, 0, 0, 1, 5]
    _check(m, [_f32(2, 7)], [_f32(3, 2)])


def test_expand_to_a_shape_built_with_equal_and_where() -> None:
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Equal", ["s", "minus_one"], ["unknown"]),
             helper.make_node("Where", ["unknown", "ones", "s"], ["target"]),
             helper.make_node("Expand", ["row", "target"], ["y"])]
    m = _model(nodes, {"x": (F32, ["n", "m"]), "row": (F32, [1, "m"])}, ["y"],
               {"minus_one": _ints(-1), "ones": _ints(1, 1)})
    assert str(import_onnx(m).outputs[0].type) == "tensor<{n}x{m}xf32>"
    _check(m, [_f32(3, 4), _f32(1, 4)], [_f32(1, 2), _f32(1, 2)])


def test_tile_by_a_symbolic_count_and_topk_of_a_computed_k() -> None:
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Slice", ["s", "zero", "one"], ["n"]),
             helper.make_node("Concat", ["one", "n"], ["repeats"], axis=0),
             helper.make_node("Tile", ["x", "repeats"], ["tiled"]),
             helper.make_node("TopK", ["tiled", "n"], ["values", "indices"], axis=1)]
    m = _model(nodes, {"x": (F32, ["n", 3])}, ["tiled", "values"], {"zero": _ints(0), "one": _ints(1)})
    graph = import_onnx(m)
    assert [str(v.type) for v in graph.outputs] == ["tensor<{n}x{3*n}xf32>", "tensor<{n}x{n}xf32>"]
    _check(m, [_f32(2, 3)], [_f32(4, 3)])


# --- shapes read at run time -----------------------------------------------------------------------

def test_reshape_to_a_shape_given_at_run_time_reads_symbols() -> None:
    m = _model([helper.make_node("Reshape", ["x", "shape"], ["y"])], {"x": (F32, [2, 6]), "shape": (I64, [3])}, ["y"])
    graph = import_onnx(m)  # the symbols are read from the shape with 0 and -1 resolved by i64 ops
    sources = sorted((s, v.name, i) for s, (v, i) in graph.symbol_sources.items())
    assert [(s, i) for s, _, i in sources] == [(f"Reshape_0_resolved_shape_{i}", i) for i in range(3)]
    assert str(graph.outputs[0].type) == "tensor<{Reshape_0_resolved_shape_0}x{Reshape_0_resolved_shape_1}x" \
                                         "{Reshape_0_resolved_shape_2}xf32>"
    x = _f32(2, 6)
    _check(m, [x, _ints(3, 2, 2)], [x, _ints(0, -1, 2)], [x, _ints(-1, 1, 4)], [x, _ints(2, 0, 1)])
    allow_zero = _model([helper.make_node("Reshape", ["x", "shape"], ["y"], allowzero=1)],
                        {"x": (F32, [0, 3]), "shape": (I64, [2])}, ["y"])
    _check(allow_zero, [np.zeros((0, 3), np.float32), _ints(3, 0)])  # no -1: the zero product divides nothing


def test_slice_with_starts_and_ends_given_at_run_time() -> None:
    m = _model([helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"])],
               {"x": (F32, [4, 6]), "starts": (I64, [2]), "ends": (I64, [2])}, ["y"], {"axes": _ints(1, 0)})
    graph = import_onnx(m)  # the symbols are read from the clamped bounds: never negative
    assert {v.name for v, _ in graph.symbol_sources.values()} == {"Slice_0_starts", "Slice_0_ends"}
    x = _f32(4, 6)
    _check(m, [x, _ints(1, 0), _ints(5, 2)], [x, _ints(-2, -9), _ints(2**62, -1)], [x, _ints(4, 3), _ints(2, 9)])


def test_range_with_a_run_time_delta_of_either_sign() -> None:
    m = _model([helper.make_node("Range", ["start", "limit", "delta"], ["y"])],
               {"start": (TensorProto.INT32, []), "limit": (TensorProto.INT32, []), "delta": (TensorProto.INT32, [])},
               ["y"])
    i32 = lambda v: np.array(v, np.int32)  # noqa: E731
    _check(m, [i32(10), i32(6), i32(-3)], [i32(1), i32(8), i32(3)], [i32(5), i32(5), i32(-1)], [i32(0), i32(4), i32(-2)])


def test_reshape_of_a_symbolic_input_to_a_run_time_shape_is_refused() -> None:
    m = _model([helper.make_node("Reshape", ["x", "shape"], ["y"])], {"x": (F32, ["n", 4]), "shape": (I64, [2])}, ["y"])
    with pytest.raises(CompileError, match=r"a Reshape of tensor<\{n\}x4xf32> \(symbolic dims\) to a shape given at "
                                           r"run time \('shape'\) is not supported"):
        import_onnx(m)


def test_expand_range_and_topk_with_run_time_values() -> None:
    nodes = [helper.make_node("Range", ["start", "limit", "step"], ["r"]),
             helper.make_node("Expand", ["x", "shape"], ["e"]),
             helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=-1)]
    m = _model(nodes, {"x": (F32, [1, 5]), "start": (I64, []), "limit": (I64, []), "shape": (I64, [2]),
                       "k": (I64, [1])}, ["r", "e", "v"], {"step": np.array(3, np.int64)})
    graph = import_onnx(m)
    assert {v.name for v, _ in graph.symbol_sources.values()} == {"Range_0_count", "shape", "k"}
    x = _f32(1, 5)
    _check(m, [x, np.array(2, np.int64), np.array(11, np.int64), _ints(3, 1), _ints(2)],
           [x, np.array(0, np.int64), np.array(-4, np.int64), _ints(1, 5), _ints(5)])


# --- what is refused -------------------------------------------------------------------------------

def test_split_of_a_symbolic_axis_and_by_sizes_given_at_run_time() -> None:
    halves = _model([helper.make_node("Split", ["x"], ["a", "b"], axis=1)], {"x": (F32, [2, "n"])}, ["a", "b"])
    widths = [v.type.shape[1] for v in import_onnx(halves).outputs]
    assert [[symbols.evaluate(w, {"n": n}) for n in (0, 2, 6)] for w in widths] == [[0, 1, 3]] * 2
    _check(halves, [_f32(2, 4)], [_f32(2, 10)])
    sized = _model([helper.make_node("Split", ["x", "sizes"], ["a", "b"], axis=0)],
                   {"x": (F32, [5, 3]), "sizes": (I64, [2])}, ["a", "b"])
    x = _f32(5, 3)
    _check(sized, [x, _ints(1, 4)], [x, _ints(5, 0)])


def test_nonzero_of_a_constant_folds_and_of_a_run_time_tensor_reads_its_count() -> None:
    folded = _model([helper.make_node("NonZero", ["c"], ["nz"]), helper.make_node("Cast", ["nz"], ["f"], to=F32),
                     helper.make_node("Add", ["x", "f"], ["y"])], {"x": (F32, [2, 3])}, ["y"],
                    {"c": np.array([[1, 0, 2], [0, 3, 0]], np.float32)})
    _check(folded, [_f32(2, 3)])
    runtime = _model([helper.make_node("NonZero", ["x"], ["y"])], {"x": (F32, [2, 3])}, ["y"])
    graph = import_onnx(runtime)  # a count kernel first, its result read as the symbol (frontends/onnx/indexing.py)
    (symbol, (source, index)), = graph.symbol_sources.items()
    assert (source.name, index) == ("NonZero_0_count", 0)
    assert str(graph.outputs[0].type) == f"tensor<2x{{{symbol}}}xi64>"
    _check(runtime, [np.array([[1, 0, 2], [0, 3, 0]], np.float32)], [np.zeros((2, 3), np.float32)])
