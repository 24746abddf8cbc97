"""ONNX LSTM, GRU and RNN (opsets 7, 14, 22) -> the normalized recurrent ops (iree_py/ir/ops/recurrent.py).

Missing optional inputs become constants (zero bias, initial states and peepholes; sequence_lens
= seq_length for every batch entry). layout 1 (batch first) is Transposes around the op. Each
used output (Y, Y_h, Y_c) is its own node with attribute `result`, each recomputing the recurrence,
except Y_h next to Y without sequence_lens: then Y_h is Y's last step per direction (Slices).

com.microsoft DynamicQuantizeLSTM (onnxruntime's contrib op, written by its dynamic quantization
of an LSTM) -> the u8 quantization of X, one MatMulInteger per direction and the QLSTM recurrence
(iree_py/ir/ops/recurrent.py, docs/ir.md "QLSTM").

onnxruntime's kernel (contrib_ops/cpu/quantization/dynamic_quantize_lstm.cc on the CPU LSTM of
providers/cpu/rnn: uni_directional_lstm.cc, rnn_helpers.cc ComputeGemm) computes, per direction:
  - X's rows of the steps that run (t < max(sequence_lens)) quantized to u8 with one dynamic scale
    and zero point (GetQuantizationParameter, as DynamicQuantizeLinear), times W ([dirs, input, 4H],
    i8 or u8, one zero point per direction) in int32, each sum scaled by f32(x_scale * W_scale[col])
    (W_scale per direction or per column): XW. Rows past max_len are zeroed before the range is
    taken, which leaves the range (it always holds 0) as onnxruntime's.
  - per step, the previous h of the whole batch quantized the same way, times R in int32, scaled by
    f32(h_scale * R_scale[col]) and added to XW: f32(acc) * m + XW (two roundings), then the gates
    i o f c of the CPU LSTM with MLAS's sigmoid and tanh (RationalSigmoid / RationalTanh).
QLSTM does the second part; the first is existing ops, so X @ W runs on the qmatmul kernel.

onnxruntime reads the previous h back from Y when the node names a Y output, where the rows of
finished entries are zero, else from Y_h, where they keep their last h: QLSTM's finished_as_zero.
Refused: a symbolic batch (the step's scale couples the entries), zero points that are not
constants, per-column zero points that differ (onnxruntime refuses them too), attributes the op
does not have.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from iree_py.frontends.onnx.compose import Converter, out_index, reshape, shape_of, transpose
from iree_py.frontends.onnx.dims import filled
from iree_py.frontends.onnx.quantization import dynamic_u8_parameters, quantize_u8
from iree_py.frontends.onnx.quantized_ops import integer_matmul
from iree_py.ir.graph import Value
from iree_py.ir.ops.recurrent import ACTIVATIONS, DIRECTIONS, FUNCTIONS_PER_DIRECTION, GATES, num_directions
from iree_py.ir.types import Dim, DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


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


# --- com.microsoft DynamicQuantizeLSTM -------------------------------------------------------------

QLSTM_ATTRIBUTES = {"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size", "input_forget"}


QLSTM_OUTPUTS = ("Y", "Y_h", "Y_c")


QLSTM_WEIGHT_DTYPES = (DType.i8, DType.u8)


def _weight(ctx: "OnnxContext", i: int, what: str, shape: tuple[Any, ...]) -> Value:
    v = ctx.input(i)
    if v.type.dtype not in QLSTM_WEIGHT_DTYPES or shape_of(v) != shape:
        raise ctx.error(f"{what} must be int8 or uint8 {list(shape)}, got {v.type}")
    return v


def _scale_and_zero_points(ctx: "OnnxContext", i: int, what: str, weight: Value, dirs: int,
                           columns: int) -> tuple[Value, list[int]]:
    """Input i (a scale) and i + 1 (its zero point), per direction [dirs] or per column [dirs, 4H].
    The scale comes back as [dirs, 1] or [dirs, 4H]; the zero point as one constant per direction
    (onnxruntime's GEMM takes the first column's, and requires them all equal)."""
    scale = ctx.input(i)
    if scale.type.dtype != DType.f32 or shape_of(scale) not in ((dirs,), (dirs, columns)):
        raise ctx.error(f"{what}_scale must be float32 [{dirs}] or [{dirs}, {columns}], got {scale.type}")
    zp = ctx.input(i + 1)
    if zp.type.dtype != weight.type.dtype or shape_of(zp) != shape_of(scale):
        raise ctx.error(f"{what}_zero_point must be {weight.type.dtype.value} of {what}_scale's shape "
                        f"{list(shape_of(scale))}, got {zp.type}")
    if not zp.is_const:
        raise ctx.error(f"{what}_zero_point '{zp.name}' must be a constant")
    values = np.asarray(zp.const).reshape(dirs, -1).astype(np.int64)
    if np.any(values != values[:, :1]):
        raise ctx.error(f"{what}_zero_point differs between columns ({values.tolist()}); onnxruntime refuses "
                        f"that too: the zero point must be one value per direction")
    if scale.type.rank == 1:
        scale = reshape(ctx, scale, (dirs, 1))
    return scale, [int(z) for z in values[:, 0]]


def _rows_run(ctx: "OnnxContext", x: Value, lens: Value) -> Value:
    """x with the rows t >= max(sequence_lens) zeroed: the rows onnxruntime quantizes (its range
    includes 0 anyway, so zeros leave it as it is)."""
    seq = shape_of(x)[0]
    ones = filled(ctx, (seq, 1, 1), np.float32(1), f"{ctx.node_name}_ones")
    t = ctx.emit("CumSum", [ones], {"axis": 0, "exclusive": 1, "reverse": 0})
    longest = ctx.emit("Reduce", [ctx.emit("Cast", [lens], {"to": "f32"})], {"kind": "max", "axes": [0], "keepdims": 0})
    zero = ctx.const(np.array(0.0, np.float32), f"{ctx.node_name}_zero")
    return ctx.emit("Where", [ctx.emit("Less", [t, longest]), x, zero])


def _input_projection(ctx: "OnnxContext", x: Value, w: Value, w_scale: Value, w_zero_points: list[int],
                      lens: Value | None) -> Value:
    """XW [dirs, seq, batch, 4H]: u8(X) @ W[d] in int32, times f32(x_scale * W_scale[d])."""
    seq, batch, size = shape_of(x)
    dirs, _, columns = shape_of(w)
    scale, zero_point = dynamic_u8_parameters(ctx, x if lens is None else _rows_run(ctx, x, lens))
    xq = reshape(ctx, quantize_u8(ctx, x, scale, zero_point), (seq * batch, size))
    xq_zero_point = reshape(ctx, ctx.emit("Cast", [zero_point], {"to": "u8"}), (1,))
    scale_columns = shape_of(w_scale)[1]
    parts = []
    for d in range(dirs):
        w_d = ctx.emit("Slice", [w], {"starts": [d, 0, 0], "ends": [d + 1, size, columns], "steps": [1, 1, 1]})
        w_zp = ctx.const(np.array([w_zero_points[d]], w.type.dtype.numpy), f"{ctx.node_name}_w_zero_point{d}")
        acc = integer_matmul(ctx, xq, reshape(ctx, w_d, (size, columns)), xq_zero_point, w_zp)
        w_scale_d = ctx.emit("Slice", [w_scale], {"starts": [d, 0], "ends": [d + 1, scale_columns], "steps": [1, 1]})
        multiplier = ctx.emit("Mul", [scale, reshape(ctx, w_scale_d, (scale_columns,))])  # f32(x_scale * w_scale)
        xw = ctx.emit("Mul", [ctx.emit("Cast", [acc], {"to": "f32"}), multiplier])
        parts.append(ctx.emit("Reshape", [xw], {"shape": [1, seq, batch, columns]}, hint=f"{ctx.node_name}_xw{d}"))
    return parts[0] if dirs == 1 else ctx.emit("Concat", parts, {"axis": 0}, hint=f"{ctx.node_name}_xw")


def _per_column(ctx: "OnnxContext", scale: Value, dirs: int, columns: int) -> Value:
    """A [dirs, 1] or [dirs, 4H] scale as [dirs, 4H]."""
    if shape_of(scale)[1] == columns:
        return scale
    if scale.is_const:
        return ctx.const(np.broadcast_to(scale.const, (dirs, columns)).astype(np.float32), f"{ctx.node_name}_r_scale")
    return ctx.emit("Expand", [scale], {"shape": [dirs, columns]})


def dynamic_quantize_lstm(ctx: "OnnxContext") -> list[Value | None]:
    unknown = sorted({a.name for a in ctx.node.attribute} - QLSTM_ATTRIBUTES)
    if unknown:
        raise ctx.bad_attr(unknown[0], ctx.attr(unknown[0]), f"DynamicQuantizeLSTM has no such attribute "
                                                              f"(it has {sorted(QLSTM_ATTRIBUTES)})")
    direction = str(ctx.attr("direction", "forward")).lower()
    if direction not in DIRECTIONS:
        raise ctx.bad_attr("direction", direction, f"expected one of {list(DIRECTIONS)}")
    dirs = num_directions(direction)
    x = ctx.input(0)
    if x.type.dtype != DType.f32 or x.type.rank != 3:
        raise ctx.error(f"X must be float32 [seq, batch, input], got {x.type}")
    seq, batch, size = shape_of(x)
    if not isinstance(batch, int) or not isinstance(size, int):
        raise ctx.error(f"X {x.type} needs a static batch and input size: each step quantizes the hidden state "
                        f"of the whole batch with one scale")
    w = ctx.input(1)
    if w.type.rank != 3 or not isinstance(shape_of(w)[2], int) or shape_of(w)[2] % 4:
        raise ctx.error(f"W must be [{dirs}, {size}, 4 * hidden_size], got {w.type}")
    hidden = shape_of(w)[2] // 4
    if int(ctx.attr("hidden_size", hidden)) != hidden:
        raise ctx.bad_attr("hidden_size", ctx.attr("hidden_size"), f"W {w.type} has hidden size {hidden}")
    columns = 4 * hidden
    w = _weight(ctx, 1, "W", (dirs, size, columns))
    r = _weight(ctx, 2, "R", (dirs, hidden, columns))
    w_scale, w_zero_points = _scale_and_zero_points(ctx, 8, "W", w, dirs, columns)
    r_scale, r_zero_points = _scale_and_zero_points(ctx, 10, "R", r, dirs, columns)
    if w.type.dtype == DType.i8 and any(w_zero_points) or r.type.dtype == DType.i8 and any(r_zero_points):
        raise ctx.error(f"int8 weights need zero points 0 (onnxruntime's rule), got W {w_zero_points}, "
                        f"R {r_zero_points}")
    clip = float(ctx.attr("clip", float("inf")))
    if not clip > 0:
        raise ctx.bad_attr("clip", clip, "must be positive")
    input_forget = int(ctx.attr("input_forget", 0))
    if input_forget not in (0, 1):
        raise ctx.bad_attr("input_forget", input_forget, "must be 0 or 1")

    state = (dirs, batch, hidden)
    lens = ctx.input(4) if ctx.has_input(4) else None
    inputs = [_input_projection(ctx, x, w, w_scale, w_zero_points, lens), r, _per_column(ctx, r_scale, dirs, columns),
              _optional(ctx, 3, (dirs, 8 * hidden), "B"), _sequence_lens(ctx, seq, batch),
              _optional(ctx, 5, state, "initial_h"), _optional(ctx, 6, state, "initial_c"),
              _optional(ctx, 7, (dirs, 3 * hidden), "P")]
    y_named = len(ctx.node.output) > 0 and bool(ctx.node.output[0])
    attrs: dict[str, Any] = {"direction": direction, "hidden_size": hidden, "clip": clip, "input_forget": input_forget,
                             "r_zero_point": r_zero_points, "finished_as_zero": int(y_named),
                             **_activations(ctx, "LSTM", dirs)}
    results: list[Value | None] = []
    y: Value | None = None
    for i, result in enumerate(QLSTM_OUTPUTS):
        if not ctx.output_used(i):
            results.append(None)
            continue
        if result == "Y_h" and y is not None and lens is None:  # every entry runs every step: Y's last
            results.append(_last_steps(ctx, y, direction, out_index(ctx, i)))
            continue
        value = ctx.emit("QLSTM", inputs, {**attrs, "result": result}, out=out_index(ctx, i),
                         hint=f"{ctx.node_name}_{result.lower()}")
        y = value if result == "Y" else y
        results.append(value)
    return results


CONVERTERS: dict[str, Converter] = {"LSTM": _converter("LSTM"), "GRU": _converter("GRU"), "RNN": _converter("RNN")}

# onnxruntime's contrib ops of domain com.microsoft (registry.py's DOMAIN_CONVERTERS).
MICROSOFT_CONVERTERS: dict[str, Callable[["OnnxContext"], list[Value | None]]] = {
    "DynamicQuantizeLSTM": dynamic_quantize_lstm,
}
