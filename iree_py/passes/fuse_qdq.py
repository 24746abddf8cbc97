"""fuse-qdq: ONNX QDQ-form int8 graphs -> int8 kernels, as onnxruntime's QDQ fusion does.

    Dequantize(x_q) -> Conv / MatMul (weight: DequantizeLinear of an int8 constant, optional int32
    bias dequantized with scale x_scale * w_scale) -> [Relu] -> Quantize
  becomes
    QConv / QMatMul(x_q, w_q, bias_q) with onnxruntime's float requantization
    (scale = x_scale * w_scale / y_scale in float32, rounded half to even; Relu clamps at y's
    zero point).

The frontend folds a DequantizeLinear of a constant into a float constant and records its
quantized origin in `graph.dequantized` (id of the float constant -> the integer array and the
Dequantize attributes); this pass runs first in the pipeline, while those constants are intact.
A pattern that does not match exactly (a computed weight, per-channel activations, another user
of an intermediate) keeps the float ops, which compute the same values up to float rounding.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from iree_py.ir.build import NameTable, make_node
from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.types import DType, TensorType

QUANT = {DType.i8: "i8", DType.u8: "u8"}
QRANGE = {"i8": (-128, 127), "u8": (0, 255)}


@dataclass
class _Match:
    quantize: Node
    op: Node                   # the Conv or MatMul
    x_q: Value                 # the integer input behind the activation Dequantize
    x_attrs: dict[str, Any]
    relu: bool


def _single_user(graph_users: dict[int, list[Node]], v: Value) -> bool:
    return len(graph_users.get(id(v), [])) == 1


class FuseQdq:
    name = "fuse-qdq"

    def run(self, graph: Graph) -> Graph:
        origins = graph.dequantized
        if not origins:
            return graph
        names = NameTable.of_graph(graph)
        replaced: dict[int, Node] = {}
        users = graph.users()
        outputs = {id(v) for v in graph.outputs}
        for q in graph.nodes:
            match = self._match(q, users, outputs)
            fused = self._fuse(match, origins, names) if match is not None else None
            if fused is not None:
                replaced[id(q)] = fused
        if not replaced:
            return graph
        graph.nodes = [replaced.get(id(n), n) for n in graph.nodes]
        return graph  # the float ops left without users go with dead-code elimination

    def _match(self, q: Node, users: dict[int, list[Node]], outputs: set[int]) -> _Match | None:
        if q.op != "Quantize" or q.fused or len(q.attrs["scale"]) != 1 or q.attrs["rounding"] != "half_even":
            return None
        v, relu = q.inputs[0], False
        producer = v.producer
        if producer is not None and producer.op == "Relu" and not producer.fused:
            if not _single_user(users, v) or id(v) in outputs:
                return None
            relu, v = True, producer.inputs[0]
            producer = v.producer
        if producer is None or producer.op not in ("Conv", "MatMul") or producer.fused:
            return None
        if not _single_user(users, v) or id(v) in outputs:
            return None
        dq = producer.inputs[0].producer
        if dq is None or dq.op != "Dequantize" or dq.fused or len(dq.attrs["scale"]) != 1:
            return None
        if dq.inputs[0].type.dtype not in QUANT:
            return None
        return _Match(q, producer, dq.inputs[0], dq.attrs, relu)

    def _fuse(self, m: _Match, origins: dict[int, tuple[np.ndarray, dict[str, Any]]], names: NameTable) -> Node | None:
        op = m.op
        w = op.inputs[1]
        if not w.is_const or id(w) not in origins:
            return None
        w_q, w_attrs = origins[id(w)]
        if w_q.dtype not in (np.int8, np.uint8):
            return None
        channels = int(w.type.shape[0]) if op.op == "Conv" else int(w.type.shape[-1])
        if op.op == "MatMul" and (w.type.rank != 2 or len(w_attrs["scale"]) not in (1, channels) or
                                  (len(w_attrs["scale"]) > 1 and w_attrs["axis"] != 1)):
            return None
        if op.op == "Conv" and (len(w_attrs["scale"]) not in (1, channels) or
                                (len(w_attrs["scale"]) > 1 and w_attrs["axis"] != 0)):
            return None
        x_scale = np.float32(m.x_attrs["scale"][0])
        w_scales = [np.float32(s) for s in w_attrs["scale"]]
        bias = self._bias(op, origins, x_scale, w_scales, channels, names)
        if bias is False:
            return None
        y_scale, y_dtype = np.float32(m.quantize.attrs["scale"][0]), m.quantize.attrs["dtype"]
        y_zp = int(m.quantize.attrs["zero_point"][0])
        qmin, qmax = QRANGE[y_dtype]
        attrs = {"x_zero_point": int(m.x_attrs["zero_point"][0]), "w_zero_point": [int(z) for z in w_attrs["zero_point"]],
                 "y_zero_point": y_zp, "out_dtype": y_dtype, "act_min": max(qmin, y_zp) if m.relu else qmin,
                 "act_max": qmax, "requant": "float", "multiplier": [], "shift": [],
                 "scale": [float(x_scale * s / y_scale) for s in w_scales]}
        if op.op == "Conv":
            attrs.update({k: op.attrs[k] for k in ("dilations", "group", "pads", "strides")})
        w_value = Value(names.fresh(f"{w.name}_q"), _int_type(w_q), const=w_q)
        inputs = [m.x_q, w_value, *([bias] if bias is not None else [])]
        try:
            node = make_node(names, "QConv" if op.op == "Conv" else "QMatMul", inputs, attrs, op.name,
                             out_name=m.quantize.outputs[0].name)
        except ValueError:
            return None  # an attribute combination the int8 kernels refuse: keep the float ops
        node.outputs = [m.quantize.outputs[0]]
        m.quantize.outputs[0].producer = node
        return node

    @staticmethod
    def _bias(op: Node, origins: dict, x_scale: np.float32, w_scales: list[np.float32], channels: int,
              names: NameTable) -> Value | None | bool:
        """The int32 bias (None: no bias; False: a bias that is not x_scale * w_scale quantized)."""
        b = op.inputs[2] if op.op == "Conv" and len(op.inputs) == 3 else None
        if b is None:
            return None
        if not b.is_const or id(b) not in origins:
            return False
        b_q, b_attrs = origins[id(b)]
        expected = [x_scale * s for s in w_scales]
        scales = [np.float32(s) for s in b_attrs["scale"]]
        if b_q.dtype != np.int32 or any(b_attrs["zero_point"]) or b_q.shape != (channels,):
            return False
        if len(scales) == 1:
            scales = scales * len(expected)
        if len(expected) == 1:
            expected = expected * len(scales)
        if len(scales) != len(expected) or not np.allclose(scales, expected, rtol=1e-6, atol=0):
            return False
        return Value(names.fresh(f"{b.name}_q"), _int_type(b_q), const=b_q)


def _int_type(array: np.ndarray) -> TensorType:
    return TensorType(DType.from_numpy(array.dtype), tuple(int(d) for d in array.shape))
