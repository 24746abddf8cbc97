"""ONNX (opset 7 .. newest in the installed onnx) -> graph IR with normalized ops (docs/ir.md).

`import_onnx(model, dims)` loads the model, turns initializers into constants, fixes the input
shapes (symbolic dims from `dims`), then converts node by node with the table in onnx_ops.py.
A node whose inputs are all constants is evaluated at import (numpy, iree_py/ir/reference.py), so
shape computations and `ConstantOfShape` weights become plain constants.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx.defs
import onnx.helper
import onnx.numpy_helper

from iree_py.errors import CompileError
from iree_py.frontends.onnx_ops import CONVERTERS
from iree_py.ir.build import NameTable, fold_or_append, make_node
from iree_py.ir.graph import Graph, Value
from iree_py.ir.types import DType, TensorType
from iree_py.ir.verifier import verify

MIN_OPSET = 7
MAX_OPSET = onnx.defs.onnx_opset_version()
DEFAULT_DOMAINS = ("", "ai.onnx")


def _load(model: str | Path | bytes | onnx.ModelProto) -> tuple[onnx.ModelProto, str]:
    if isinstance(model, onnx.ModelProto):
        return model, "<ModelProto>"
    if isinstance(model, (bytes, bytearray)):
        source, data = "<bytes>", bytes(model)
    else:
        source = str(model)
        path = Path(model)
        if not path.is_file():
            raise CompileError(f"{source} is not a valid ONNX model: no such file")
        data = path.read_bytes()
    try:
        proto = onnx.ModelProto.FromString(data)
    except Exception as e:  # protobuf's DecodeError and friends
        raise CompileError(f"{source} is not a valid ONNX model: {e}") from None
    if not proto.HasField("graph") or proto.ir_version == 0:
        raise CompileError(f"{source} is not a valid ONNX model: no graph or IR version in the protobuf")
    if source != "<bytes>" and any(t.data_location == onnx.TensorProto.EXTERNAL for t in proto.graph.initializer):
        onnx.load_external_data_for_model(proto, str(Path(source).parent))
    return proto, source


def _default_opset(proto: onnx.ModelProto, source: str) -> int:
    versions = [o.version for o in proto.opset_import if o.domain in DEFAULT_DOMAINS]
    if not versions:
        raise CompileError(f"{source}: the model imports no default-domain (ai.onnx) opset")
    opset = max(versions)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise CompileError(f"{source}: opset {opset} is not supported (iree-py handles {MIN_OPSET}..{MAX_OPSET})")
    return opset


def _dtype(elem_type: int, what: str) -> DType:
    try:
        return DType.from_numpy(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, ValueError):
        name = onnx.TensorProto.DataType.Name(elem_type) if elem_type in onnx.TensorProto.DataType.values() else elem_type
        raise CompileError(f"{what}: unsupported element type {name}") from None


def _input_type(vi: onnx.ValueInfoProto, dims: dict[str, int], source: str) -> TensorType:
    if not vi.type.HasField("tensor_type"):
        raise CompileError(f"{source}: input '{vi.name}' is not a tensor")
    tt = vi.type.tensor_type
    dtype = _dtype(tt.elem_type, f"{source}: input '{vi.name}'")
    if not tt.HasField("shape"):
        raise CompileError(f"{source}: input '{vi.name}' has no shape")
    shape: list[int] = []
    for i, d in enumerate(tt.shape.dim):
        if d.HasField("dim_value"):
            shape.append(int(d.dim_value))
            continue
        symbol = d.dim_param if d.HasField("dim_param") else f"{vi.name}:{i}"
        if symbol not in dims:
            raise CompileError(
                f"{source}: input '{vi.name}' dim {i} is symbolic ('{symbol}'); give its size with "
                f"dims={{'{symbol}': N}} (command line: --dim {symbol}=N)")
        shape.append(int(dims[symbol]))
    return TensorType(dtype, tuple(shape))


class OnnxContext:
    """What a converter sees: the opset, the values so far, and ways to emit nodes/constants."""

    def __init__(self, opset: int, source: str, names: NameTable, used: set[str]) -> None:
        self.opset = opset
        self.source = source
        self.names = names
        self.used = used            # ONNX names read by some node or a graph output
        self.env: dict[str, Value] = {}
        self.graph_nodes: list = []
        self.node: onnx.NodeProto | None = None
        self.node_name = ""

    # --- errors -------------------------------------------------------------------------------
    def where(self) -> str:
        assert self.node is not None
        domain = "" if self.node.domain in DEFAULT_DOMAINS else f", domain {self.node.domain}"
        return f"node '{self.node_name}' (op {self.node.op_type}{domain}, opset {self.opset})"

    def error(self, message: str) -> CompileError:
        return CompileError(f"{self.where()}: {message}")

    def bad_attr(self, attr: str, value: Any, reason: str) -> CompileError:
        return self.error(f"attribute {attr}={value!r} not supported: {reason}")

    # --- reading the node ---------------------------------------------------------------------
    def attr(self, name: str, default: Any = None) -> Any:
        assert self.node is not None
        for a in self.node.attribute:
            if a.name == name:
                value = onnx.helper.get_attribute_value(a)
                if isinstance(value, bytes):
                    return value.decode()
                if isinstance(value, onnx.TensorProto):
                    return onnx.numpy_helper.to_array(value)
                if isinstance(value, list):
                    return [v.decode() if isinstance(v, bytes) else v for v in value]
                return value
        return default

    def has_input(self, i: int) -> bool:
        assert self.node is not None
        return i < len(self.node.input) and self.node.input[i] != ""

    def input(self, i: int) -> Value:
        assert self.node is not None
        if not self.has_input(i):
            raise self.error(f"input {i} is required")
        name = self.node.input[i]
        if name not in self.env:
            raise self.error(f"input '{name}' is not defined before the node (graph not topologically sorted?)")
        return self.env[name]

    def inputs(self) -> list[Value]:
        assert self.node is not None
        return [self.input(i) for i in range(len(self.node.input)) if self.has_input(i)]

    def const_input(self, i: int, what: str) -> np.ndarray:
        v = self.input(i)
        if not v.is_const:
            raise self.error(f"{what} (input {i}, '{v.name}') must be a constant; iree-py needs static shapes")
        return v.const

    def output_used(self, i: int) -> bool:
        assert self.node is not None
        return i < len(self.node.output) and self.node.output[i] != "" and self.node.output[i] in self.used

    # --- emitting -----------------------------------------------------------------------------
    def const(self, array: np.ndarray, hint: str = "", out: int | None = None) -> Value:
        """A constant; named like the node's output `out` when given."""
        array = np.asarray(array)
        try:
            ttype = TensorType(DType.from_numpy(array.dtype), tuple(int(d) for d in array.shape))
        except ValueError:
            raise self.error(f"constant of numpy dtype {array.dtype} not supported") from None
        assert self.node is not None
        name = self.node.output[out] if out is not None else self.names.fresh(hint or f"{self.node_name}_const")
        return Value(name, ttype, const=array)

    def emit(self, op: str, inputs: list[Value], attrs: dict[str, Any] | None = None,
             out: int | None = None, hint: str = "") -> Value:
        """Emit a normalized op (evaluated now if all inputs are constants). `out`: the ONNX output
        index whose name the result takes; otherwise a fresh name from `hint`."""
        assert self.node is not None
        name = self.node.output[out] if out is not None else None
        hint = hint or f"{self.node.output[0] if self.node.output else self.node_name}_{op.lower()}"
        try:
            node = make_node(self.names, op, inputs, attrs, self.node_name, out_hint=hint, out_name=name)
        except ValueError as e:
            raise self.error(str(e).split("): ", 1)[-1]) from None
        return fold_or_append(node, self.graph_nodes)


