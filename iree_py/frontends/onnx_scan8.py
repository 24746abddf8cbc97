"""ONNX Scan at opset 8 (batch axis 0, scan axis 1, optional sequence_lens) -> one IR Loop per batch element.

Each batch element b becomes an opset-9-style scan (the same body, converted once per element) of
its slices `init_i[b]` and `scan_j[b]`; the final states and scan outputs are stacked back along the
batch axis. A constant sequence_lens scans only `sequence_lens[b]` steps of element b; its scan
outputs are padded with zeros to the maximum sequence length (ONNX leaves those positions undefined;
onnxruntime writes zeros). Refused at compile time: a batch size known only at run time, a
sequence_lens read at run time, a length outside 1..max, and a reverse scan of a shortened sequence
(ONNX does not say where such a scan starts).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import onnx

from iree_py.frontends.onnx_compose import reshape, shape_of
from iree_py.frontends.onnx_control_flow import (_append, _close_body, _convert_body, _open_body,
                                                 _reverse_axis0, _union_captures, scan)
from iree_py.ir.graph import Value
from iree_py.ir.types import DType, TensorType

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext


def _element(ctx: "OnnxContext", v: Value, b: int, length: object, hint: str) -> Value:
    """`v[b, :length]` (or `v[b]` for a state, length None) without its batch axis."""
    shape = shape_of(v)
    ends = [b + 1, *shape[1:]]
    if length is not None:
        ends[1] = length
    attrs = {"starts": [b, *([0] * (len(shape) - 1))], "ends": ends, "steps": [1] * len(shape)}
    sliced = ctx.emit("Slice", [v], attrs, hint=hint)
    return reshape(ctx, sliced, tuple(shape_of(sliced)[1:]))


def _scan_element(ctx: "OnnxContext", proto: onnx.GraphProto, states: list[Value], scanned: list[Value],
                  directions: list[int], b: int) -> list[Value]:
    """One batch element's scan as a Loop: its final states, then its scan outputs (length first)."""
    n = len(states)
    prepared = [_reverse_axis0(ctx, v) if d else v for v, d in zip(scanned, directions)]
    trips = shape_of(prepared[0])[0] if prepared else 0
    child = _open_body(ctx, proto)
    iteration = Value(ctx.names.fresh(f"{ctx.node_name}_b{b}_iteration"), TensorType(DType.i64, ()))
    formals = [Value(ctx.names.fresh(vi.name or f"state_{i}"), v.type)
               for i, (vi, v) in enumerate(zip(proto.input, states))]
    formals += [Value(ctx.names.fresh(vi.name or f"slice_{i}"), TensorType(v.type.dtype, v.type.shape[1:]))
                for i, (vi, v) in enumerate(zip(proto.input[n:], prepared))]
    for vi, v in zip(proto.input, formals):
        child.env[vi.name] = v
    outputs = _convert_body(ctx, child, proto)
    k = len(outputs) - n
    captures = _union_captures(child)
    always = child.const(np.array(1, np.int64), f"{ctx.node_name}_b{b}_always")
    body = _close_body(proto, child, [iteration, *formals], [always, *outputs], captures)
    attrs = {"body": body, "carried": n, "scan_inputs": len(prepared), "scan_outputs": k, "trips": trips}
    trip = ctx.const(np.array(trips if isinstance(trips, int) else np.iinfo(np.int64).max, np.int64),
                     f"{ctx.node_name}_b{b}_trips")
    return _append(ctx, "Loop", [trip, always, *states, *prepared, *captures], attrs, [""] * (n + k))


