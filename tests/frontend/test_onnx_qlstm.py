"""com.microsoft DynamicQuantizeLSTM (frontends/onnx/recurrent.py) against onnxruntime, which implements
the contrib op: bit for bit, on the host and (two cases) arm64 under qemu, and through the IR
reference. Forward, reverse and bidirectional; int8 and uint8 weights, per-direction and per-column
scales; with and without B, initial states, peepholes, sequence_lens (constant or an input) and a
named Y; clip, input_forget, other activations; a symbolic sequence length. Then the refusals.

The weights stay within [-64, 64] (int8) so that no x86 onnxruntime kernel can saturate a pair of
u8 x s8 products in 16 bits (its AVX2 path without VNNI would; decisions.md, "Integer accumulation"):
onnxruntime's sums are then exact everywhere, and so its results are iree-py's."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import iree_py
from iree_py.errors import CompileError
from iree_py.frontends.onnx import import_onnx
from iree_py.ir.reference import evaluate

RNG = np.random.default_rng(11)
SIZE, HIDDEN, BATCH = 6, 5, 3


@dataclass
class Layer:
    direction: str = "forward"
    weights: type = np.int8
    per_column: bool = False
    bias: bool = True
    initial: bool = False          # initial_h and initial_c as inputs
    peepholes: bool = False
    lens: list[int] | None = None
    lens_input: bool = False
    outputs: tuple[str, ...] = ("Y", "Y_h", "Y_c")
    name_y: bool = True            # the node names its Y output (even when the graph does not return it)
    symbolic_seq: bool = False
    attrs: dict = field(default_factory=dict)

    @property
    def dirs(self) -> int:
        return 2 if self.direction == "bidirectional" else 1


def _weights(layer: Layer, shape: tuple[int, ...]) -> np.ndarray:
    if layer.weights == np.int8:
        return RNG.integers(-64, 65, shape).astype(np.int8)
    return RNG.integers(0, 256, shape).astype(np.uint8)


def _zero_point(layer: Layer, shape: tuple[int, ...]) -> np.ndarray:
    if layer.weights == np.int8:
        return np.zeros(shape, np.int8)
    if layer.per_column:  # onnxruntime wants one value in the whole tensor (both directions)
        return np.full(shape, RNG.integers(96, 160), np.uint8)
    return RNG.integers(96, 160, shape).astype(np.uint8)


def model(layer: Layer, seq: int = 7) -> onnx.ModelProto:
    dirs, cols = layer.dirs, 4 * HIDDEN
    scale_shape = (dirs, cols) if layer.per_column else (dirs,)
    consts = {"W": _weights(layer, (dirs, SIZE, cols)), "R": _weights(layer, (dirs, HIDDEN, cols)),
              "W_scale": RNG.uniform(0.004, 0.02, scale_shape).astype(np.float32),
              "W_zero_point": _zero_point(layer, scale_shape),
              "R_scale": RNG.uniform(0.004, 0.03, scale_shape).astype(np.float32),
              "R_zero_point": _zero_point(layer, scale_shape)}
    names = ["X", "W", "R", "", "", "", "", "", "W_scale", "W_zero_point", "R_scale", "R_zero_point"]
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["seq" if layer.symbolic_seq else seq, BATCH, SIZE])]
    if layer.bias:
        consts["B"] = (RNG.standard_normal((dirs, 8 * HIDDEN)) * 0.4).astype(np.float32)
        names[3] = "B"
    if layer.lens is not None:
        names[4] = "lens"
        if layer.lens_input:
            inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [BATCH]))
        else:
            consts["lens"] = np.array(layer.lens, np.int32)
    if layer.initial:
        names[5], names[6] = "h0", "c0"
        inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, [dirs, BATCH, HIDDEN]) for n in ("h0", "c0")]
    if layer.peepholes:
        consts["P"] = (RNG.standard_normal((dirs, 3 * HIDDEN)) * 0.4).astype(np.float32)
        names[7] = "P"
    node = helper.make_node("DynamicQuantizeLSTM", names, ["Y" if layer.name_y else "", "Y_h", "Y_c"], name="qlstm",
                            domain="com.microsoft", **{"direction": layer.direction, "hidden_size": HIDDEN, **layer.attrs})
    graph = helper.make_graph([node], "qlstm", inputs,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in layer.outputs],
                              [numpy_helper.from_array(a, n) for n, a in consts.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])


def feeds(layer: Layer, seq: int = 7) -> dict[str, np.ndarray]:
    values = {"X": (RNG.standard_normal((seq, BATCH, SIZE)) * 1.5).astype(np.float32)}
    if layer.lens is not None and layer.lens_input:
        values["lens"] = np.minimum(np.array(layer.lens, np.int32), seq)  # onnxruntime refuses a longer one
    if layer.initial:
        values["h0"] = (RNG.standard_normal((layer.dirs, BATCH, HIDDEN)) * 0.5).astype(np.float32)
        values["c0"] = RNG.standard_normal((layer.dirs, BATCH, HIDDEN)).astype(np.float32)
    return values


def onnxruntime(m: onnx.ModelProto, values: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # batch-parallel onnxruntime would quantize h per chunk of entries
    session = ort.InferenceSession(m.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, values)


def check(layer: Layer, targets: tuple[str, ...] = ("reference", "host"), seqs: tuple[int, ...] = (7,)) -> None:
    m = model(layer, seqs[0])
    modules = {t: iree_py.load(iree_py.compile(m.SerializeToString(), target=t), device="qemu" if t == "arm64" else "local")
               for t in targets if t != "reference"}
    for seq in seqs:
        values = feeds(layer, seq)
        expected = onnxruntime(m, values)
        for target in targets:
            if target == "reference":
                got = [np.asarray(v) for v in evaluate(import_onnx(m), values)]
            else:
                got = [np.asarray(v) for v in modules[target].main.call(*values.values())]
            for name, a, e in zip(layer.outputs, got, expected):
                assert a.shape == e.shape, f"{target} {name}: shape {a.shape}, onnxruntime {e.shape}"
                wrong = np.argwhere(a != e)
                assert wrong.size == 0, (f"{target} {name} (seq {seq}): {len(wrong)} of {a.size} differ, first at "
                                         f"{tuple(wrong[0])}: {a[tuple(wrong[0])]!r} != {e[tuple(wrong[0])]!r}")


CASES = {
    "forward": Layer(),
    "reverse_uint8_per_column_initial_states": Layer("reverse", np.uint8, per_column=True, initial=True),
    "bidirectional_per_column_peepholes_lens": Layer("bidirectional", per_column=True, peepholes=True, lens=[7, 3, 5]),
    "bidirectional_uint8_lens_input_initial_states": Layer("bidirectional", np.uint8, initial=True, lens=[2, 6, 4],
                                                           lens_input=True),
    "no_bias_y_only": Layer(bias=False, outputs=("Y",)),
    "y_unnamed_finished_entries_keep_their_state": Layer(lens=[7, 2, 4], name_y=False, outputs=("Y_h", "Y_c")),
    "y_named_but_unused_finished_entries_count_as_zero": Layer("reverse", lens=[3, 7, 5], outputs=("Y_h", "Y_c")),
    "clip_input_forget": Layer("bidirectional", attrs={"clip": 0.7, "input_forget": 1}),
    "activations": Layer(attrs={"activations": ["HardSigmoid", "Relu", "Tanh"], "activation_alpha": [0.25],
                                "activation_beta": [0.45]}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_onnxruntime(case: str) -> None:
    check(CASES[case])


def test_symbolic_sequence_length() -> None:
    check(Layer("bidirectional", lens=[6, 2, 4], lens_input=True, symbolic_seq=True), seqs=(7, 6, 3))


def test_arm64_under_qemu() -> None:
    check(Layer("bidirectional", np.uint8, per_column=True, peepholes=True, lens=[5, 7, 1], lens_input=True,
                symbolic_seq=True), targets=("arm64",), seqs=(7, 4))


def test_a_finished_entry_without_y_counts_as_its_last_state_in_the_range() -> None:
    """Without a named Y, onnxruntime reads the previous h back from its Y_h buffer, where a finished
    entry keeps its last h; an entry of length 0 never writes its row there, so onnxruntime's range
    depends on what that buffer held. iree-py counts the entry's initial h."""
    layer = Layer(lens=[7, 0, 4], name_y=False, outputs=("Y_h",), initial=True)
    m = model(layer)
    values = feeds(layer)
    values["h0"][0, 1] = 30.0  # the idle entry's initial h dominates the range: it visibly counts
    got = iree_py.load(iree_py.compile(m.SerializeToString())).main.call(*values.values())[0]
    np.testing.assert_array_equal(got, np.asarray(evaluate(import_onnx(m), values)[0]))
    np.testing.assert_array_equal(got[0, 1], 0.0)  # length 0: Y_h is 0, as onnxruntime's
    values["h0"][0, 1] = 0.0
    assert not np.array_equal(iree_py.load(iree_py.compile(m.SerializeToString())).main.call(*values.values())[0][0, 0],
                              got[0, 0])


