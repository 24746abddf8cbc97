"""ONNX (opset 7 .. newest in the installed onnx) -> graph IR with normalized ops (docs/ir.md).

`import_onnx(model, dims)` loads the model, turns initializers into constants, fixes the input
shapes (a symbolic dim gets its size from `dims`, else stays a symbol), then converts node by node
with the table in registry.py. A node whose inputs are all constants is evaluated at import (numpy,
iree_py/ir/reference.py), so shape computations and `ConstantOfShape` weights become plain
constants; on symbolic dims they are folded into Exprs instead (symbolic.py).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import onnx
import onnx.defs
import onnx.helper
import onnx.numpy_helper

from iree_py.errors import CompileError, reported_as_internal
from iree_py.frontends.onnx.registry import CONVERTERS, DOMAIN_CONVERTERS, pick_symbolic_converter
from iree_py.frontends.onnx.strings import check_string_inputs, check_string_results
from iree_py.frontends.onnx.symbolic import InputSymbols
from iree_py.ir.build import NameTable, fold_or_append, make_node
from iree_py.ir.graph import Graph, Value
from iree_py.ir.limits import MAX_TENSOR_ELEMENTS  # refused at import, before anything is allocated
from iree_py.ir.symbols import SymbolicDimError
from iree_py.ir.types import DType, SequenceType, TensorType, is_sequence
from iree_py.ir.verifier import verify

MIN_OPSET = 7    # converters implement opset 7 and later; older models: see _check_old_opset
OLDEST_OPSET = 1
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
    if not OLDEST_OPSET <= opset <= MAX_OPSET:
        raise CompileError(f"{source}: opset {opset} is not supported (iree-py handles {OLDEST_OPSET}..{MAX_OPSET})")
    return opset


def _dtype(elem_type: int, what: str) -> DType:
    try:
        return DType.from_numpy(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, ValueError):
        name = onnx.TensorProto.DataType.Name(elem_type) if elem_type in onnx.TensorProto.DataType.values() else elem_type
        raise CompileError(f"{what}: unsupported element type {name}") from None


def _input_type(vi: onnx.ValueInfoProto, symbols: InputSymbols, source: str) -> TensorType | SequenceType:
    from iree_py.frontends.onnx.sequences import value_type
    if vi.type.WhichOneof("value") in ("sequence_type", "optional_type"):
        return value_type(vi.type, f"{source}: input '{vi.name}'")
    if not vi.type.HasField("tensor_type"):
        raise CompileError(f"{source}: input '{vi.name}' is not a tensor")
    tt = vi.type.tensor_type
    dtype = _dtype(tt.elem_type, f"{source}: input '{vi.name}'")
    if not tt.HasField("shape"):
        raise CompileError(f"{source}: input '{vi.name}' has no shape, so not even its rank is known; write "
                           f"its shape into the model (unknown dims as dim_param names), e.g. with "
                           f"onnx.tools.update_model_dims.update_inputs_outputs_dims")
    shape = [symbols.dim(vi.name, i, d) for i, d in enumerate(tt.shape.dim)]
    if all(isinstance(d, int) for d in shape):
        check_element_count(math.prod(shape), f"{source}: input '{vi.name}' {shape}")
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
        # A control-flow body's context: the enclosing one, and the outer values the body reads
        # (each becomes a trailing body input; the node passes the outer value).
        self.parent: OnnxContext | None = None
        self.captures: list[tuple[Value, Value]] = []  # (outer value, body input)
        self.dequantized: dict[int, tuple[np.ndarray, dict[str, Any]]] = {}  # Graph.dequantized
        # Symbolic shapes (symbolic.py): value name -> its elements (ints and Exprs) for shape
        # vectors computed from symbolic dims, and the symbols read from tensors at run time.
        self.known: dict[str, np.ndarray] = {}
        self.symbol_sources: dict[str, tuple[Value, int]] = {}
        self.runtime_symbols: set[str] = set()  # symbols read from tensors: may be negative
        self.symbols_given: set[str] = set()  # every name symbolic._fresh_symbol handed out here
        # A static converter reads a known value as a tensor computed at run time (ir/ops/dim_values.py),
        # made once per value: shapes are data too.
        self.known_as_tensors = False
        self.materialized: dict[str, Value] = {}

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
        """The node's attribute `name` as a Python value, or `default` when it is absent. A default
        other than None also says what kind of value the op reads (int, float, str, list), and an
        attribute of another kind, or of no type at all, is refused naming both."""
        assert self.node is not None
        for a in self.node.attribute:
            if a.name == name:
                if a.type == onnx.AttributeProto.UNDEFINED:
                    raise self.error(f"attribute '{name}' has no type (AttributeProto.type is UNDEFINED)")
                value = self._attr_value(a)
                if default is not None and not _same_kind(value, default):
                    raise self.error(f"attribute '{name}' is {_kind(value)} "
                                     f"({onnx.AttributeProto.AttributeType.Name(a.type)}); the op reads {_kind(default)}")
                return value
        return default

    @staticmethod
    def _attr_value(a: onnx.AttributeProto) -> Any:
        value = onnx.helper.get_attribute_value(a)
        if isinstance(value, bytes):
            return value.decode()
        if isinstance(value, onnx.TensorProto):
            return onnx.numpy_helper.to_array(value)
        if isinstance(value, list):
            return [v.decode() if isinstance(v, bytes) else v for v in value]
        return value

    def has_input(self, i: int) -> bool:
        assert self.node is not None
        return i < len(self.node.input) and self.node.input[i] != ""

    def input(self, i: int) -> Value:
        assert self.node is not None
        if not self.has_input(i):
            raise self.error(f"input {i} is required")
        name = self.node.input[i]
        value = self.lookup(name)
        if value is None:
            raise self.error(f"input '{name}' is not defined before the node (graph not topologically sorted?)")
        if self.known_as_tensors and name in self.known and not value.is_const:
            return self.tensor_of_known(name)
        return value

    def tensor_of_known(self, name: str) -> Value:
        """Known value `name` (symbolic.py) as a tensor the module computes at run time."""
        if name not in self.materialized:
            from iree_py.frontends.onnx.symbolic import materialize
            self.materialized[name] = materialize(self, name)
        return self.materialized[name]

    def lookup(self, name: str) -> Value | None:
        """The value of ONNX name `name` here; in a body, an outer value becomes a capture."""
        if name in self.env:
            return self.env[name]
        outer = self.parent.lookup(name) if self.parent is not None else None
        if outer is None or outer.is_const:
            return outer
        if self.parent is not None and name in self.parent.known:  # folded here too: nothing to capture
            self.known[name] = self.parent.known[name]
            self.env[name] = outer
            return outer
        inner = Value(outer.name, outer.type)
        self.captures.append((outer, inner))
        self.env[name] = inner
        return inner

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
        if any(not v.type.is_static for v in node.outputs):  # symbolic: computed at run time
            self.graph_nodes.append(node)
            return node.outputs[0]
        for v in node.outputs:
            if isinstance(v.type, TensorType) and v.type.num_elements > MAX_TENSOR_ELEMENTS:
                raise self.error(f"its result {v.type} has {v.type.num_elements} elements, more than the "
                                 f"{MAX_TENSOR_ELEMENTS} iree-py handles")
        return fold_or_append(node, self.graph_nodes)


def constant_value(t: onnx.TensorProto, source: str) -> Value:
    """An initializer (or a constant attribute) as a constant value."""
    what = f"{source}: initializer '{t.name}'"
    dtype = _dtype(t.data_type, what)
    check_element_count(math.prod(t.dims) if all(d >= 0 for d in t.dims) else -1, f"{what} (dims {list(t.dims)})")
    try:
        array = onnx.numpy_helper.to_array(t)
    except (ValueError, TypeError, OverflowError) as e:
        raise CompileError(f"{what}: its data does not hold {list(t.dims)} {dtype.value} elements ({e})") from None
    return Value(t.name, TensorType(dtype, tuple(int(d) for d in array.shape)), const=array)




def check_element_count(count: int, what: str) -> None:
    """Refuse a tensor of `count` elements (-1: a negative dim) that no device could hold."""
    if count < 0:
        raise CompileError(f"{what}: a dim is negative")
    if count > MAX_TENSOR_ELEMENTS:
        raise CompileError(f"{what}: {count} elements is more than the {MAX_TENSOR_ELEMENTS} iree-py handles")


def convert_nodes(ctx: OnnxContext, nodes: Iterable[onnx.NodeProto], prefix: str = "") -> None:
    """Convert `nodes` in order into `ctx` (the model's graph, or a control-flow body)."""
    for index, n in enumerate(nodes):
        ctx.node = n
        ctx.node_name = n.name or f"{prefix}{n.op_type}_{index}"
        with reported_as_internal(f"at {ctx.where()}"):  # a bug: say where (the node), not just what
            try:
                _convert_node(ctx, n)
            except SymbolicDimError as e:  # a converter or rule written for static shapes
                raise ctx.error(f"{e}: this case of {n.op_type} needs static dims; give the symbolic dims "
                                f"values (compile --dim NAME=VALUE)") from None


def _convert_node(ctx: OnnxContext, n: onnx.NodeProto) -> None:
    """Convert one node; its results join ctx.env."""
    convert = (CONVERTERS.get(n.op_type) if n.domain in DEFAULT_DOMAINS
               else DOMAIN_CONVERTERS.get(n.domain, {}).get(n.op_type))
    if convert is None:
        raise ctx.error("op not supported by iree-py")
    if ctx.opset < MIN_OPSET:
        _check_old_opset(ctx, n.op_type)
    if n.domain in DEFAULT_DOMAINS:
        check_attributes(ctx, n)
    check_string_inputs(ctx, n)
    symbolic = pick_symbolic_converter(ctx, n)
    results = symbolic(ctx) if symbolic is not None else None
    if not results:
        ctx.known_as_tensors = True
        try:
            results = convert(ctx)
        finally:
            ctx.known_as_tensors = False
    check_string_results(ctx, n, results)
    for name, value in zip(n.output, results):
        if name and value is not None:
            ctx.env[name] = value
    for i, name in enumerate(n.output[len(results):], start=len(results)):
        if name and name in ctx.used:
            raise ctx.error(f"output {i} ('{name}') is used but iree-py does not compute it")


def check_attributes(ctx: OnnxContext, n: onnx.NodeProto) -> None:
    """The node's attributes against its op's schema at the model's opset: every required one
    present, each of the type the op defines, so converters can read them without checking."""
    try:
        schema = onnx.defs.get_schema(n.op_type, max(ctx.opset, 1), "")
    except onnx.defs.SchemaError:
        return  # an op onnx does not define at this opset: its converter says what is wrong
    given = {a.name: a for a in n.attribute}
    for name, spec in schema.attributes.items():
        a = given.get(name)
        if a is None:
            if spec.required:
                raise ctx.error(f"required attribute '{name}' is missing")
            continue
        if a.type != onnx.AttributeProto.UNDEFINED and not a.ref_attr_name and int(a.type) != int(spec.type):
            raise ctx.error(f"attribute '{name}' is {onnx.AttributeProto.AttributeType.Name(a.type)}; {n.op_type} "
                            f"takes {onnx.AttributeProto.AttributeType.Name(int(spec.type))}")


def _check_old_opset(ctx: OnnxContext, op_type: str) -> None:
    """A model older than opset 7 converts as opset 7 when each of its ops still has the same
    definition at opset 7 (Not, Relu since 6, ...); an op whose definition changed in between
    (legacy broadcast attributes, consumed_inputs) is refused, naming the versions."""
    try:
        then = onnx.defs.get_schema(op_type, ctx.opset).since_version
        now = onnx.defs.get_schema(op_type, MIN_OPSET).since_version
    except onnx.defs.SchemaError:
        raise ctx.error(f"op {op_type} has no definition at opset {ctx.opset}") from None
    if then != now:
        raise ctx.error(f"{op_type} changed between opset {ctx.opset} (version {then}) and {MIN_OPSET} (version "
                        f"{now}); iree-py converts opset {MIN_OPSET} and later: upgrade the model "
                        f"(onnx.version_converter.convert_version(model, {MIN_OPSET}))")


def _bodies(n: onnx.NodeProto) -> list[onnx.GraphProto]:
    """The subgraphs a node holds (If's branches, Loop's and Scan's bodies)."""
    return [g for a in n.attribute for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs))]


