"""ONNX LSTM, GRU and RNN (opsets 7, 14, 22) -> the normalized recurrent ops (iree_py/ir/ops_recurrent.py;
registered in onnx_ops.py's CONVERTERS).

Missing optional inputs become constants (zero bias, initial states and peepholes; sequence_lens
= seq_length for every batch entry). layout 1 (batch first) is Transposes around the op. Each
used output (Y, Y_h, Y_c) is its own node with attribute `result`, each recomputing the recurrence,
except Y_h next to Y without sequence_lens: then Y_h is Y's last step per direction (Slices).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from iree_py.frontends.onnx_compose import out_index, reshape, shape_of, transpose
from iree_py.frontends.onnx_dims import filled
from iree_py.ir.graph import Value
from iree_py.ir.ops.recurrent import ACTIVATIONS, DIRECTIONS, FUNCTIONS_PER_DIRECTION, GATES, num_directions
from iree_py.ir.types import Dim, DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

DEFAULT_ACTIVATIONS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}
OUTPUTS = {"LSTM": ("Y", "Y_h", "Y_c"), "GRU": ("Y", "Y_h"), "RNN": ("Y", "Y_h")}
BY_LOWER_NAME = {name.lower(): name for name in ACTIVATIONS}


def _activations(ctx: "OnnxContext", op: str, dirs: int) -> dict[str, list[Any]]:
    """activations with one alpha and one beta each, for every direction (onnxruntime's rule:
    alphas/betas are consumed in order by the functions that take them)."""
    per_direction = FUNCTIONS_PER_DIRECTION[op]
    given = ctx.attr("activations", None)
    names = list(given) if given else DEFAULT_ACTIVATIONS[op] * dirs
    if len(names) not in (per_direction, per_direction * dirs):
        raise ctx.bad_attr("activations", names, f"expected {per_direction * dirs} names "
                                                 f"({per_direction} per direction, {dirs} directions)")
    alphas = [float(a) for a in ctx.attr("activation_alpha", []) or []]
    betas = [float(b) for b in ctx.attr("activation_beta", []) or []]
    canonical, used_alphas, used_betas = [], [], []
    for name in names:
        known = BY_LOWER_NAME.get(str(name).lower())
        if known is None:
            raise ctx.bad_attr("activations", names, f"{name!r} is not one of {sorted(ACTIVATIONS)}")
        alpha_default, beta_default = ACTIVATIONS[known]
        alpha = 0.0 if alpha_default is None else (alphas.pop(0) if alphas else alpha_default)
        beta = 0.0 if beta_default is None else (betas.pop(0) if betas else beta_default)
        canonical.append(known)
        used_alphas.append(alpha)
        used_betas.append(beta)
    repeat = per_direction * dirs // len(names)
    return {"activations": canonical * repeat, "activation_alpha": used_alphas * repeat,
            "activation_beta": used_betas * repeat}


def _optional(ctx: "OnnxContext", i: int, zeros: tuple[int, ...], hint: str, batch_first: bool = False) -> Value:
    """Input i (a state [dirs, batch, H] given batch first: transposed), or a zero constant."""
    if not ctx.has_input(i):
        return filled(ctx, zeros, np.float32(0), f"{ctx.node_name}_{hint}")
    v = ctx.input(i)
    return transpose(ctx, v, [1, 0, 2]) if batch_first else v


def _sequence_lens(ctx: "OnnxContext", seq: Dim, batch: Dim) -> Value:
    if not ctx.has_input(4):  # every step: a symbolic seq is covered by the largest i32 (t < lens)
        steps = seq if isinstance(seq, int) else np.iinfo(np.int32).max
        return filled(ctx, (batch,), np.int32(steps), f"{ctx.node_name}_sequence_lens")
    lens = ctx.input(4)
    if lens.type.dtype == DType.i32:
        return lens
    if lens.is_const and lens.type.dtype.name.startswith(("i", "u")):
        return ctx.const(np.clip(lens.const, 0, seq).astype(np.int32), f"{ctx.node_name}_sequence_lens")
    raise ctx.error(f"sequence_lens must be int32, got {lens.type}")


def _last_steps(ctx: "OnnxContext", y: Value, direction: str, out: int | None) -> Value:
    """Y_h out of Y [seq, dirs, batch, H] when every batch entry runs all steps: each direction's
    last step (forward: t = seq - 1; reverse: t = 0)."""
    seq, dirs, batch, hidden = shape_of(y)
    parts = []
    for d in range(dirs):
        t = 0 if direction == "reverse" or d == 1 else seq - 1
        part = ctx.emit("Slice", [y], {"starts": [t, d, 0, 0], "ends": [t + 1, d + 1, batch, hidden],
                                       "steps": [1, 1, 1, 1]})
        parts.append(reshape(ctx, part, (1, batch, hidden), out=out if dirs == 1 else None))
    return parts[0] if dirs == 1 else ctx.emit("Concat", parts, {"axis": 0}, out=out)


def _converter(op: str) -> Callable[["OnnxContext"], list[Value | None]]:
    def convert(ctx: "OnnxContext") -> list[Value | None]:
        direction = str(ctx.attr("direction", "forward")).lower()
        if direction not in DIRECTIONS:
            raise ctx.bad_attr("direction", direction, f"expected one of {list(DIRECTIONS)}")
        batch_first = ctx.opset >= 14 and int(ctx.attr("layout", 0)) == 1
        x = ctx.input(0)
        if x.type.rank != 3:
            raise ctx.error(f"X must have rank 3, got {x.type}")
        if batch_first:
            x = transpose(ctx, x, [1, 0, 2])
        seq, batch, _ = shape_of(x)
        w, r = ctx.input(1), ctx.input(2)
        dirs, gates = num_directions(direction), GATES[op]
        if w.type.rank != 3 or shape_of(w)[0] != dirs or shape_of(w)[1] % gates:
            raise ctx.error(f"W {w.type} must be [{dirs}, {gates} * hidden_size, input_size] for direction {direction}")
        hidden = shape_of(w)[1] // gates
        if int(ctx.attr("hidden_size", hidden)) != hidden:
            raise ctx.bad_attr("hidden_size", ctx.attr("hidden_size"), f"W {w.type} has hidden size {hidden}")
        state = (dirs, batch, hidden)
        inputs = [x, w, r, _optional(ctx, 3, (dirs, 2 * gates * hidden), "B"), _sequence_lens(ctx, seq, batch),
                  _optional(ctx, 5, state, "initial_h", batch_first)]
        attrs: dict[str, Any] = {"direction": direction, "hidden_size": hidden,
                                 "clip": float(ctx.attr("clip", float("inf"))), **_activations(ctx, op, dirs)}
        if op == "LSTM":
            inputs += [_optional(ctx, 6, state, "initial_c", batch_first), _optional(ctx, 7, (dirs, 3 * hidden), "P")]
            attrs["input_forget"] = int(ctx.attr("input_forget", 0))
        if op == "GRU":
            attrs["linear_before_reset"] = int(ctx.attr("linear_before_reset", 0))
        lens = ctx.input(4) if ctx.has_input(4) else None
        full_lengths = lens is None or (lens.is_const and bool(np.all(lens.const >= seq)))  # Y_h is part of Y
        results: list[Value | None] = []
        y: Value | None = None
        for i, result in enumerate(OUTPUTS[op]):
            if not ctx.output_used(i):
                results.append(None)
                continue
            if result == "Y_h" and y is not None and full_lengths:
                value = _last_steps(ctx, y, direction, None if batch_first else out_index(ctx, i))
            else:
                out = None if batch_first else out_index(ctx, i)
                hint = f"{ctx.node_name}_{result.lower()}"
                value = ctx.emit(op, inputs, {**attrs, "result": result}, out=out, hint=hint)
            if result == "Y":
                y = value
            results.append(transpose(ctx, value, [2, 0, 1, 3] if result == "Y" else [1, 0, 2], out=out_index(ctx, i))
                           if batch_first else value)
        return results
    return convert


RECURRENT_CONVERTERS = {"LSTM": _converter("LSTM"), "GRU": _converter("GRU"), "RNN": _converter("RNN")}
