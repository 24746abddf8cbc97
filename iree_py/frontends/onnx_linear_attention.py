"""ONNX LinearAttention (27) as a composition unrolled over the sequence (MatMul, elementwise).

Per time step t, per key/value head, with state S [d_k, d_v] (zeros or past_state):
    gated:  S = S * exp(decay_t)                      (decay per head, or per key feature)
    delta:  v_t = beta_t * (v_t - k_t S)
    S = S + k_t^T v_t
    out_t = scale * q_t S                             (query head h reads key/value head h // group)
update_rule: linear (neither), gated, delta, gated_delta (both). Computed in float32 (float16
inputs are cast, results cast back), as the ONNX reference does. present_state is the final S.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.frontends.onnx_compose import optional_input, out_index, reshape, scalar, shape_of
from iree_py.frontends.onnx_misc import slice_axis
from iree_py.ir.graph import Value
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

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


LINEAR_ATTENTION_CONVERTERS: dict[str, Callable[["OnnxContext"], list[Value]]] = {
    "LinearAttention": linear_attention,
}