def import_onnx(model: str | Path | bytes | onnx.ModelProto, dims: dict[str, int] | None = None) -> Graph:
    """Import an ONNX model as a graph of normalized ops; CompileError names what is unsupported."""
    proto, source = _load(model)
    opset = _default_opset(proto, source)
    g = proto.graph
    dims = dict(dims or {})

    all_names = {vi.name for vi in g.input} | {t.name for t in g.initializer}
    for n in g.node:
        all_names.update(n.output)
    used = {name for n in g.node for name in n.input} | {o.name for o in g.output}
    ctx = OnnxContext(opset, source, NameTable(all_names), used)

    for t in g.initializer:
        array = onnx.numpy_helper.to_array(t)
        ctx.env[t.name] = Value(t.name, TensorType(_dtype(t.data_type, f"{source}: initializer '{t.name}'"),
                                                   tuple(int(d) for d in array.shape)), const=array)
    inputs: list[Value] = []
    for vi in g.input:
        if vi.name in ctx.env:
            continue  # an initializer listed as input (old exporters): a constant
        value = Value(vi.name, _input_type(vi, dims, source))
        ctx.env[vi.name] = value
        inputs.append(value)

    for index, n in enumerate(g.node):
        ctx.node = n
        ctx.node_name = n.name or f"{n.op_type}_{index}"
        convert = CONVERTERS.get(n.op_type) if n.domain in DEFAULT_DOMAINS else None
        if convert is None:
            raise ctx.error("op not supported by iree-py")
        results = convert(ctx)
        for name, value in zip(n.output, results):
            if name and value is not None:
                ctx.env[name] = value
        for i, name in enumerate(n.output[len(results):], start=len(results)):
            if name and name in used:
                raise ctx.error(f"output {i} ('{name}') is used but iree-py does not compute it")

    outputs = []
    for o in g.output:
        if o.name not in ctx.env:
            raise CompileError(f"{source}: graph output '{o.name}' is not computed by any node")
        outputs.append(ctx.env[o.name])
    graph = Graph("main", inputs, outputs, ctx.graph_nodes, [o.name for o in g.output], source)
    verify(graph)
    return graph
