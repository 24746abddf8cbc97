"""Sequences and optionals end to end (docs/sequences.md): small hand-built ONNX models compiled once
and run in the C runtime at several run-time lengths, compared with onnxruntime; malformed packed
inputs must fail with a message, never read out of bounds."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h

import iree_py
from iree_py.errors import IreePyError
from iree_py.module.sequence_layout import pack

F32_SEQ = h.make_sequence_type_proto(h.make_tensor_type_proto(T.FLOAT, ["n"]))
_CACHE: dict[str, tuple[object, bytes]] = {}


def _model(graph, opset: int = 17) -> bytes:
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)]).SerializeToString()


def _i64(name: str, value: int | None = None):
    return h.make_tensor(name, T.INT64, [], [value]) if value is not None else h.make_tensor_value_info(name, T.INT64, [])


def edit_model() -> bytes:
    """seq in, position in: SequenceAt(+1), SequenceErase, SequenceInsert of a tensor, SequenceLength."""
    nodes = [
        h.make_node("SequenceAt", ["s", "p"], ["at"]),
        h.make_node("Constant", [], ["one"], value=h.make_tensor("one", T.FLOAT, [], [1.0])),
        h.make_node("Add", ["at", "one"], ["at1"]),
        h.make_node("SequenceErase", ["s", "p"], ["erased"]),
        h.make_node("SequenceInsert", ["s", "t", "p"], ["inserted"]),
        h.make_node("SequenceLength", ["inserted"], ["length"]),
    ]
    g = h.make_graph(nodes, "edit",
                     [h.make_value_info("s", F32_SEQ), _i64("p"), h.make_tensor_value_info("t", T.FLOAT, ["m"])],
                     [h.make_tensor_value_info("at1", T.FLOAT, None), h.make_value_info("erased", F32_SEQ),
                      h.make_value_info("inserted", F32_SEQ), _i64("length")])
    return _model(g)


def loop_model() -> bytes:
    """A Loop with a run-time trip count growing a sequence (x[:i+1] * 2 each time) from an empty
    one, then the last element, the length, and the whole sequence."""
    body = h.make_graph([
        h.make_node("Identity", ["c"], ["c_out"]),
        h.make_node("Constant", [], ["zero"], value=h.make_tensor("zero", T.INT64, [1], [0])),
        h.make_node("Constant", [], ["one"], value=h.make_tensor("one", T.INT64, [], [1])),
        h.make_node("Add", ["i", "one"], ["end0"]),
        h.make_node("Unsqueeze", ["end0", "zero"], ["end"]),
        h.make_node("Slice", ["x", "zero", "end"], ["part"]),
        h.make_node("Add", ["part", "part"], ["twice"]),
        h.make_node("SequenceInsert", ["s_in", "twice"], ["s_out"]),
    ], "body", [_i64("i"), h.make_tensor_value_info("c", T.BOOL, []), h.make_value_info("s_in", F32_SEQ)],
        [h.make_tensor_value_info("c_out", T.BOOL, []), h.make_value_info("s_out", F32_SEQ)])
    nodes = [
        h.make_node("SequenceEmpty", [], ["empty"], dtype=T.FLOAT),
        h.make_node("Constant", [], ["yes"], value=h.make_tensor("yes", T.BOOL, [], [True])),
        h.make_node("Loop", ["trips", "yes", "empty"], ["seq"], body=body),
        h.make_node("SequenceLength", ["seq"], ["length"]),
    ]
    g = h.make_graph(nodes, "grow", [h.make_tensor_value_info("x", T.FLOAT, [8]), _i64("trips")],
                     [h.make_value_info("seq", F32_SEQ), _i64("length")])
    return _model(g)


def optional_model() -> bytes:
    """optional<seq> in: has-element flag, and its value or [x] when absent (If on the flag)."""
    opt = h.make_optional_type_proto(F32_SEQ)
    then_g = h.make_graph([h.make_node("OptionalGetElement", ["o"], ["got"])], "then", [],
                          [h.make_value_info("got", F32_SEQ)])
    else_g = h.make_graph([h.make_node("SequenceConstruct", ["x"], ["made"])], "else", [],
                          [h.make_value_info("made", F32_SEQ)])
    nodes = [h.make_node("OptionalHasElement", ["o"], ["has"]),
             h.make_node("If", ["has"], ["value"], then_branch=then_g, else_branch=else_g)]
    g = h.make_graph(nodes, "opt", [h.make_value_info("o", opt), h.make_tensor_value_info("x", T.FLOAT, [3])],
                     [h.make_tensor_value_info("has", T.BOOL, []), h.make_value_info("value", F32_SEQ)])
    return _model(g, 18)


def _compiled(name: str, build) -> tuple[object, bytes]:
    if name not in _CACHE:
        data = build()
        _CACHE[name] = (iree_py.load(iree_py.compile(data)), data)
    return _CACHE[name]


def _ort(data: bytes, feeds: dict) -> list:
    return ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)


def _same(got, want) -> None:
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    if want is None:
        assert got is None
        return
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)


def _seq(rng: np.random.Generator, lengths: list[int]) -> list[np.ndarray]:
    return [rng.standard_normal(n).astype(np.float32) for n in lengths]


@pytest.mark.parametrize("lengths,position", [([3], 0), ([2, 0, 5], -1), ([1, 4, 2, 3], 2), ([0, 0], 1)])
def test_edit_ops_match_onnxruntime(lengths: list[int], position: int) -> None:
    module, data = _compiled("edit", edit_model)
    rng = np.random.default_rng(len(lengths))
    s, t = _seq(rng, lengths), rng.standard_normal(len(lengths) + 1).astype(np.float32)
    p = np.array(position, np.int64)
    got = module.main.call(s, p, t)
    want = _ort(data, {"s": s, "p": p, "t": t})
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w)


@pytest.mark.parametrize("trips", [0, 1, 3, 8])
def test_loop_grows_a_sequence(trips: int) -> None:
    module, data = _compiled("loop", loop_model)
    x = np.arange(8, dtype=np.float32)
    got = module.main.call(x, np.array(trips, np.int64))
    want = _ort(data, {"x": x, "trips": np.array(trips, np.int64)})
    _same(got[0], want[0])
    _same(got[1], want[1])
    assert len(got[0]) == trips


@pytest.mark.parametrize("value", [None, [], [np.ones(2, np.float32)], [np.ones(1, np.float32), np.zeros(4, np.float32)]])
def test_optional_input_present_or_absent(value) -> None:
    module, data = _compiled("optional", optional_model)
    x = np.array([1, 2, 3], np.float32)
    has, seq = module.main.call(value, x)
    assert bool(has) == (value is not None)
    _same(seq, [x] if value is None else value)


def test_out_of_range_position_is_a_runtime_error() -> None:
    module, _ = _compiled("edit", edit_model)
    with pytest.raises(IreePyError, match="position is outside the sequence"):
        module.main.call([np.ones(2, np.float32)], np.array(3, np.int64), np.ones(1, np.float32))


def _raw_call(module, buffer: np.ndarray):
    fn = module.main.signature
    p, t = np.array(0, np.int64), np.ones(1, np.float32)
    return module.device.call(fn, [buffer, p, t])


def _good() -> np.ndarray:
    module, _ = _compiled("edit", edit_model)
    return pack(module.main.signature.inputs[0], [np.ones(2, np.float32), np.ones(3, np.float32)], "s")


@pytest.mark.parametrize("corrupt,message", [
    (lambda w, b: b[:5], "shorter than its 8-byte count"),
    (lambda w, b: (w.__setitem__(0, -3), b)[1], "count is negative"),
    (lambda w, b: (w.__setitem__(0, 1 << 40), b)[1], "records do not fit"),
    (lambda w, b: (w.__setitem__(1, 7), b)[1], "not packed in order"),
    (lambda w, b: (w.__setitem__(3, 2), b)[1], "not of rank 1"),
    (lambda w, b: (w.__setitem__(4, 3), b)[1], "byte count does not match"),
    (lambda w, b: (w.__setitem__(4, -1), b)[1], "negative or above"),
    (lambda w, b: b[:-4], "runs past the buffer"),
    (lambda w, b: np.concatenate([b, np.zeros(8, np.uint8)]), "bytes left after the last element"),
])
def test_malformed_packed_input_is_refused(corrupt, message: str) -> None:
    module, _ = _compiled("edit", edit_model)
    buffer = _good().copy()
    bad = corrupt(buffer[:8 * 23].view(np.int64), buffer)
    with pytest.raises(IreePyError, match=message):
        _raw_call(module, np.ascontiguousarray(bad))


def test_python_api_checks_elements() -> None:
    module, _ = _compiled("edit", edit_model)
    with pytest.raises(IreePyError, match="dtype float64"):
        module.main.call([np.ones(2)], np.array(0, np.int64), np.ones(1, np.float32))
    with pytest.raises(IreePyError, match="rank 2"):
        module.main.call([np.ones((1, 2), np.float32)], np.array(0, np.int64), np.ones(1, np.float32))
    with pytest.raises(IreePyError, match="give a list"):
        module.main.call(np.ones(2, np.float32), np.array(0, np.int64), np.ones(1, np.float32))


def split_model(split_shape: list[int] | None) -> bytes:
    inputs = [h.make_tensor_value_info("x", T.FLOAT, [3, 7])]
    names = ["x"]
    if split_shape is not None:
        inputs.append(h.make_tensor_value_info("split", T.INT64, split_shape))
        names.append("split")
    nodes = [h.make_node("SplitToSequence", names, ["s"], axis=1),
             h.make_node("SequenceLength", ["s"], ["n"])]
    seq = h.make_sequence_type_proto(h.make_tensor_type_proto(T.FLOAT, [3, "k"]))
    g = h.make_graph(nodes, "split", inputs, [h.make_value_info("s", seq), _i64("n")])
    return _model(g)


@pytest.mark.parametrize("split", [1, 2, 3, 7, 9, [7], [0, 3, 4], [2, 2, 2, 1]])
def test_split_to_sequence_with_runtime_sizes(split) -> None:
    shape = [] if isinstance(split, int) else [len(split)]
    module, data = _compiled(f"split{shape}", lambda: split_model(shape))
    x = np.arange(21, dtype=np.float32).reshape(3, 7)
    s = np.array(split, np.int64)
    got = module.main.call(x, s)
    want = _ort(data, {"x": x, "split": s})
    _same(got[0], want[0])
    _same(got[1], want[1])


def test_split_sizes_must_sum_to_the_axis() -> None:
    module, _ = _compiled("split[2]", lambda: split_model([2]))
    with pytest.raises(IreePyError, match="split sizes do not sum to 7"):
        module.main.call(np.zeros((3, 7), np.float32), np.array([3, 3], np.int64))
