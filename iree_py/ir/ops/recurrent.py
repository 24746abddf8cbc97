"""The recurrent layers LSTM, GRU and RNN, and QLSTM: shape rules and numpy references.

The normalized form (docs/ir.md "Recurrent ops"): every input is present (the frontend fills in
zeros and full sequence lengths), X is [seq, batch, input] (ONNX layout 0), one activation name
with one alpha and one beta per gate function and direction, and `result` names the one output a
node computes ("Y", "Y_h" or "Y_c": an ONNX node with several used outputs is several nodes).

QLSTM is the recurrence of onnxruntime's DynamicQuantizeLSTM (docs/ir.md "QLSTM"): the input
projections come in computed (XW [dirs, seq, batch, 4H] f32, gates i o f c), R is quantized
([dirs, H, 4H] i8/u8, the contrib op's layout, zero points per direction as an attribute) and each
step quantizes the previous h of the whole batch to u8 with its own dynamic scale.

The numpy references run in f64: X [seq, batch, input], W [dirs, G*H, input], R [dirs, G*H, H],
B [dirs, 2*G*H], sequence_lens i32 [batch], initial_h [dirs, batch, H] (LSTM also initial_c,
P [dirs, 3H]). Gate blocks as ONNX orders them: LSTM i o f c, GRU z r h, RNN one. A batch entry is
active at time t when t < sequence_lens[b]: inactive steps keep its state and write zeros to Y.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from iree_py.ir import rational_math
from iree_py.ir.dim_checks import same_dims
from iree_py.ir.opdef import Kernel, OpDef
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


# --- numpy reference -------------------------------------------------------------------------------

Activation = Callable[[np.ndarray], np.ndarray]


def activation(name: str, alpha: float, beta: float) -> Activation:
    table: dict[str, Activation] = {
        "Tanh": np.tanh,
        "Relu": lambda x: np.maximum(x, 0.0),
        "Sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
        "Softsign": lambda x: x / (1.0 + np.abs(x)),
        "Softplus": lambda x: np.logaddexp(x, 0.0),
        "HardSigmoid": lambda x: np.clip(alpha * x + beta, 0.0, 1.0),
        "Affine": lambda x: alpha * x + beta,
        "LeakyRelu": lambda x: np.where(x >= 0, x, alpha * x),
        "ThresholdedRelu": lambda x: np.where(x > alpha, x, 0.0),
        "ScaledTanh": lambda x: alpha * np.tanh(beta * x),
        "Elu": lambda x: np.where(x >= 0, x, alpha * np.expm1(np.minimum(x, 0.0))),
    }
    return table[name]


def _functions(op: str, attrs: dict[str, Any], d: int) -> list[Activation]:
    n = FUNCTIONS_PER_DIRECTION[op]
    return [activation(attrs["activations"][k], float(attrs["activation_alpha"][k]),
                       float(attrs["activation_beta"][k])) for k in range(d * n, (d + 1) * n)]


def _step(op: str, attrs: dict[str, Any], fns: list[Activation], x: np.ndarray, h: np.ndarray, c: np.ndarray,
          w: np.ndarray, r: np.ndarray, wb: np.ndarray, rb: np.ndarray, p: np.ndarray | None
          ) -> tuple[np.ndarray, np.ndarray]:
    """One time step for all batch entries: (new h, new c)."""
    hidden = h.shape[-1]
    clip = float(attrs["clip"])

    def pre(gate: int, hh: np.ndarray | None = None) -> np.ndarray:
        rows = slice(gate * hidden, (gate + 1) * hidden)
        return x @ w[rows].T + wb[rows] + (h if hh is None else hh) @ r[rows].T + rb[rows]

    def clipped(v: np.ndarray) -> np.ndarray:
        return np.clip(v, -clip, clip)

    if op == "RNN":
        return fns[0](clipped(pre(0))), c
    if op == "GRU":
        f, g = fns
        z, reset = f(clipped(pre(0))), f(clipped(pre(1)))
        rows = slice(2 * hidden, 3 * hidden)
        if attrs["linear_before_reset"]:
            cand = x @ w[rows].T + wb[rows] + reset * (h @ r[rows].T + rb[rows])
        else:
            cand = x @ w[rows].T + wb[rows] + (reset * h) @ r[rows].T + rb[rows]
        return (1.0 - z) * g(clipped(cand)) + z * h, c
    f, g, hf = fns
    assert p is not None
    i = f(clipped(pre(0) + p[:hidden] * c))
    forget = 1.0 - i if attrs["input_forget"] else f(clipped(pre(2) + p[2 * hidden:] * c))
    c_new = forget * c + i * g(clipped(pre(3)))
    o = f(clipped(pre(1) + p[hidden:2 * hidden] * c_new))
    return o * hf(c_new), c_new


def _run(op: str, ins: list[np.ndarray], attrs: dict[str, Any]) -> dict[str, np.ndarray]:
    x, w, r, bias, lens, h0 = (np.asarray(a, np.float64) if k != 4 else np.asarray(a) for k, a in enumerate(ins[:6]))
    c0 = np.asarray(ins[6], np.float64) if op == "LSTM" else np.zeros_like(h0)
    peep = np.asarray(ins[7], np.float64) if op == "LSTM" else None
    seq, batch, _ = x.shape
    dirs, hidden = num_directions(attrs["direction"]), int(attrs["hidden_size"])
    rows = GATES[op] * hidden
    y = np.zeros((seq, dirs, batch, hidden))
    y_h, y_c = np.zeros((dirs, batch, hidden)), np.zeros((dirs, batch, hidden))
    lens = lens.astype(np.int64)
    for d in range(dirs):
        backward = attrs["direction"] == "reverse" or d == 1
        fns = _functions(op, attrs, d)
        h, c = h0[d].copy(), c0[d].copy()
        for t in (range(seq - 1, -1, -1) if backward else range(seq)):
            active = (t < lens)[:, None]
            h_new, c_new = _step(op, attrs, fns, x[t], h, c, w[d], r[d], bias[d, :rows], bias[d, rows:],
                                 None if peep is None else peep[d])
            h, c = np.where(active, h_new, h), np.where(active, c_new, c)
            y[t, d] = np.where(active, h, 0.0)
        y_h[d], y_c[d] = h, c
    return {"Y": y, "Y_h": y_h, "Y_c": y_c}


def _kernel(op: str):
    def run(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
        return _run(op, ins, attrs)[attrs["result"]].astype(np.float32)
    return run


def _u8_parameters(v: np.ndarray) -> tuple[np.float32, np.float32]:
    """GetQuantizationParameter: scale and (integral) zero point of v's range with 0 in it."""
    lo = min(np.float32(0), np.float32(v.min())) if v.size else np.float32(0)
    hi = max(np.float32(0), np.float32(v.max())) if v.size else np.float32(0)
    scale = np.float32(1) if hi == lo else np.float32((hi - lo) / np.float32(255))
    return scale, np.float32(np.rint(np.clip(-(lo / scale), np.float32(0), np.float32(255))))