def names_used(g: onnx.GraphProto) -> set[str]:
    """Every name a node reads or the graph returns, in `g` and in the bodies nested in it."""
    used = {o.name for o in g.output}
    for n in g.node:
        used.update(n.input)
        for body in _bodies(n):
            used |= names_used(body)
    return used


def names_defined(g: onnx.GraphProto) -> set[str]:
    """Every name `g` and the bodies nested in it define (inputs, initializers, node outputs)."""
    names = {vi.name for vi in g.input} | {t.name for t in g.initializer}
    for n in g.node:
        names.update(n.output)
        for body in _bodies(n):
            names |= names_defined(body)
    return names


def _as_declared(ctx: OnnxContext, o: onnx.ValueInfoProto, v: Value, source: str) -> Value:
    """A graph output declared a sequence whose value is an optional sequence (a Loop carrying
    both) is returned as a sequence (checked at run time to hold one)."""
    from iree_py.frontends.onnx.sequences import retype
    if not is_sequence(v.type) or o.type.WhichOneof("value") != "sequence_type" or v.type.kind != "optional_sequence":
        return v
    ctx.node_name = f"output {o.name}"
    ctx.node = onnx.helper.make_node("Identity", [o.name], [o.name], name=ctx.node_name)
    return retype(ctx, v, SequenceType(v.type.dtype, v.type.rank), f"{o.name}_as_sequence")


