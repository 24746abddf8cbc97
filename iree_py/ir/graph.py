"""The graph IR: a function of tensors.

A Graph has inputs, outputs and nodes in topological order. Every tensor is a Value; a Value with
`const` set is a compile-time constant (a weight). A Node is one op with its attributes. Ops and
their attributes are normalized by the frontend (see docs/ir.md): no ONNX opset differences remain.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from iree_py.ir.types import TensorType


@dataclass(eq=False)
class Value:
    name: str
    type: TensorType
    const: np.ndarray | None = None  # set for constants; dtype and shape match `type`
    producer: "Node | None" = None

    @property
    def is_const(self) -> bool:
        return self.const is not None

    def __repr__(self) -> str:
        return f"%{self.name}: {self.type}"


@dataclass(eq=False)
class Node:
    op: str
    inputs: list[Value]
    outputs: list[Value]
    attrs: dict[str, Any] = field(default_factory=dict)
    name: str = ""  # the source model's node name, kept for errors and debug info
    # Set by the fusion pass: nodes folded into this one, applied in order to its output.
    fused: list["Node"] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"{self.op}({', '.join('%' + v.name for v in self.inputs)}) -> {[v.name for v in self.outputs]}"


@dataclass(eq=False)
class Graph:
    name: str
    inputs: list[Value]
    outputs: list[Value]
    nodes: list[Node] = field(default_factory=list)
    # The signature's output names, fixed at import: passes may replace output values.
    output_names: list[str] = field(default_factory=list)
    # Where the graph came from, for messages ("model.onnx").
    source: str = ""
    # Signature name of a quantized (int8/uint8) input or output -> (scale, zero point), for the module.
    quantization: dict[str, tuple[float, int]] = field(default_factory=dict)
    # id(float constant) -> (integer array, Dequantize attrs) for constants the ONNX frontend
    # folded from DequantizeLinear: passes/fuse_qdq.py turns QDQ patterns into int8 kernels with them.
    dequantized: dict[int, tuple[Any, dict[str, Any]]] = field(default_factory=dict)
    # Data-dependent symbols (docs/dynamic_shapes.md): symbol -> (value, flat index), "the symbol is
    # element `flat index` of `value` (an i32/i64 tensor) read at run time". Passes that replace a
    # value keep this pointing at live values (replace_uses / rewrite.replace_all_uses do).
    symbol_sources: dict[str, tuple[Value, int]] = field(default_factory=dict)

    def values(self) -> Iterator[Value]:
        """Every value once: inputs, then constants and node results in order."""
        seen: set[int] = set()
        for v in self.inputs:
            seen.add(id(v))
            yield v
        for node in self.nodes:
            for v in [*node.inputs, *node.outputs]:
                if v is not None and id(v) not in seen:
                    seen.add(id(v))
                    yield v
        for v in self.outputs:
            if id(v) not in seen:
                seen.add(id(v))
                yield v

    def users(self) -> dict[int, list[Node]]:
        """id(value) -> nodes that read it."""
        result: dict[int, list[Node]] = {}
        for node in self.nodes:
            for v in node.inputs:
                if v is not None:
                    result.setdefault(id(v), []).append(node)
        return result

    def replace_uses(self, old: Value, new: Value) -> None:
        for node in self.nodes:
            node.inputs = [new if v is old else v for v in node.inputs]
        self.outputs = [new if v is old else v for v in self.outputs]
        self.replace_symbol_sources(old, new)

    def replace_symbol_sources(self, old: Value, new: Value) -> None:
        for symbol, (v, index) in self.symbol_sources.items():
            if v is old:
                self.symbol_sources[symbol] = (new, index)
