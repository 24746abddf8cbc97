"""String tensors (docs/strings.md): ONNX Equal on strings compiled, run in the C runtime and
compared with onnxruntime; a malformed packed buffer is an error, not a crash; other ops refuse
string operands naming the node, op and opset."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import iree_py
from iree_py.module.strings import pack_strings, unpack_strings
from iree_py.runtime.strings import PackedStrings


def string_model(nodes: list, inputs: dict[str, list[int]], outputs: dict[str, int],
                 initializers: dict[str, np.ndarray] | None = None, opset: int = 19) -> bytes:
    graph = helper.make_graph(
        nodes, "strings",
        [helper.make_tensor_value_info(n, TensorProto.STRING, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs.items()],
        [numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m.SerializeToString()


EQUAL = string_model([helper.make_node("Equal", ["x", "y"], ["z"], name="eq")], {"x": [2, 3], "y": [3]},
                     {"z": TensorProto.BOOL})


@pytest.fixture(scope="module")
def equal_module() -> iree_py.runtime.module.LoadedModule:
    return iree_py.load(iree_py.compile(EQUAL))


def onnxruntime_equal(x: np.ndarray, y: np.ndarray, model: bytes = EQUAL) -> np.ndarray:
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x.astype(object), "y": y.astype(object)})[0]


CASES = {
    "same and different": (["abc", "abd", "", "xyz", "x", "b"], ["abc", "", "xy"]),
    "different lengths": (["a", "ab", "abc", "abcd", "abc", ""], ["abc", "abc", "abc"]),
    "empty strings": (["", "", "", "", "a", ""], ["", "a", ""]),
    "non-ascii utf-8": (["héllo", "日本語", "😀", "hello", "日本", "ü"], ["héllo", "日本", "ü"]),
    # the kernel compares 32, then 8 bytes at a time, then byte by byte: a difference in each part
    "long, differing in each block size": (["q" * 100, "q" * 69 + "r" + "q" * 30, "q" * 99 + "r",
                                            "q" * 100, "q" * 33 + "r" + "q" * 66, "q" * 101],
                                           ["q" * 100, "q" * 100, "q" * 100]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_equal_matches_onnxruntime(equal_module, name):
    x, y = (np.array(v, dtype=object) for v in CASES[name])
    x = x.reshape(2, 3)
    got = equal_module.main(x, y)
    want = onnxruntime_equal(x, y)
    assert got.dtype == np.bool_ and got.shape == (2, 3)
    np.testing.assert_array_equal(got, want)


def test_equal_takes_str_bytes_and_object_arrays(equal_module):
    x = np.array([["a", "bb", "ccc"], ["ccc", "bb", "a"]])          # <U3
    y = np.array([b"a", b"bb", b"dd"])                                # |S2
    np.testing.assert_array_equal(equal_module.main(x, y), [[True, True, False], [False, True, False]])


def test_equal_broadcasts_both_ways():
    model = string_model([helper.make_node("Equal", ["x", "y"], ["z"])], {"x": [3, 1], "y": [1, 2]},
                         {"z": TensorProto.BOOL})
    x = np.array([["p"], ["q"], ["r"]], dtype=object)
    y = np.array([["q", "r"]], dtype=object)
    got = iree_py.load(iree_py.compile(model)).main(x, y)
    np.testing.assert_array_equal(got, onnxruntime_equal(x, y, model))


def test_equal_with_a_string_initializer_and_a_numeric_consumer():
    """A string constant (packed into the module) and a bool result that feeds Not."""
    model = string_model([helper.make_node("Equal", ["x", "c"], ["e"]), helper.make_node("Not", ["e"], ["z"])],
                         {"x": [4]}, {"z": TensorProto.BOOL}, {"c": np.array(["on", "off", "", "ön"], dtype=object)})
    x = np.array(["on", "on", "", "on"], dtype=object)
    got = iree_py.load(iree_py.compile(model)).main(x)
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(got, session.run(None, {"x": x})[0])
    np.testing.assert_array_equal(got, [False, True, False, True])


def test_pack_round_trips():
    values = ["", "a", "日本語", "x" * 300]
    buffer = pack_strings(np.array(values, dtype=object))
    assert buffer.nbytes == 5 * 8 + sum(len(v.encode()) for v in values)
    assert unpack_strings(buffer, 4) == [v.encode() for v in values]


def malformed(shape: tuple[int, ...], offsets: list[int], payload: bytes) -> PackedStrings:
    packed = PackedStrings(np.full(shape, "", dtype=object))
    packed.buffer = np.frombuffer(np.array(offsets, dtype="<i8").tobytes() + payload, dtype=np.uint8).copy()
    return packed


@pytest.mark.parametrize("offsets", [[0, 1, 2, 1000], [0, 3, 2, 4], [-8, 0, 1, 2], [0, 1, 2, 2 ** 62]],
                         ids=["past the end", "decreasing", "negative", "huge"])
def test_malformed_buffer_fails_the_call(equal_module, offsets):
    fn = equal_module.main.signature
    x = malformed((2, 3), [0] * 7, b"")
    y = malformed((3,), offsets, b"abcd")
    with pytest.raises(iree_py.IreeRuntimeError, match=r"^node 'eq' \(op StringEqual\): a packed string tensor's offsets do not fit its buffer "
                                                    r"\(kernel k\d+_\w+, code 2\)$"):
        equal_module.device.call(fn, [x, y])
    # the module still works afterwards
    assert equal_module.main(np.full((2, 3), "a", dtype=object), np.array(["a", "b", "a"], dtype=object)).tolist() \
        == [[True, False, True]] * 2


def test_buffer_shorter_than_its_offsets_is_refused(equal_module):
    fn = equal_module.main.signature
    x = malformed((2, 3), [0] * 7, b"")
    y = malformed((3,), [0, 0, 0], b"")  # 3 offsets: 3 elements need 4
    with pytest.raises(iree_py.IreeRuntimeError, match="string tensor of 24 bytes"):
        equal_module.device.call(fn, [x, y])


def test_numeric_array_for_a_string_input_is_refused(equal_module):
    with pytest.raises(iree_py.IreePyError, match="expected an array of str, bytes"):
        equal_module.main(np.zeros((2, 3), np.float32), np.array(["a", "b", "c"], dtype=object))


def test_other_ops_refuse_strings_naming_node_op_and_opset():
    model = string_model([helper.make_node("Concat", ["x", "x"], ["z"], name="cat_1", axis=0)], {"x": [2]},
                         {"z": TensorProto.STRING})
    with pytest.raises(iree_py.CompileError) as e:
        iree_py.compile(model)
    message = str(e.value)
    assert "cat_1" in message and "op Concat" in message and "opset 19" in message and "string tensor" in message


def test_cast_to_string_and_string_outputs_are_refused():
    cast = string_model([helper.make_node("Equal", ["x", "x"], ["e"]),
                         helper.make_node("Cast", ["e"], ["z"], name="to_str", to=TensorProto.STRING)],
                        {"x": [2]}, {"z": TensorProto.STRING})
    with pytest.raises(iree_py.CompileError, match="to_str.*Cast to a string tensor is not supported"):
        iree_py.compile(cast)
    identity = string_model([helper.make_node("Identity", ["x"], ["z"])], {"x": [2]}, {"z": TensorProto.STRING})
    with pytest.raises(iree_py.CompileError, match="graph output 'z' is a string tensor"):
        iree_py.compile(identity)


def test_string_constants_round_trip_through_the_text_form():
    from iree_py.frontends.onnx import import_onnx
    from iree_py.ir.text import parse_graph, print_graph
    c = np.array(["a, b", "x>y", "", "ü", '"q"'] * 4, dtype=object)  # separators and quotes survive
    model = string_model([helper.make_node("Equal", ["x", "c"], ["z"])], {"x": [20]}, {"z": TensorProto.BOOL},
                         {"c": c})
    text = print_graph(import_onnx(model))
    parsed = parse_graph(text)
    assert print_graph(parsed) == text
    [const] = [v.const for v in parsed.values() if v.is_const]
    assert const.tolist() == [s.encode() for s in c]


def test_arm64_under_qemu_packs_inputs_into_files_and_checks_offsets():
    """The qemu device writes the packed buffer as the runner's input file."""
    m = iree_py.load(iree_py.compile(EQUAL, target="arm64"), device="qemu")
    for name in ("non-ascii utf-8", "long, differing in each block size"):
        x, y = (np.array(v, dtype=object) for v in CASES[name])
        np.testing.assert_array_equal(m.main(x.reshape(2, 3), y), onnxruntime_equal(x.reshape(2, 3), y))
    with pytest.raises(iree_py.IreeRuntimeError, match=r"^node 'eq' \(op StringEqual\): a packed string tensor's offsets do not fit its buffer "
                                                    r"\(kernel k\d+_\w+, code 2\)$"):
        m.device.call(m.main.signature, [malformed((2, 3), [0] * 7, b""), malformed((3,), [0, 3, 2, 4], b"abcd")])
