"""ONNX sequence/optional import (docs/sequences.md): the IR types, the joins at If and Loop, the
module signature, and the compile-time refusals naming node, op, opset and reason."""
from __future__ import annotations

import pytest
from onnx import TensorProto as T
from onnx import helper as h

import iree_py
from iree_py.errors import CompileError
from iree_py.frontends.onnx import import_onnx
from iree_py.ir.types import DType, SequenceType
from iree_py.module.dump import dump_module
from iree_py.module.reader import read_module


def _model(nodes, inputs, outputs, opset: int = 17) -> bytes:
    g = h.make_graph(nodes, "g", inputs, outputs)
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)]).SerializeToString()


def _seq_type(elem: int = T.FLOAT, shape=None):
    return h.make_sequence_type_proto(h.make_tensor_type_proto(elem, shape))


def test_sequence_input_and_construct_types() -> None:
    data = _model([h.make_node("SequenceConstruct", ["a", "b"], ["s"]),
                   h.make_node("SequenceInsert", ["s", "c"], ["t"])],
                  [h.make_tensor_value_info("a", T.FLOAT, [2]), h.make_tensor_value_info("b", T.FLOAT, [3]),
                   h.make_tensor_value_info("c", T.FLOAT, [2, 2])],
                  [h.make_value_info("t", _seq_type())])
    g = import_onnx(data)
    construct, insert = g.nodes
    assert construct.outputs[0].type == SequenceType(DType.f32, 1)
    assert insert.outputs[0].type == SequenceType(DType.f32, None)  # ranks 1 and 2 mix


def test_signature_marks_sequences_and_optionals() -> None:
    opt = h.make_optional_type_proto(_seq_type(T.INT64, ["n"]))
    data = _model([h.make_node("OptionalGetElement", ["o"], ["s"])], [h.make_value_info("o", opt)],
                  [h.make_value_info("s", _seq_type(T.INT64, ["n"]))], opset=18)
    module_bytes = iree_py.compile(data)
    fn = read_module(module_bytes, payloads=False).functions[0]
    (sig_in,), (sig_out,) = fn.inputs, fn.outputs
    assert (sig_in.kind, sig_in.element_dtype, sig_in.element_rank, sig_in.shape) == ("optional_sequence", DType.i64, 1, (-1,))
    assert (sig_out.kind, sig_out.element_dtype, sig_out.element_rank) == ("sequence", DType.i64, 1)
    assert fn.i64_input_count == 1 and fn.i64_output_count == 1  # each buffer's length
    # dump and the Python API show the user's types, not the u8 buffers that carry them
    assert "func exported @main(%o: optional_sequence<i64, rank 1>) -> (%s: sequence<i64, rank 1>)" in \
        dump_module(read_module(module_bytes, payloads=False))
    assert repr(iree_py.load(module_bytes).main) == "main(o: optional_sequence<i64, rank 1>) -> (s: sequence<i64, rank 1>)"


def test_mixed_dtypes_are_refused_naming_the_node() -> None:
    data = _model([h.make_node("SequenceConstruct", ["a", "b"], ["s"], name="mix")],
                  [h.make_tensor_value_info("a", T.FLOAT, [2]), h.make_tensor_value_info("b", T.INT64, [2])],
                  [h.make_value_info("s", _seq_type())])
    with pytest.raises(CompileError, match=r"node 'mix' \(op SequenceConstruct, opset 17\).*different dtypes"):
        import_onnx(data)


def test_element_of_mixed_ranks_cannot_be_read() -> None:
    data = _model([h.make_node("SequenceConstruct", ["a", "b"], ["s"]),
                   h.make_node("SequenceAt", ["s", "p"], ["e"], name="read")],
                  [h.make_tensor_value_info("a", T.FLOAT, [2]), h.make_tensor_value_info("b", T.FLOAT, [2, 1]),
                   h.make_tensor_value_info("p", T.INT64, [])],
                  [h.make_tensor_value_info("e", T.FLOAT, None)])
    with pytest.raises(CompileError, match=r"node 'read' \(op SequenceAt, opset 17\).*differ in rank"):
        import_onnx(data)


def test_sequence_of_sequences_is_refused() -> None:
    nested = h.make_sequence_type_proto(_seq_type())
    data = _model([h.make_node("Identity", ["s"], ["t"])], [h.make_value_info("s", nested)],
                  [h.make_value_info("t", nested)])
    with pytest.raises(CompileError, match="a sequence of sequence_type is not supported"):
        import_onnx(data)


def test_loop_carried_sequence_widens_to_mixed_rank() -> None:
    body = h.make_graph([h.make_node("Identity", ["c"], ["c_out"]),
                         h.make_node("SequenceInsert", ["s_in", "x"], ["s_out"])], "body",
                        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
                         h.make_value_info("s_in", _seq_type())],
                        [h.make_tensor_value_info("c_out", T.BOOL, []), h.make_value_info("s_out", _seq_type())])
    data = _model([h.make_node("Loop", ["n", "", "s"], ["r"], body=body)],
                  [h.make_tensor_value_info("n", T.INT64, []), h.make_value_info("s", _seq_type(T.FLOAT, [])),
                   h.make_tensor_value_info("x", T.FLOAT, [3])],
                  [h.make_value_info("r", _seq_type())])
    g = import_onnx(data)
    loop = next(n for n in g.nodes if n.op == "Loop")
    assert loop.outputs[0].type == SequenceType(DType.f32, None)
    assert g.nodes[0].op == "SequenceAs"  # the rank-0 input retyped before the loop


def test_board_target_asks_for_a_pool_for_sequences() -> None:
    data = _model([h.make_node("SequenceConstruct", ["a", "b"], ["s"])],
                  [h.make_tensor_value_info("a", T.FLOAT, [2]), h.make_tensor_value_info("b", T.FLOAT, [3])],
                  [h.make_value_info("s", _seq_type())])
    with pytest.raises(CompileError, match=r"target cortex-m4: the model's sequences live in a run-time pool, and a "
                                           r"board needs its memory known: give --pool-bytes"):
        iree_py.compile(data, target="cortex-m4")
    assert iree_py.compile(data, target="cortex-m4", pool_bytes=4096)  # with a pool it compiles
