"""Shape rules of the recurrent layers LSTM, GRU and RNN (ops.py's table takes RECURRENT_OP_DEFS).

The normalized form (docs/ir.md "Recurrent ops"): every input is present (the frontend fills in
zeros and full sequence lengths), X is [seq, batch, input] (ONNX layout 0), one activation name
with one alpha and one beta per gate function and direction, and `result` names the one output a
node computes ("Y", "Y_h" or "Y_c": an ONNX node with several used outputs is several nodes).

QLSTM is the recurrence of onnxruntime's DynamicQuantizeLSTM (docs/ir.md "QLSTM"): the input
projections come in computed (XW [dirs, seq, batch, 4H] f32, gates i o f c), R is quantized
([dirs, H, 4H] i8/u8, the contrib op's layout, zero points per direction as an attribute) and each
step quantizes the previous h of the whole batch to u8 with its own dynamic scale.
"""
from __future__ import annotations

from typing import Any

from iree_py.ir.dim_checks import same_dims
from iree_py.ir.opdef import OpDef
from iree_py.ir.types import Dim, DType, TensorType

DIRECTIONS = ("forward", "reverse", "bidirectional")
# The gate functions per direction and the number of weight blocks (gates) per op.
FUNCTIONS_PER_DIRECTION = {"LSTM": 3, "GRU": 2, "RNN": 1}
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
# Activation name (as ONNX spells it) -> (alpha default, beta default); None: the function takes no
# such value. activation_alpha/beta are consumed in order by the functions that take them
# (onnxruntime's rule); a missing one takes the default.
ACTIVATIONS: dict[str, tuple[float | None, float | None]] = {
    "Tanh": (None, None), "Relu": (None, None), "Sigmoid": (None, None), "Softsign": (None, None),
    "Softplus": (None, None), "HardSigmoid": (0.2, 0.5), "Affine": (0.0, 0.0), "LeakyRelu": (0.01, None),
    "ThresholdedRelu": (0.0, None), "ScaledTanh": (0.0, 0.0), "Elu": (1.0, None),
}
RECURRENT_ATTRS = ("activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size", "result")


def num_directions(direction: str) -> int:
    return 2 if direction == "bidirectional" else 1


def _expect(t: TensorType, shape: tuple[Dim, ...], dtype: DType, what: str, op: str) -> None:
    """`t` has `dtype` and `shape` (symbolic dims: equal, or a run-time check)."""
    try:
        if t.dtype != dtype:
            raise ValueError("dtype")
        same_dims(t.shape, shape, f"{op} {what}")
    except ValueError:
        raise ValueError(f"{op} {what} must be {TensorType(dtype, shape)}, got {t}") from None


def _rule(op: str):
    def rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
        x = inputs[0]
        if x.dtype != DType.f32 or x.rank != 3:
            raise ValueError(f"{op} X must be f32 [seq, batch, input], got {x}")
        seq, batch, size = x.shape
        if attrs["direction"] not in DIRECTIONS:
            raise ValueError(f"{op} direction {attrs['direction']!r} is not one of {list(DIRECTIONS)}")
        dirs, hidden, gates = num_directions(attrs["direction"]), int(attrs["hidden_size"]), GATES[op]
        functions = FUNCTIONS_PER_DIRECTION[op] * dirs
        names, alphas, betas = attrs["activations"], attrs["activation_alpha"], attrs["activation_beta"]
        if len(names) != functions or len(alphas) != functions or len(betas) != functions:
            raise ValueError(f"{op} wants {functions} activations, alphas and betas, got {names}, {alphas}, {betas}")
        unknown = [n for n in names if n not in ACTIVATIONS]
        if unknown:
            raise ValueError(f"{op} activations {unknown} are not among {sorted(ACTIVATIONS)}")
        if hidden <= 0 or not float(attrs["clip"]) > 0:
            raise ValueError(f"{op} hidden_size {hidden} and clip {attrs['clip']} must be positive")
        want = [("W", (dirs, gates * hidden, size), DType.f32), ("R", (dirs, gates * hidden, hidden), DType.f32),
                ("B", (dirs, 2 * gates * hidden), DType.f32), ("sequence_lens", (batch,), DType.i32),
                ("initial_h", (dirs, batch, hidden), DType.f32)]
        if op == "LSTM":
            want += [("initial_c", (dirs, batch, hidden), DType.f32), ("P", (dirs, 3 * hidden), DType.f32)]
        if len(inputs) != 1 + len(want):
            raise ValueError(f"{op} takes {1 + len(want)} inputs (X, {', '.join(w[0] for w in want)}), "
                             f"got {len(inputs)}")
        for t, (what, shape, dtype) in zip(inputs[1:], want):
            _expect(t, shape, dtype, what, op)
        results = {"Y": (seq, dirs, batch, hidden), "Y_h": (dirs, batch, hidden)}
        if op == "LSTM":
            results["Y_c"] = (dirs, batch, hidden)
            if attrs["input_forget"] not in (0, 1):
                raise ValueError(f"LSTM input_forget must be 0/1, got {attrs['input_forget']}")
        if op == "GRU" and attrs["linear_before_reset"] not in (0, 1):
            raise ValueError(f"GRU linear_before_reset must be 0/1, got {attrs['linear_before_reset']}")
        if attrs["result"] not in results:
            raise ValueError(f"{op} result {attrs['result']!r} is not one of {list(results)}")
        return [TensorType(DType.f32, results[attrs["result"]])]
    return rule


