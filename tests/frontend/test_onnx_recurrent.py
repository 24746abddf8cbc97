"""ONNX LSTM, GRU and RNN (opsets 7, 14, newest) against onnxruntime: every direction, with and
without bias, initial states (run-time inputs), sequence_lens (constant and run-time), peepholes,
layout 1 (against onnxruntime's result for layout 0: it has no layout 1), clip, input_forget,
linear_before_reset, non-default activations with alpha/beta, and subsets of the outputs. Checked
through the numpy reference (1e-5 of the largest expected magnitude); most cases also run compiled
for the host by the C runtime."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto

import iree_py
from onnx_models import NEWEST, RTOL, random_inputs
from resize_pad_models import check_compiled, one_node

from iree_py.errors import CompileError
from iree_py.frontends.onnx import import_onnx
from iree_py.ir.reference import evaluate

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
OUTPUTS = {"LSTM": 3, "GRU": 2, "RNN": 2}
SEQ, BATCH, SIZE, HIDDEN = 4, 3, 5, 6
RNG = np.random.default_rng(11)


def _w(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * 0.5).astype(np.float32)


def recurrent(op: str, direction: str = "forward", opset: int = NEWEST, layout: int = 0, bias: bool = True,
              lens: list[int] | None = None, initial: bool = False, peepholes: bool = False,
              used: tuple[int, ...] | None = None, runtime_lens: bool = False, **attrs) -> onnx.ModelProto:
    """One recurrent node: X (and initial_h/initial_c, run-time sequence_lens) as graph inputs,
    the weights as constants; `used`: which outputs the graph returns (default all)."""
    dirs, rows = 2 if direction == "bidirectional" else 1, GATES[op] * HIDDEN
    inputs = {"X": (BATCH, SEQ, SIZE) if layout else (SEQ, BATCH, SIZE)}
    constants = {"W": _w(dirs, rows, SIZE), "R": _w(dirs, rows, HIDDEN)}
    names = ["X", "W", "R", ""]
    if bias:
        constants["B"] = _w(dirs, 2 * rows)
        names[3] = "B"
    names.append("")
    if runtime_lens:
        inputs["sequence_lens"] = (BATCH,)
        names[4] = "sequence_lens"
    elif lens is not None:
        constants["sequence_lens"] = np.array(lens, np.int32)
        names[4] = "sequence_lens"
    state = (BATCH, dirs, HIDDEN) if layout else (dirs, BATCH, HIDDEN)
    names.append("initial_h" if initial else "")
    if initial:
        inputs["initial_h"] = state
    if op == "LSTM":
        names.append("initial_c" if initial else "")
        if initial:
            inputs["initial_c"] = state
        names.append("P" if peepholes else "")
        if peepholes:
            constants["P"] = _w(dirs, 3 * HIDDEN)
    while names[-1] == "":
        names.pop()
    if opset >= 14:
        attrs["layout"] = layout
    m = one_node(op, inputs, opset, constants, input_names=names, outputs=OUTPUTS[op], hidden_size=HIDDEN,
                 direction=direction, **attrs)
    if runtime_lens:
        next(v for v in m.graph.input if v.name == "sequence_lens").type.tensor_type.elem_type = TensorProto.INT32
    keep = set(range(OUTPUTS[op]) if used is None else used)
    for i, name in enumerate(m.graph.node[0].output):
        if i not in keep:
            m.graph.node[0].output[i] = ""
    kept = [o for i, o in enumerate(m.graph.output) if i in keep]
    del m.graph.output[:]
    m.graph.output.extend(kept)
    return m


def _feeds(m: onnx.ModelProto, lens: list[int] | None = None) -> dict[str, np.ndarray]:
    feeds = {k: v for k, v in random_inputs(m).items() if k != "sequence_lens"}
    if lens is not None:
        feeds["sequence_lens"] = np.array(lens, np.int32)
    return feeds


OPS = sorted(GATES)
DIRECTIONS = ["forward", "reverse", "bidirectional"]


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("op", OPS)
def test_defaults_compiled(op: str, direction: str) -> None:
    check_compiled(recurrent(op, direction))


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("op", OPS)
def test_initial_states_and_sequence_lens(op: str, direction: str) -> None:
    check_compiled(recurrent(op, direction, lens=[4, 1, 3], initial=True, peepholes=op == "LSTM"),
                   compile=direction == "bidirectional")


@pytest.mark.parametrize("op", OPS)
def test_run_time_sequence_lens_compiled(op: str) -> None:
    m = recurrent(op, "bidirectional", runtime_lens=True, initial=True)
    check_compiled(m, _feeds(m, [2, 4, 1]))


def _layout0_twin(m: onnx.ModelProto) -> onnx.ModelProto:
    """The same model with layout 0: X and the initial states given sequence / direction first."""
    twin = onnx.ModelProto()
    twin.CopyFrom(m)
    next(a for a in twin.graph.node[0].attribute if a.name == "layout").i = 0
    for v in twin.graph.input:
        dims = v.type.tensor_type.shape.dim
        if len(dims) == 3:
            dims[0].dim_value, dims[1].dim_value = dims[1].dim_value, dims[0].dim_value
    return twin


def _check_batch_first(m: onnx.ModelProto) -> None:
    """onnxruntime has no layout 1: compare with its result for the layout-0 twin, transposed."""
    feeds = random_inputs(m)
    twin_feeds = {k: v.transpose(1, 0, 2) if v.ndim == 3 else v for k, v in feeds.items()}
    options = ort.SessionOptions()
    options.log_severity_level = 3
    expected = ort.InferenceSession(_layout0_twin(m).SerializeToString(), options,
                                    providers=["CPUExecutionProvider"]).run(None, twin_feeds)
    expected = [e.transpose(2, 0, 1, 3) if e.ndim == 4 else e.transpose(1, 0, 2) for e in expected]
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device="local")
    compiled = module.main.call(*[feeds[vi.name] for vi in m.graph.input])
    for what, got in (("reference", evaluate(import_onnx(m), feeds)), ("compiled", compiled)):
        for g, e in zip(got, expected, strict=True):
            assert g.shape == e.shape, f"{what}: shape {g.shape} != {e.shape}"
            err = float(np.abs(g.astype(np.float64) - e).max()) / float(np.abs(e).max())
            assert err <= RTOL, f"{what}: max error {err:.3g} x max|expected| > {RTOL}"


@pytest.mark.parametrize("opset", [14, NEWEST])
@pytest.mark.parametrize("op", OPS)
def test_layout_batch_first(op: str, opset: int) -> None:
    _check_batch_first(recurrent(op, "bidirectional", opset, layout=1, lens=[3, 4, 2], initial=True))


@pytest.mark.parametrize("op", OPS)
def test_opset7_no_bias(op: str) -> None:
    check_compiled(recurrent(op, "reverse", 7, bias=False), compile=False)


ACTIVATIONS = [  # (op, activations, alphas, betas)
    ("LSTM", ["HardSigmoid", "ScaledTanh", "Affine"], [0.3, 0.8, 0.5], [0.4, 1.2, 0.1]),
    ("LSTM", ["Sigmoid", "Softsign", "Softplus"], [], []),
    ("GRU", ["Sigmoid", "LeakyRelu"], [0.2], []),
    ("GRU", ["HardSigmoid", "Elu"], [], []),  # defaults: alpha 0.2 beta 0.5, alpha 1.0
    ("RNN", ["Relu"], [], []),
    ("RNN", ["ThresholdedRelu"], [0.1], []),
]


@pytest.mark.parametrize("case", range(len(ACTIVATIONS)))
def test_activations(case: int) -> None:
    op, names, alphas, betas = ACTIVATIONS[case]
    attrs = {"activation_alpha": alphas} if alphas else {}
    if betas:
        attrs["activation_beta"] = betas
    check_compiled(recurrent(op, "forward", activations=names, **attrs), compile=case in (0, 3))


def test_bidirectional_activations_differ_per_direction() -> None:
    check_compiled(recurrent("GRU", "bidirectional", activations=["Sigmoid", "Tanh", "HardSigmoid", "Softsign"],
                             activation_alpha=[0.25], activation_beta=[0.45]))


@pytest.mark.parametrize("op", OPS)
def test_clip(op: str) -> None:
    check_compiled(recurrent(op, "bidirectional", clip=0.7), compile=op == "LSTM")


def test_lstm_input_forget_and_peepholes() -> None:
    check_compiled(recurrent("LSTM", "forward", peepholes=True, initial=True, input_forget=1))


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_gru_linear_before_reset(direction: str) -> None:
    check_compiled(recurrent("GRU", direction, lens=[2, 4, 3], initial=True, linear_before_reset=1),
                   compile=direction == "bidirectional")


@pytest.mark.parametrize("used", [(1,), (2,), (0, 2)])
def test_lstm_output_subsets(used: tuple[int, ...]) -> None:
    check_compiled(recurrent("LSTM", "reverse", lens=[1, 3, 4], initial=True, used=used), compile=used == (0, 2))


def test_unknown_activation_is_refused() -> None:
    with pytest.raises(CompileError, match="activations.*Swish"):
        import_onnx(recurrent("RNN", activations=["Swish"]))


def test_wrong_hidden_size_is_refused() -> None:
    m = recurrent("GRU")
    m.graph.node[0].attribute[[a.name for a in m.graph.node[0].attribute].index("hidden_size")].i = 5
    with pytest.raises(CompileError, match="hidden_size"):
        import_onnx(m)
