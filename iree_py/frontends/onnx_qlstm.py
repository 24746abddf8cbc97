"""com.microsoft DynamicQuantizeLSTM (onnxruntime's contrib op, written by its dynamic quantization
of an LSTM) -> the u8 quantization of X, one MatMulInteger per direction and the QLSTM recurrence
(iree_py/ir/ops_recurrent.py, docs/ir.md "QLSTM").

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

from iree_py.frontends.onnx_compose import out_index, reshape, shape_of
from iree_py.frontends.onnx_dims import filled
from iree_py.frontends.onnx_quant import dynamic_u8_parameters, integer_matmul, quantize_u8
from iree_py.frontends.onnx_recurrent import _activations, _last_steps, _optional, _sequence_lens
from iree_py.ir.graph import Value
from iree_py.ir.ops.recurrent import DIRECTIONS, num_directions
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

ATTRIBUTES = {"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size", "input_forget"}
OUTPUTS = ("Y", "Y_h", "Y_c")
WEIGHT_DTYPES = (DType.i8, DType.u8)


def _weight(ctx: "OnnxContext", i: int, what: str, shape: tuple[Any, ...]) -> Value:
    v = ctx.input(i)
    if v.type.dtype not in WEIGHT_DTYPES or shape_of(v) != shape:
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
    unknown = sorted({a.name for a in ctx.node.attribute} - ATTRIBUTES)
    if unknown:
        raise ctx.bad_attr(unknown[0], ctx.attr(unknown[0]), f"DynamicQuantizeLSTM has no such attribute "
                                                              f"(it has {sorted(ATTRIBUTES)})")
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
    for i, result in enumerate(OUTPUTS):
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


MICROSOFT_CONVERTERS: dict[str, Callable[["OnnxContext"], list[Value | None]]] = {
    "DynamicQuantizeLSTM": dynamic_quantize_lstm,
}