QLSTM_ATTRS = ("activation_alpha", "activation_beta", "activations", "clip", "direction", "finished_as_zero",
               "hidden_size", "input_forget", "r_zero_point", "result")


def _qlstm_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    xw = inputs[0]
    if xw.dtype != DType.f32 or xw.rank != 4:
        raise ValueError(f"QLSTM XW must be f32 [dirs, seq, batch, 4 * hidden], got {xw}")
    if attrs["direction"] not in DIRECTIONS:
        raise ValueError(f"QLSTM direction {attrs['direction']!r} is not one of {list(DIRECTIONS)}")
    dirs, hidden = num_directions(attrs["direction"]), int(attrs["hidden_size"])
    _, seq, batch, _ = xw.shape
    _expect(xw, (dirs, seq, batch, 4 * hidden), DType.f32, "XW", "QLSTM")
    r = inputs[1]
    if r.dtype not in (DType.i8, DType.u8):
        raise ValueError(f"QLSTM R must be i8 or u8, got {r}")
    names, alphas, betas = attrs["activations"], attrs["activation_alpha"], attrs["activation_beta"]
    if not len(names) == len(alphas) == len(betas) == 3 * dirs:
        raise ValueError(f"QLSTM wants {3 * dirs} activations, alphas and betas, got {names}, {alphas}, {betas}")
    unknown = [n for n in names if n not in ACTIVATIONS]
    if unknown:
        raise ValueError(f"QLSTM activations {unknown} are not among {sorted(ACTIVATIONS)}")
    if not float(attrs["clip"]) > 0:
        raise ValueError(f"QLSTM clip {attrs['clip']} must be positive")
    low, high = (-128, 127) if r.dtype == DType.i8 else (0, 255)
    zero_points = list(attrs["r_zero_point"])
    if len(zero_points) != dirs or not all(low <= int(z) <= high for z in zero_points):
        raise ValueError(f"QLSTM r_zero_point {zero_points} must be {dirs} values of {r.dtype.value}")
    for name in ("input_forget", "finished_as_zero"):
        if attrs[name] not in (0, 1):
            raise ValueError(f"QLSTM {name} must be 0/1, got {attrs[name]!r}")
    want = [("R", (dirs, hidden, 4 * hidden), r.dtype), ("R_scale", (dirs, 4 * hidden), DType.f32),
            ("B", (dirs, 8 * hidden), DType.f32), ("sequence_lens", (batch,), DType.i32),
            ("initial_h", (dirs, batch, hidden), DType.f32), ("initial_c", (dirs, batch, hidden), DType.f32),
            ("P", (dirs, 3 * hidden), DType.f32)]
    if len(inputs) != 1 + len(want):
        raise ValueError(f"QLSTM takes {1 + len(want)} inputs (XW, {', '.join(w[0] for w in want)}), got {len(inputs)}")
    for t, (what, shape, dtype) in zip(inputs[1:], want):
        _expect(t, shape, dtype, what, "QLSTM")
    results = {"Y": (seq, dirs, batch, hidden), "Y_h": (dirs, batch, hidden), "Y_c": (dirs, batch, hidden)}
    if attrs["result"] not in results:
        raise ValueError(f"QLSTM result {attrs['result']!r} is not one of {list(results)}")
    return [TensorType(DType.f32, results[attrs["result"]])]


RECURRENT_OP_DEFS = [
    OpDef("LSTM", (*RECURRENT_ATTRS, "input_forget"), 8, 8, _rule("LSTM")),
    OpDef("GRU", (*RECURRENT_ATTRS, "linear_before_reset"), 6, 6, _rule("GRU")),
    OpDef("RNN", RECURRENT_ATTRS, 6, 6, _rule("RNN")),
    OpDef("QLSTM", QLSTM_ATTRS, 8, 8, _qlstm_rule),
]
