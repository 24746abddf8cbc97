"""Seeded mutations of ONNX models, as a damaged or hostile file (or a careless exporter) would
write them: flipped and truncated bytes, and edits the protobuf still parses (attribute values and
types, input dims and dtypes, node inputs and op types, initializer dims)."""
from __future__ import annotations

import copy
import random

import onnx

KINDS = ("attr", "dim", "dtype", "input", "op", "bytes", "trunc", "init")
OPS = ("Relu", "Add", "Conv", "Reshape", "Gather", "Concat", "MatMul", "Softmax", "Transpose", "Slice")


def _mutate_attr(m: onnx.ModelProto, rng: random.Random) -> None:
    nodes = [n for n in m.graph.node if n.attribute]
    if not nodes:
        return
    a = rng.choice(rng.choice(nodes).attribute)
    if rng.random() < 0.2:  # the attribute's type: unset, or another one than its value's
        a.type = rng.choice([onnx.AttributeProto.UNDEFINED, onnx.AttributeProto.FLOAT, onnx.AttributeProto.INTS,
                             onnx.AttributeProto.STRING, onnx.AttributeProto.INT])
        return
    if a.type == onnx.AttributeProto.INT:
        a.i = rng.choice([-1, 0, 1, 2, 7, -100, 1 << 40])
    elif a.type == onnx.AttributeProto.INTS and a.ints:
        a.ints[rng.randrange(len(a.ints))] = rng.choice([-1, 0, 1, 3, 100, 1 << 40])
    elif a.type == onnx.AttributeProto.FLOAT:
        a.f = rng.choice([0.0, -1.0, float("nan"), 1e30])
    elif a.type == onnx.AttributeProto.STRING:
        a.s = rng.choice([b"", b"bogus", b"SAME_UPPER"])


def _mutate_input(m: onnx.ModelProto, rng: random.Random, kind: str) -> None:
    tensors = [vi for vi in m.graph.input if vi.type.HasField("tensor_type")]
    if not tensors:
        return
    vi = rng.choice(tensors)
    if kind == "dtype":
        vi.type.tensor_type.elem_type = rng.choice([1, 2, 3, 6, 7, 9, 10, 11, 16, 0, 99])
        return
    dims = vi.type.tensor_type.shape.dim
    if not dims:
        return
    d, roll = rng.choice(dims), rng.random()
    if roll < 0.4:
        d.dim_value = rng.choice([0, 1, -1, 10 ** 12, 3])
    elif roll < 0.7:
        d.dim_param = rng.choice(["n", "?", "", "a.b"])
    else:
        dims.pop()


def mutate(model: onnx.ModelProto, rng: random.Random) -> bytes:
    """One mutant of `model`, as the bytes of a file."""
    m = copy.deepcopy(model)
    kind = rng.choice(KINDS)
    if kind in ("bytes", "trunc"):
        data = bytearray(m.SerializeToString())
        if kind == "trunc":
            return bytes(data[:rng.randrange(len(data))])
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    if kind == "attr":
        _mutate_attr(m, rng)
    elif kind in ("dim", "dtype"):
        _mutate_input(m, rng, kind)
    elif kind == "input" and m.graph.node:
        n = rng.choice(m.graph.node)
        if n.input:
            names = [v.name for v in m.graph.input] + [t.name for t in m.graph.initializer] + ["", "nope"]
            n.input[rng.randrange(len(n.input))] = rng.choice(names)
    elif kind == "op" and m.graph.node:
        rng.choice(m.graph.node).op_type = rng.choice(OPS)
    elif kind == "init" and m.graph.initializer:
        t = rng.choice(m.graph.initializer)
        if t.dims:
            t.dims[rng.randrange(len(t.dims))] = rng.choice([0, 1, 2, 1000])
    return m.SerializeToString()