def import_onnx(model: str | Path | bytes | onnx.ModelProto, dims: dict[str, int] | None = None) -> Graph:
    """Import an ONNX model as a graph of normalized ops; CompileError names what is unsupported."""
    proto, source = _load(model)
    opset = _default_opset(proto, source)
    g = proto.graph
    dims = dict(dims or {})

    all_names = names_defined(g)
    used = names_used(g)
    ctx = OnnxContext(opset, source, NameTable(all_names), used)

    for t in g.initializer:
        ctx.env[t.name] = constant_value(t, source)
    inputs: list[Value] = []
    symbols = InputSymbols(dims)
    for vi in g.input:
        if vi.name in ctx.env:
            continue  # an initializer listed as input (old exporters): a constant
        value = Value(vi.name, _input_type(vi, symbols, source))
        ctx.env[vi.name] = value
        inputs.append(value)

    convert_nodes(ctx, g.node)

    outputs = []
    for o in g.output:
        if o.name not in ctx.env:
            raise CompileError(f"{source}: graph output '{o.name}' is not computed by any node")
        if o.name in ctx.known and not ctx.env[o.name].is_const:  # a shape computed from symbolic dims
            ctx.node_name = f"output {o.name}"
            ctx.node = onnx.helper.make_node("Identity", [o.name], [f"{o.name}_value"], name=ctx.node_name)
            ctx.env[o.name] = ctx.emit("Reshape", [ctx.tensor_of_known(o.name)],
                                       {"shape": list(ctx.env[o.name].type.shape)}, hint=o.name)
        if isinstance(ctx.env[o.name].type, TensorType) and ctx.env[o.name].type.dtype == DType.string:
            raise CompileError(f"{source}: graph output '{o.name}' is a string tensor; iree-py returns numeric "
                               f"and bool tensors only (string tensors are inputs of Equal, docs/strings.md)")
        outputs.append(_as_declared(ctx, o, ctx.env[o.name], source))
    graph = Graph("main", inputs, outputs, ctx.graph_nodes, [o.name for o in g.output], source)
    graph.dequantized = ctx.dequantized
    graph.symbol_sources = dict(ctx.symbol_sources)  # symbol -> (i64 tensor, flat index) read at run time
    verify(graph)
    return graph


def _kind(value: Any) -> str:
    """What an attribute value is, as an error message says it."""
    if isinstance(value, bool) or isinstance(value, int):
        return "an int"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a {type(value).__name__}"


def _same_kind(value: Any, default: Any) -> bool:
    """Whether `value` is of the kind `default` is (an int where a float is read is fine)."""
    if isinstance(default, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return _kind(value) == _kind(default)

