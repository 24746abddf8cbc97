"""ONNX Attention (opset 23..25) as MatMul / Softmax / elementwise ops.

    scores = (Q @ K^T) * scale            [B, Hq, Sq, Skv]; K, V = past ++ new along the sequence
    scores = softcap * tanh(scores / softcap)          (softcap > 0)
    scores = scores + bias                 bias = attn_mask (+ a constant causal / window mask)
    Y      = softmax(scores) @ V

3-D inputs [B, S, H*D] become [B, H, S, D] (Reshape + Transpose) and Y goes back to [B, Sq, Hq*Dv].
Grouped-query attention (Hq = r * Hkv) needs no copies of K/V: Q [B, Hq, Sq, D] reshapes to
[B, Hkv, r*Sq, D] (query head h uses kv head h // r), and the scores reshape back to [B, Hq, Sq, Skv].
A bool attn_mask must be a constant (becomes 0 / -inf); a computed one needs Where.
nonpad_kv_seqlen (opset 24) becomes a per-batch bias: constant bounds compared with the lengths.
Not supported (CompileError): nonpad_kv_seqlen with past_key, softmax_precision other than float32,
qk_matmul_output_mode 0 together with softcap. Query rows whose mask disallows every key give 0
(as the reference) via Where(IsInf(max of the bias row), 0, probs) for a constant mask and a
computed bool mask; a computed float mask row that is all -inf gives NaN (known gap: it would need
Where kernels in every float-mask model).

ONNX LinearAttention (27) as a composition unrolled over the sequence (MatMul, elementwise).

Per time step t, per key/value head, with state S [d_k, d_v] (zeros or past_state):
    gated:  S = S * exp(decay_t)                      (decay per head, or per key feature)
    delta:  v_t = beta_t * (v_t - k_t S)
    S = S + k_t^T v_t
    out_t = scale * q_t S                             (query head h reads key/value head h // group)
update_rule: linear (neither), gated, delta, gated_delta (both). Computed in float32 (float16
inputs are cast, results cast back), as the ONNX reference does. present_state is the final S.

RotaryEmbedding (23): x1, x2 = the two halves (or the even/odd elements, interleaved) of the first
rotary_embedding_dim features; real = cos*x1 - sin*x2, imag = sin*x1 + cos*x2, written back in the
same places; cos/sin rows are gathered by position_ids when given.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx.compose import (F32, Converter, optional_input, out_index, require_float, reshape, scalar,
                                            shape_of, slice_axis, transpose)
from iree_py.ir.graph import Value
from iree_py.ir.ops import OPS
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


QK_MODES = (0, 1, 2, 3)  # raw scores, after softcap, after softcap + mask, after softmax


NONPAD_KV_SEQLEN = 6


def _split_heads(ctx: "OnnxContext", x: Value, heads: int, what: str) -> Value:
    """[B, S, H*D] -> [B, H, S, D]."""
    b, s, hidden = shape_of(x)
    if not isinstance(hidden, int):
        raise ctx.error(f"{what} {x.type}: the hidden size must be static to split it into {heads} heads")
    if heads <= 0 or hidden % heads:
        raise ctx.error(f"{what} {x.type}: hidden size {hidden} is not a multiple of {heads} heads")
    return transpose(ctx, reshape(ctx, x, (b, s, heads, hidden // heads)), [0, 2, 1, 3])


def _heads_attrs(ctx: "OnnxContext", q: Value) -> tuple[int | None, int | None]:
    q_heads, kv_heads = ctx.attr("q_num_heads"), ctx.attr("kv_num_heads")
    if q.type.rank == 3 and (q_heads is None or kv_heads is None):
        raise ctx.error("3-D Q/K/V need the q_num_heads and kv_num_heads attributes")
    return (None if q_heads is None else int(q_heads)), (None if kv_heads is None else int(kv_heads))


def _with_past(ctx: "OnnxContext", new: Value, past_index: int, out: int) -> Value:
    name = ctx.output_used(out)
    if not ctx.has_input(past_index):
        return new if not name or new.producer is None else reshape(ctx, new, shape_of(new), out=out)
    past = ctx.input(past_index)
    if past.type.rank != 4 or shape_of(past)[:2] != shape_of(new)[:2] or shape_of(past)[3] != shape_of(new)[3]:
        raise ctx.error(f"past input {past_index} {past.type} does not match the new keys/values {new.type}")
    return ctx.emit("Concat", [past, new], {"axis": 2}, out=out if name else None)


def _constant_structure_mask(ctx: "OnnxContext", sq: int, skv: int, offset: int) -> np.ndarray | None:
    """The causal and sliding-window masks (0 / -inf) for query i at position i + offset."""
    causal = int(ctx.attr("is_causal", 0))
    left, right = _window_attrs(ctx)
    if not causal and left < 0 and right < 0:
        return None
    diff = (np.arange(sq)[:, None] + offset) - np.arange(skv)[None, :]  # query position - key index
    allowed = np.ones((sq, skv), bool)
    if causal:
        allowed &= diff >= 0
    if left >= 0:
        allowed &= diff <= left
    if right >= 0:
        allowed &= -diff <= right
    return np.where(allowed, 0.0, -np.inf).astype(F32)


def _nonpad_bias(ctx: "OnnxContext", b: int, sq: int, skv: int) -> Value:
    """Opset 24 nonpad_kv_seqlen n[b] (external cache): key j is valid when j < n[b], and the causal /
    window masks are offset by n[b] - sq per batch. Every condition compares n[b] with a constant:
    lower[i, j] <= n[b] <= upper[i, j]; the result is a [B, 1, Sq, Skv] bias of 0 / -inf."""
    n = ctx.input(NONPAD_KV_SEQLEN)
    if n.type.num_elements != b:
        raise ctx.error(f"nonpad_kv_seqlen {n.type} must have one length per batch ({b})")
    for op in ("LessOrEqual", "And", "Where"):
        if op not in OPS:
            raise ctx.error(f"input nonpad_kv_seqlen is not supported (needs {op})")
    causal = int(ctx.attr("is_causal", 0))
    left, right = _window_attrs(ctx)
    i, j = np.arange(sq)[:, None], np.arange(skv)[None, :]
    lower = np.broadcast_to(j + 1, (sq, skv))  # padding: j < n
    if causal:
        lower = np.maximum(lower, j - i + sq)  # j <= i + n - sq
    if right >= 0:
        lower = np.maximum(lower, j - i - right + sq)  # j - (i + n - sq) <= right
    dtype = n.type.dtype.numpy
    n = reshape(ctx, n, (b, 1, 1, 1))
    allowed = ctx.emit("LessOrEqual", [ctx.const(lower.astype(dtype), "nonpad_lower"), n])
    if left >= 0:  # (i + n - sq) - j <= left
        upper = ctx.const((left + j - i + sq).astype(dtype), "nonpad_upper")
        allowed = ctx.emit("And", [allowed, ctx.emit("LessOrEqual", [n, upper])])
    zero, minus_inf = scalar(ctx, 0.0, "zero", like=ctx.input(0)), scalar(ctx, -np.inf, "minus_inf", like=ctx.input(0))
    return ctx.emit("Where", [allowed, zero, minus_inf])


def _window_attrs(ctx: "OnnxContext") -> tuple[int, int]:
    left, right = int(ctx.attr("left_window_size", -1)), int(ctx.attr("right_window_size", -1))
    if left < -1 or right < -1:
        raise ctx.error(f"left_window_size={left} / right_window_size={right}: must be -1 or >= 0")
    return left, right


def _mask_bias(ctx: "OnnxContext", skv: int, like: Value) -> Value | None:
    """attn_mask as an additive float bias whose last axis covers all skv keys (-inf padding)."""
    if not ctx.has_input(3):
        return None
    mask = ctx.input(3)
    if mask.type.dtype.numpy == np.bool_:
        if mask.is_const:
            mask = ctx.const(np.where(mask.const, 0.0, -np.inf).astype(F32), "attn_bias")
        elif "Where" in OPS:
            zero, minus_inf = scalar(ctx, 0.0, "zero", like=like), scalar(ctx, -np.inf, "minus_inf", like=like)
            mask = ctx.emit("Where", [mask, zero, minus_inf])
        else:
            raise ctx.error(f"a computed bool attn_mask ({mask.type}) is not supported (needs Where); "
                            "a float mask or a constant bool mask is")
    elif mask.type.dtype.numpy != np.float32:
        raise ctx.error(f"attn_mask of type {mask.type} is not supported; float32 or bool")
    if mask.type.rank == 0:
        mask = reshape(ctx, mask, (1,))
    width = shape_of(mask)[-1]
    if width > skv:
        raise ctx.error(f"attn_mask {mask.type} covers {width} keys but there are {skv}")
    if width < skv:
        pad = ctx.const(np.full(shape_of(mask)[:-1] + (skv - width,), -np.inf, F32), "attn_mask_pad")
        mask = ctx.emit("Concat", [mask, pad], {"axis": mask.type.rank - 1})
    return mask


def _needs_row_guard(ctx: "OnnxContext", bias: Value | None) -> bool:
    """Whether rows whose bias is all -inf must be zeroed after the softmax (it gives NaN there; the
    ONNX reference gives 0): for a constant bias with such rows, and for a computed bool mask (which
    needs Where anyway). A computed float mask is not guarded (see the module docstring)."""
    if bias is None:
        return False
    if bias.is_const:
        if not np.isneginf(bias.const.max(axis=-1)).any():
            return False
        if "Where" not in OPS or "IsInf" not in OPS:
            raise ctx.error("the attention mask masks every key of some query row (needs Where to zero such rows)")
        return True
    bool_mask = ctx.has_input(3) and ctx.input(3).type.dtype.numpy == np.bool_
    return (bool_mask or ctx.has_input(NONPAD_KV_SEQLEN)) and "IsInf" in OPS


def _zero_fully_masked_rows(ctx: "OnnxContext", probs: Value, bias: Value, out: int | None) -> Value:
    row_max = ctx.emit("Reduce", [bias], {"kind": "max", "axes": [bias.type.rank - 1], "keepdims": 1})
    masked = ctx.emit("IsInf", [row_max], {"detect_negative": 1, "detect_positive": 0})
    return ctx.emit("Where", [masked, scalar(ctx, 0.0, "zero", like=probs), probs], out=out)


def _check_unsupported(ctx: "OnnxContext", q: Value) -> None:
    if ctx.has_input(NONPAD_KV_SEQLEN) and ctx.has_input(4):
        raise ctx.error("nonpad_kv_seqlen cannot be combined with past_key / past_value")
    if ctx.has_input(4) != ctx.has_input(5):
        raise ctx.error("past_key and past_value must be given together")
    precision = ctx.attr("softmax_precision")
    if precision is not None and int(precision) != 1:
        raise ctx.bad_attr("softmax_precision", precision, "only 1 (float32) is supported")
    mode = int(ctx.attr("qk_matmul_output_mode", 0))
    if mode not in QK_MODES:
        raise ctx.bad_attr("qk_matmul_output_mode", mode, "expected 0, 1, 2 or 3")
    if mode == 0 and float(ctx.attr("softcap", 0.0)) > 0 and ctx.output_used(3):
        raise ctx.bad_attr("qk_matmul_output_mode", 0, "with softcap the reference and the spec disagree; "
                           "use mode 1 (after softcap)")
    if q.type.rank not in (3, 4):
        raise ctx.error(f"Q {q.type} must be 3-D or 4-D")
    if q.type.dtype.numpy != np.float32:
        raise ctx.error(f"Attention on {q.type} is not supported; only float32")


def attention(ctx: "OnnxContext") -> list[Value]:
    q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
    _check_unsupported(ctx, q)
    if not q.type.rank == k.type.rank == v.type.rank:
        raise ctx.error(f"Q {q.type}, K {k.type} and V {v.type} must have the same rank")
    three_d = q.type.rank == 3
    q_heads, kv_heads = _heads_attrs(ctx, q)
    if three_d:
        assert q_heads is not None and kv_heads is not None
        q = _split_heads(ctx, q, q_heads, "Q")
        k = _split_heads(ctx, k, kv_heads, "K")
        v = _split_heads(ctx, v, kv_heads, "V")
    b, hq, sq, d = shape_of(q)
    hkv = shape_of(k)[1]
    if shape_of(k)[0] != b or shape_of(v)[:2] != (b, hkv) or shape_of(k)[3] != d or shape_of(v)[2] != shape_of(k)[2]:
        raise ctx.error(f"Q {q.type}, K {k.type}, V {v.type} do not match as [B, H, S, D]")
    if (q_heads is not None and q_heads != hq) or (kv_heads is not None and kv_heads != hkv):
        raise ctx.error(f"q_num_heads={q_heads} / kv_num_heads={kv_heads} do not match Q {q.type}, K {k.type}")
    if hq % hkv:
        raise ctx.error(f"{hq} query heads are not a multiple of {hkv} key/value heads")
    past = shape_of(ctx.input(4))[2] if ctx.has_input(4) else 0
    k = _with_past(ctx, k, 4, 1)
    v = _with_past(ctx, v, 5, 2)
    present_k, present_v = k, v
    skv, dv = shape_of(k)[2], shape_of(v)[3]
    reps = hq // hkv
    mode = int(ctx.attr("qk_matmul_output_mode", 0))
    qk_out = out_index(ctx, 3) if ctx.output_used(3) else None

    def named(stage: int) -> int | None:
        return qk_out if stage == mode else None

    # scores = Q @ K^T * scale, [B, Hq, Sq, Skv]
    scale = float(ctx.attr("scale", 1.0 / math.sqrt(d)))
    grouped_q = reshape(ctx, q, (b, hkv, reps * sq, d))
    scores = ctx.emit("MatMul", [grouped_q, transpose(ctx, k, [0, 1, 3, 2])])
    scores = ctx.emit("Mul", [scores, scalar(ctx, scale, "scale", like=scores)], out=named(0) if reps == 1 else None)
    scores = reshape(ctx, scores, (b, hq, sq, skv), out=named(0) if reps > 1 else None)
    stages = {0: scores}
    softcap = float(ctx.attr("softcap", 0.0))
    if softcap > 0:
        capped = ctx.emit("Tanh", [ctx.emit("Div", [scores, scalar(ctx, softcap, "softcap", like=scores)])])
        scores = ctx.emit("Mul", [capped, scalar(ctx, softcap, "softcap", like=scores)], out=named(1))
    stages[1] = scores
    bias = _mask_bias(ctx, skv, like=q)
    if ctx.has_input(NONPAD_KV_SEQLEN):
        structure_v: Value | None = _nonpad_bias(ctx, b, sq, skv)
    else:
        structure = _constant_structure_mask(ctx, sq, skv, past)
        structure_v = None if structure is None else ctx.const(structure, "causal_mask")
    if structure_v is not None:
        bias = structure_v if bias is None else ctx.emit("Add", [bias, structure_v])
    guard = _needs_row_guard(ctx, bias)
    if bias is not None:
        scores = ctx.emit("Add", [scores, bias], out=named(2))
    stages[2] = scores
    probs = ctx.emit("Softmax", [scores], {"axis": 3}, out=None if guard else named(3))
    if guard:
        assert bias is not None
        probs = _zero_fully_masked_rows(ctx, probs, bias, out=named(3))
    stages[3] = probs

    # Y = probs @ V
    y = ctx.emit("MatMul", [reshape(ctx, probs, (b, hkv, reps * sq, skv)), v])
    if not three_d:
        y = reshape(ctx, y, (b, hq, sq, dv), out=0)
    else:
        y = transpose(ctx, reshape(ctx, y, (b, hq, sq, dv)), [0, 2, 1, 3])
        y = reshape(ctx, y, (b, sq, hq * dv), out=0)
    qk = stages[mode] if qk_out is not None else None
    return [y, present_k, present_v, qk]


# --- LinearAttention -------------------------------------------------------------------------------

UPDATE_RULES = ("linear", "gated", "delta", "gated_delta")


MAX_STEPS = 256  # unrolled: one set of nodes per time step


def _f32(ctx: "OnnxContext", v: Value) -> Value:
    return v if v.type.dtype == DType.f32 else ctx.emit("Cast", [v], {"to": "f32"})


def _heads(ctx: "OnnxContext", v: Value, heads: int, what: str) -> Value:
    """[B, T, H*D] -> [B, T, H, D]."""
    b, t, hd = shape_of(v)
    if hd % heads:
        raise ctx.error(f"{what} {v.type}: last dim {hd} is not a multiple of {heads} heads")
    return reshape(ctx, _f32(ctx, v), (b, t, heads, hd // heads))


def _step(ctx: "OnnxContext", v: Value, t: int, shape: tuple[int, ...]) -> Value:
    """Time step t of a [B, T, ...] tensor, reshaped to `shape`."""
    return reshape(ctx, slice_axis(ctx, v, 1, t, t + 1), shape)


def _check_rule_inputs(ctx: "OnnxContext", rule: str, decay: Value | None, beta: Value | None) -> None:
    gating, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    if gating != (decay is not None):
        raise ctx.error(f"update_rule '{rule}' {'needs' if gating else 'forbids'} decay (input 4)")
    if delta != (beta is not None):
        raise ctx.error(f"update_rule '{rule}' {'needs' if delta else 'forbids'} beta (input 5)")


def linear_attention(ctx: "OnnxContext") -> list[Value]:
    query, key, value = ctx.input(0), ctx.input(1), ctx.input(2)
    past, decay, beta = optional_input(ctx, 3), optional_input(ctx, 4), optional_input(ctx, 5)
    rule = ctx.attr("update_rule", "gated_delta")
    if rule not in UPDATE_RULES:
        raise ctx.bad_attr("update_rule", rule, f"expected one of {', '.join(UPDATE_RULES)}")
    _check_rule_inputs(ctx, rule, decay, beta)
    if query.type.dtype not in (DType.f32, DType.f16) or any(v.type.rank != 3 for v in (query, key, value)):
        raise ctx.error(f"query {query.type}, key {key.type}, value {value.type} must be float32/float16 [B, T, H*D]")
    hq, hkv = int(ctx.attr("q_num_heads", 0)), int(ctx.attr("kv_num_heads", 0))
    if hq <= 0 or hkv <= 0 or hq % hkv:
        raise ctx.error(f"q_num_heads {hq} must be a positive multiple of kv_num_heads {hkv}")
    b, steps, _ = shape_of(query)
    if steps > MAX_STEPS:
        raise ctx.error(f"{steps} time steps; the unrolled composition takes at most {MAX_STEPS}")
    q, k, v = _heads(ctx, query, hq, "query"), _heads(ctx, key, hkv, "key"), _heads(ctx, value, hkv, "value")
    d_k, d_v, group = shape_of(q)[3], shape_of(v)[3], hq // hkv
    if shape_of(k)[3] != d_k:
        raise ctx.error(f"key {key.type} must have head size {d_k} as the query")
    gate_width = beta_heads = 0
    if decay is not None:
        gate_width = shape_of(decay)[2] // hkv
        if decay.type.rank != 3 or shape_of(decay)[2] not in (hkv, hkv * d_k):
            raise ctx.error(f"decay {decay.type} must be [B, T, {hkv}] or [B, T, {hkv * d_k}]")
        decay = reshape(ctx, _f32(ctx, decay), (b, steps, hkv, gate_width))
    if beta is not None:
        beta_heads = shape_of(beta)[2]
        if beta.type.rank != 3 or beta_heads not in (hkv, 1):
            raise ctx.error(f"beta {beta.type} must be [B, T, {hkv}] or [B, T, 1]")
        beta = reshape(ctx, _f32(ctx, beta), (b, steps, beta_heads, 1))
    if past is not None and shape_of(past) != (b, hkv, d_k, d_v):
        raise ctx.error(f"past_state {past.type} must be [{b}, {hkv}, {d_k}, {d_v}]")
    state = _f32(ctx, past) if past is not None else ctx.const(np.zeros((b, hkv, d_k, d_v), np.float32), "state")
    scale = float(ctx.attr("scale", 0.0)) or 1.0 / math.sqrt(d_k)
    outputs = []
    for t in range(steps):
        k_t, v_t = _step(ctx, k, t, (b, hkv, 1, d_k)), _step(ctx, v, t, (b, hkv, 1, d_v))
        if decay is not None:
            state = ctx.emit("Mul", [state, ctx.emit("Exp", [_step(ctx, decay, t, (b, hkv, gate_width, 1))])])
        if beta is not None:
            retrieved = ctx.emit("MatMul", [k_t, state])
            v_t = ctx.emit("Mul", [_step(ctx, beta, t, (b, beta_heads, 1, 1)), ctx.emit("Sub", [v_t, retrieved])])
        outer = ctx.emit("MatMul", [reshape(ctx, k_t, (b, hkv, d_k, 1)), v_t])
        state = ctx.emit("Add", [state, outer])
        q_t = _step(ctx, q, t, (b, hkv, group, d_k))
        read = ctx.emit("Mul", [ctx.emit("MatMul", [q_t, state]), scalar(ctx, scale, "scale", like=state)])
        outputs.append(reshape(ctx, read, (b, 1, hq * d_v)))
    y = ctx.emit("Concat", outputs, {"axis": 1}) if len(outputs) > 1 else outputs[0]
    out_dtype = query.type.dtype
    y = ctx.emit("Cast", [y], {"to": out_dtype.value}, out=0) if out_dtype != DType.f32 else \
        reshape(ctx, y, shape_of(y), out=0)
    if out_index(ctx, 1) is None:
        return [y]
    state_dtype = past.type.dtype if past is not None else out_dtype
    present = ctx.emit("Cast", [state], {"to": state_dtype.value}, out=1) if state_dtype != DType.f32 else \
        reshape(ctx, state, shape_of(state), out=1)
    return [y, present]


# --- RotaryEmbedding -------------------------------------------------------------------------------

def _rotary_layout(ctx: "OnnxContext", x: Value) -> tuple[Value, int]:
    """x as 4-D ([B, H, S, D] for a 4-D input, [B, S, H, D] for a 3-D one) and the heads axis."""
    shape = shape_of(x)
    if len(shape) == 4:
        return x, 1
    if len(shape) != 3:
        raise ctx.error(f"input {x.type} must be [B, H, S, D] or [B, S, hidden]")
    heads = int(ctx.attr("num_heads", 0))
    if heads <= 0 or shape[2] % heads:
        raise ctx.bad_attr("num_heads", heads, f"a 3-D input {x.type} needs num_heads dividing {shape[2]}")
    return reshape(ctx, x, (shape[0], shape[1], heads, shape[2] // heads)), 2


def rotary_embedding(ctx: "OnnxContext") -> list[Value]:
    x, cos, sin = ctx.input(0), ctx.input(1), ctx.input(2)
    require_float(ctx, x, "input")
    x4, heads_axis = _rotary_layout(ctx, x)
    b, _, _, head_size = shape_of(x4)
    seq = shape_of(x4)[3 - heads_axis]
    dim = int(ctx.attr("rotary_embedding_dim", 0)) or head_size
    if dim % 2 or dim > head_size:
        raise ctx.bad_attr("rotary_embedding_dim", dim, f"must be even and at most the head size {head_size}")
    half = dim // 2
    position_ids = optional_input(ctx, 3)
    if position_ids is not None:
        cos, sin = (ctx.emit("Gather", [c, position_ids], {"axis": 0}) for c in (cos, sin))
    for name, c in (("cos_cache", cos), ("sin_cache", sin)):
        if shape_of(c) != (b, seq, half):
            raise ctx.error(f"{name} gives {list(shape_of(c))} per position, expected {[b, seq, half]} "
                            f"(batch, sequence, rotary_embedding_dim / 2)")
    broadcast = (b, 1, seq, half) if heads_axis == 1 else (b, seq, 1, half)
    cos, sin = reshape(ctx, cos, broadcast), reshape(ctx, sin, broadcast)
    interleaved = bool(ctx.attr("interleaved", 0))
    if interleaved:
        x1, x2 = slice_axis(ctx, x4, 3, 0, dim, 2), slice_axis(ctx, x4, 3, 1, dim, 2)
    else:
        x1, x2 = slice_axis(ctx, x4, 3, 0, half), slice_axis(ctx, x4, 3, half, dim)
    real = ctx.emit("Sub", [ctx.emit("Mul", [cos, x1]), ctx.emit("Mul", [sin, x2])])
    imag = ctx.emit("Add", [ctx.emit("Mul", [sin, x1]), ctx.emit("Mul", [cos, x2])])
    if interleaved:
        pairs = [reshape(ctx, v, (*shape_of(v), 1)) for v in (real, imag)]
        rotated = reshape(ctx, ctx.emit("Concat", pairs, {"axis": 4}), (*shape_of(real)[:3], dim))
    else:
        rotated = ctx.emit("Concat", [real, imag], {"axis": 3})
    if dim < head_size:
        rotated = ctx.emit("Concat", [rotated, slice_axis(ctx, x4, 3, dim, head_size)], {"axis": 3})
    return [reshape(ctx, rotated, shape_of(x), out=0)]


CONVERTERS: dict[str, Converter] = {
    "Attention": attention,
    "LinearAttention": linear_attention,
    "RotaryEmbedding": rotary_embedding,
}