def _lengths(ctx: "OnnxContext", batch: int, max_len: object, directions: list[int]) -> list[object]:
    if not ctx.has_input(0):
        return [max_len] * batch
    lens_value = ctx.input(0)
    if not lens_value.is_const:
        raise ctx.error("sequence_lens computed at run time is not supported (give it as a constant or initializer)")
    lens = np.asarray(lens_value.const).reshape(-1).astype(np.int64)
    if lens.size != batch:
        raise ctx.error(f"sequence_lens has {lens.size} entries but the batch size is {batch}")
    if not isinstance(max_len, int):
        if not lens.size:
            return []
        raise ctx.error("sequence_lens with a scan length known only at run time is not supported")
    for b, length in enumerate(lens):
        if not 1 <= length <= max_len:
            raise ctx.error(f"sequence_lens[{b}] = {length} is outside 1..{max_len} (the maximum sequence length)")
        if length < max_len and any(directions):
            raise ctx.error(f"sequence_lens[{b}] = {length} is shorter than the maximum {max_len} with a reverse "
                            f"direction: where such a scan starts is not defined")
    return [int(x) for x in lens]


def _pad(ctx: "OnnxContext", v: Value, max_len: object) -> Value:
    shape = shape_of(v)
    if shape[0] == max_len:
        return v
    zeros = ctx.const(np.zeros((int(max_len) - int(shape[0]), *shape[1:]), v.type.dtype.numpy),
                      f"{ctx.node_name}_pad")
    return ctx.emit("Concat", [v, zeros], {"axis": 0})


def scan8(ctx: "OnnxContext") -> list[Value]:
    if ctx.opset >= 9:
        return scan(ctx)
    node = ctx.node
    proto: onnx.GraphProto = ctx.attr("body")
    m = int(ctx.attr("num_scan_inputs"))
    values = [ctx.input(i) if ctx.has_input(i) else None for i in range(1, len(node.input))]
    if any(v is None for v in values):
        raise ctx.error("an initial state or scan input is missing (empty input name)")
    n = len(values) - m
    if n < 0 or len(proto.input) != n + m:
        raise ctx.error(f"body takes {len(proto.input)} inputs for {n} states and {m} scan inputs")
    if m == 0:
        raise ctx.error("Scan-8 with no scan inputs is not supported (its batch size is undefined)")
    states, scanned = values[:n], values[n:]
    directions = [int(d) for d in (ctx.attr("directions") or [0] * m)]
    if len(directions) != m:
        raise ctx.bad_attr("directions", directions, f"expected {m} entries")
    for v in [*states, *scanned]:
        if v.type.rank < 1 or not isinstance(shape_of(v)[0], int):
            raise ctx.error(f"input '{v.name}' {v.type}: Scan-8 needs a batch axis 0 of a size known at compile time")
    for v in scanned:
        if v.type.rank < 2:
            raise ctx.error(f"scan input '{v.name}' {v.type} has no sequence axis 1")
    batches = {shape_of(v)[0] for v in [*states, *scanned]}
    if len(batches) > 1:
        raise ctx.error(f"initial states and scan inputs have different batch sizes {sorted(batches)}")
    seqs = {shape_of(v)[1] for v in scanned}
    if len(seqs) > 1:
        raise ctx.error(f"scan inputs have different maximum sequence lengths {sorted(map(str, seqs))}")
    batch, max_len = batches.pop(), seqs.pop()
    lengths = _lengths(ctx, batch, max_len, directions)
    if batch == 0:
        raise ctx.error("Scan-8 with batch size 0 is not supported")

    per_batch: list[list[Value]] = []
    for b in range(batch):
        elem_states = [_element(ctx, v, b, None, f"{ctx.node_name}_b{b}_state") for v in states]
        elem_scans = [_element(ctx, v, b, lengths[b], f"{ctx.node_name}_b{b}_scan") for v in scanned]
        results = _scan_element(ctx, proto, elem_states, elem_scans, directions, b)
        per_batch.append([*results[:n], *(_pad(ctx, v, max_len) for v in results[n:])])

    finals = []
    for i in range(len(per_batch[0])):
        parts = [reshape(ctx, r[i], (1, *shape_of(r[i]))) for r in per_batch]
        stacked = parts[0] if len(parts) == 1 else ctx.emit("Concat", parts, {"axis": 0})
        finals.append(stacked)
    return finals


SCAN8_CONVERTERS = {"Scan": scan8}