# ------------------------------------------------------------------------------ refusals

WHERE = "node 'qlstm' (op DynamicQuantizeLSTM, domain com.microsoft"


def _refused(m: onnx.ModelProto, why: str) -> None:
    with pytest.raises(CompileError) as e:
        import_onnx(m)
    assert WHERE in str(e.value) and why in str(e.value), str(e.value)


def test_refuses_an_attribute_the_op_does_not_have() -> None:
    _refused(model(Layer(attrs={"layout": 1})), "attribute layout=1 not supported")


@pytest.mark.parametrize("attrs,why", [({"direction": "sideways"}, "attribute direction='sideways'"),
                                       ({"activations": ["Sigmoid", "Gelu", "Tanh"]}, "'Gelu' is not one of"),
                                       ({"hidden_size": 4}, "attribute hidden_size=4"),
                                       ({"clip": -1.0}, "attribute clip=-1.0")])
def test_refuses_bad_attributes(attrs: dict, why: str) -> None:
    _refused(model(Layer(attrs=attrs)), why)


def test_refuses_a_symbolic_batch() -> None:
    m = model(Layer())
    m.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "batch"
    _refused(m, "needs a static batch")


def test_refuses_zero_points_computed_at_run_time() -> None:
    m = model(Layer(weights=np.uint8))
    zp = next(t for t in m.graph.initializer if t.name == "R_zero_point")
    m.graph.initializer.remove(zp)
    m.graph.input.append(helper.make_tensor_value_info("R_zero_point", TensorProto.UINT8, [1]))
    _refused(m, "R_zero_point 'R_zero_point' must be a constant")


def test_refuses_per_column_zero_points_that_differ() -> None:
    m = model(Layer(weights=np.uint8, per_column=True))
    zp = next(t for t in m.graph.initializer if t.name == "W_zero_point")
    values = numpy_helper.to_array(zp).copy()
    values[0, 3] += 1
    zp.CopyFrom(numpy_helper.from_array(values, "W_zero_point"))
    _refused(m, "W_zero_point differs between columns")


def test_refuses_int8_weights_with_a_zero_point() -> None:
    m = model(Layer())
    zp = next(t for t in m.graph.initializer if t.name == "R_zero_point")
    zp.CopyFrom(numpy_helper.from_array(np.array([3], np.int8), "R_zero_point"))
    _refused(m, "int8 weights need zero points 0")


def test_another_microsoft_op_is_not_supported() -> None:
    node = helper.make_node("DynamicQuantizeMatMul", ["a", "b", "s"], ["y"], domain="com.microsoft", name="dqm")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.ones((3, 2), np.int8), "b"),
                               numpy_helper.from_array(np.array(0.1, np.float32), "s")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(CompileError, match=r"node 'dqm' \(op DynamicQuantizeMatMul, domain com.microsoft, opset 17\): "
                                           r"op not supported"):
        import_onnx(m)