def _qlstm_activation(name: str, alpha: float, beta: float) -> Activation:
    """Sigmoid and Tanh as MLAS computes them; the others in float32 (the same roundings as the
    kernel where they are plain arithmetic: Relu, HardSigmoid, Affine, LeakyRelu, ThresholdedRelu)."""
    exact = {"Sigmoid": rational_math.rational_sigmoid, "Tanh": rational_math.rational_tanh}
    if name in exact:
        return exact[name]
    f32 = activation(name, np.float32(alpha), np.float32(beta))
    return lambda x: np.asarray(f32(x), np.float32)


def _qlstm(ins: list[np.ndarray], attrs: dict[str, Any]) -> dict[str, np.ndarray]:
    xw, r, r_scale, bias, lens, h0, c0, peep = (np.asarray(a) for a in ins)
    f32 = np.float32
    dirs, seq, batch, _ = xw.shape
    hidden = int(attrs["hidden_size"])
    lens = np.clip(lens.astype(np.int64), 0, seq)
    steps = int(lens.max()) if batch else 0
    clip = float(attrs["clip"])
    y = np.zeros((seq, dirs, batch, hidden), f32)
    y_h, y_c = np.zeros((dirs, batch, hidden), f32), np.zeros((dirs, batch, hidden), f32)

    def pre(v: np.ndarray, bias_part: np.ndarray) -> np.ndarray:
        v = v + bias_part
        return np.clip(v, f32(-clip), f32(clip)) if np.isfinite(clip) else v

    for d in range(dirs):
        backward = attrs["direction"] == "reverse" or d == 1
        f, g, hf = (_qlstm_activation(attrs["activations"][k], float(attrs["activation_alpha"][k]),
                                      float(attrs["activation_beta"][k])) for k in range(3 * d, 3 * d + 3))
        h, c = h0[d].astype(f32).copy(), c0[d].astype(f32).copy()
        source = h.copy()  # what the next step quantizes: onnxruntime's previous_state rows
        rd = r[d].astype(np.int64) - int(attrs["r_zero_point"][d])
        wrb = (bias[d, :4 * hidden] + bias[d, 4 * hidden:]).astype(f32)
        p_i, p_o, p_f = (peep[d, k * hidden:(k + 1) * hidden].astype(f32) for k in range(3))
        for s in range(steps):
            scale, zp = _u8_parameters(source)
            hq = np.clip(np.rint(source / scale) + zp, 0, 255).astype(np.int64) - int(zp)
            multiplier = (scale * r_scale[d]).astype(f32)
            active = s < lens
            for b in np.flatnonzero(active):
                t = int(lens[b]) - 1 - s if backward else s
                acc = (hq[b] @ rd).astype(np.int32)
                gates = acc.astype(f32) * multiplier + xw[d, t, b]
                gi, go, gf, gc = (gates[k * hidden:(k + 1) * hidden] for k in range(4))
                bi, bo, bf, bc = (wrb[k * hidden:(k + 1) * hidden] for k in range(4))
                i = f(pre(gi + c[b] * p_i, bi))
                forget = f32(1) - i if attrs["input_forget"] else f(pre(gf + c[b] * p_f, bf))
                c[b] = c[b] * forget + i * g(pre(gc, bc))
                o = f(pre(go + c[b] * p_o, bo))
                h[b] = hf(c[b]) * o
                y[t, d, b] = h[b]
            source = np.where(active[:, None], h, f32(0)) if attrs["finished_as_zero"] else h.copy()
        y_h[d] = np.where((lens > 0)[:, None], h, f32(0))
        y_c[d] = np.where((lens > 0)[:, None], c, f32(0))
    return {"Y": y, "Y_h": y_h, "Y_c": y_c}


OP_DEFS = [
    OpDef("LSTM", (*RECURRENT_ATTRS, "input_forget"), 8, 8, _rule("LSTM")),
    OpDef("GRU", (*RECURRENT_ATTRS, "linear_before_reset"), 6, 6, _rule("GRU")),
    OpDef("RNN", RECURRENT_ATTRS, 6, 6, _rule("RNN")),
    OpDef("QLSTM", QLSTM_ATTRS, 8, 8, _qlstm_rule),
]

KERNELS: dict[str, Kernel] = {"LSTM": _kernel("LSTM"), "GRU": _kernel("GRU"), "RNN": _kernel("RNN"),
    "QLSTM": lambda ins, attrs: _qlstm(ins, attrs)[attrs["result"]]}
