"""TFLite (float models, subgraph 0) -> graph IR with normalized ops (docs/ir.md).

`import_tflite(model)` reads the flatbuffer (reader.py), turns tensors with data into constants,
the subgraph's inputs into graph inputs, then converts operator by operator with the table in
ops.py. Layout: TFLite is NHWC, our Conv/pool ops are NCHW; see layout.py and docs/decisions.md.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from iree_py.errors import CompileError, reported_as_internal
from iree_py.frontends.tflite import reader
from iree_py.frontends.tflite.state_ops import finish_state
from iree_py.frontends.tflite.schema.Model import ModelT
from iree_py.frontends.tflite.schema.Operator import OperatorT
from iree_py.frontends.tflite.schema.TensorType import TensorType as TflType
from iree_py.frontends.tflite.signature import io_quantization, name_tensors, signature_names
from iree_py.frontends.tflite.sparsity import SparsityError, densify
from iree_py.ir.build import NameTable, fold_or_append, make_node
from iree_py.ir.graph import Graph, Value
from iree_py.ir.types import DType, TensorType
from iree_py.ir.verifier import verify

NUMPY_OF = {
    TflType.FLOAT32: np.float32, TflType.FLOAT16: np.float16, TflType.FLOAT64: np.float64,
    TflType.INT32: np.int32, TflType.INT64: np.int64, TflType.INT16: np.int16, TflType.INT8: np.int8,
    TflType.UINT8: np.uint8, TflType.BOOL: np.bool_,
}
TYPE_NAMES = {code: name for name, code in vars(TflType).items() if not name.startswith("_")}


def _text(s: Any) -> str:
    if s is None:
        return ""
    return s.decode("utf-8", "replace") if isinstance(s, (bytes, bytearray)) else str(s)


class TfliteContext:
    """What a converter sees: the operator, its tensors as Values, and ways to emit nodes."""

    def __init__(self, model: ModelT, source: str, subgraph_index: int, names: NameTable | None = None) -> None:
        self.model = model
        self.source = source
        self.subgraph_index = subgraph_index
        self.subgraph = model.subgraphs[subgraph_index]
        self.tensors = self.subgraph.tensors or []
        self.names = names if names is not None else NameTable()  # a body's context shares the main one's
        self.tensor_names = name_tensors(self.names, [_text(t.name) or f"tensor_{i}" for i, t in enumerate(self.tensors)],
                                         signature_names(model, subgraph_index))
        self.env: dict[int, Value] = {}
        self.nchw: dict[int, Value] = {}     # id(NHWC value) -> the same tensor in NCHW (layout.py)
        self.graph_nodes: list = []
        self.op: OperatorT | None = None
        self.op_index = -1
        self.op_name = ""

    # --- errors -------------------------------------------------------------------------------
    def where(self) -> str:
        return f"{self.source}: subgraph {self.subgraph_index}, operator {self.op_index} ({self.op_name})"

    def error(self, message: str) -> CompileError:
        return CompileError(f"{self.where()}: {message}")

    # --- tensors ------------------------------------------------------------------------------
    def tensor_type(self, index: int, what: str) -> TensorType:
        t = self.tensors[index]
        dtype = NUMPY_OF.get(t.type)
        if dtype is None:
            raise CompileError(f"{self.source}: {what} tensor {index} ('{self.tensor_names[index]}') has "
                               f"element type {TYPE_NAMES.get(t.type, t.type)}, not supported")
        shape = tuple(int(d) for d in (t.shape if t.shape is not None else []))
        return TensorType(DType.from_numpy(dtype), shape)

    def readers(self, index: int) -> str:
        """The operators that read tensor `index`, for messages: "operator 3 (DENSIFY)", ..."""
        found = [f"operator {k} ({reader.operator_name(self.model, op.opcodeIndex)})"
                 for k, op in enumerate(self.subgraph.operators or [])
                 if op.inputs is not None and index in [int(i) for i in op.inputs]]
        return ", ".join(found) if found else "no operator"

    def load_constants(self) -> None:
        for i, t in enumerate(self.tensors):
            if t.isVariable:
                raise CompileError(f"{self.source}: tensor {i} ('{self.tensor_names[i]}') is a variable; "
                                   "stateful models are not supported yet")
            data = reader.buffer_bytes(self.model, t.buffer) if t.buffer else None
            if t.sparsity is not None:
                self._load_sparse(i, data)
                continue
            if data is None:
                continue
            ttype = self.tensor_type(i, "constant")
            itemsize = ttype.dtype.numpy.itemsize
            array = data.view(ttype.dtype.numpy) if data.size % itemsize == 0 else None
            if array is None or array.size != ttype.num_elements:
                raise CompileError(f"{self.source}: tensor {i} ('{self.tensor_names[i]}') {ttype} has "
                                   f"{data.size} bytes of data, expected {ttype.num_bytes}")
            self.env[i] = Value(self.tensor_names[i], ttype, const=array.reshape(ttype.shape))

    def _load_sparse(self, i: int, data: np.ndarray | None) -> None:
        """A sparse tensor becomes the dense constant it encodes (sparsity.py)."""
        where = f"{self.source}: sparse tensor {i} ('{self.tensor_names[i]}'), read by {self.readers(i)}"
        if data is None:
            raise CompileError(f"{where}: has no data; only sparse constants are supported")
        ttype = self.tensor_type(i, "constant")
        if data.size % ttype.dtype.itemsize:
            raise CompileError(f"{where}: {data.size} bytes of data is not a whole number of {ttype.dtype} values")
        try:
            dense = densify(data.view(ttype.dtype.numpy), tuple(int(d) for d in ttype.shape), self.tensors[i].sparsity)
        except SparsityError as e:
            raise CompileError(f"{where}: {e}") from None
        self.env[i] = Value(self.tensor_names[i], ttype, const=dense)

    # --- reading the operator -----------------------------------------------------------------
    def _index(self, i: int, outputs: bool = False) -> int:
        assert self.op is not None
        indices = list(self.op.outputs if outputs else self.op.inputs) if \
            (self.op.outputs if outputs else self.op.inputs) is not None else []
        return int(indices[i]) if i < len(indices) else -1

    def has_input(self, i: int) -> bool:
        return self._index(i) >= 0

    def num_inputs(self) -> int:
        assert self.op is not None
        return len(self.op.inputs) if self.op.inputs is not None else 0

    def input(self, i: int) -> Value:
        index = self._index(i)
        if index < 0:
            raise self.error(f"input {i} is required")
        if index not in self.env:
            raise self.error(f"input {i} (tensor {index}, '{self.tensor_names[index]}') is not computed "
                             "before this operator")
        return self.env[index]

    def const_input(self, i: int, what: str) -> np.ndarray:
        v = self.input(i)
        if not v.is_const:
            raise self.error(f"{what} (input {i}, '{v.name}') must be a constant")
        return v.const

    def output_shape(self, i: int = 0) -> tuple[int, ...]:
        index = self._index(i, outputs=True)
        return self.tensor_type(index, "output").shape  # type: ignore[return-value]

    def custom_options(self) -> bytes:
        """A CUSTOM operator's custom_options, as stored (b"" when absent)."""
        assert self.op is not None
        raw = self.op.customOptions
        return b"" if raw is None else np.asarray(raw, dtype=np.uint8).tobytes()

    def options(self, kind: type) -> Any:
        assert self.op is not None
        opts = self.op.builtinOptions
        if opts is None:
            return kind()  # absent options: every field at its schema default
        if not isinstance(opts, kind):
            raise self.error(f"builtin options are {type(opts).__name__}, expected {kind.__name__}")
        return opts

    # --- emitting -----------------------------------------------------------------------------
    def const(self, array: np.ndarray, hint: str) -> Value:
        array = np.asarray(array)
        ttype = TensorType(DType.from_numpy(array.dtype), tuple(int(d) for d in array.shape))
        return Value(self.names.fresh(hint), ttype, const=array)

    def emit(self, op: str, inputs: list[Value], attrs: dict[str, Any] | None = None,
             out: int | None = None) -> Value:
        """Emit a normalized op (evaluated now if all inputs are constants). `out`: the operator
        output whose tensor name the result takes; otherwise a fresh name."""
        name = self.tensor_names[self._index(out, outputs=True)] if out is not None else None
        hint = f"{self.tensor_names[self._index(0, outputs=True)]}_{op.lower()}"
        try:
            node = make_node(self.names, op, inputs, attrs, f"{self.op_name.lower()}_{self.op_index}",
                             out_hint=hint, out_name=name)
        except ValueError as e:
            raise self.error(str(e).split("): ", 1)[-1]) from None
        return fold_or_append(node, self.graph_nodes)

    def reshape(self, v: Value, shape: tuple[int, ...], out: int | None = None) -> Value:
        if tuple(v.type.shape) == tuple(shape) and out is None:
            return v
        return self.emit("Reshape", [v], {"shape": [int(d) for d in shape]}, out=out)


def convert_operators(ctx: TfliteContext) -> None:
    """Convert the operators of `ctx`'s subgraph in order (the main one, or a control-flow body)."""
    from iree_py.frontends.tflite.ops import CONVERTERS  # ops.py imports this module's context type

    for op_index, op in enumerate(ctx.subgraph.operators or []):
        ctx.op, ctx.op_index = op, op_index
        code = reader.operator_code(ctx.model, op.opcodeIndex)
        ctx.op_name = reader.operator_name(ctx.model, op.opcodeIndex)
        convert = CONVERTERS.get(code)
        if convert is None:
            raise ctx.error("op not supported by iree-py")
        with reported_as_internal(f"at {ctx.where()}"):
            results = convert(ctx)
        for i, value in enumerate(results):
            index = ctx._index(i, outputs=True)
            declared = ctx.tensor_type(index, "output")
            if tuple(value.type.shape) != tuple(declared.shape):
                raise ctx.error(f"output {i} ('{ctx.tensor_names[index]}') computed as {value.type}, "
                                f"the model declares {declared}")
            ctx.env[index] = value


def import_tflite(model: str | Path | bytes, dims: dict[str, int] | None = None) -> Graph:
    """Import subgraph 0 of a float TFLite model; CompileError names what is unsupported."""
    model_t, source = reader.read_model(model)
    if not model_t.subgraphs:
        raise CompileError(f"{source}: the model has no subgraphs")
    ctx = TfliteContext(model_t, source, 0)
    ctx.load_constants()
    inputs: list[Value] = []
    for index in ctx.subgraph.inputs if ctx.subgraph.inputs is not None else []:
        index = int(index)
        if index in ctx.env:
            continue
        value = Value(ctx.tensor_names[index], ctx.tensor_type(index, "input"))
        ctx.env[index] = value
        inputs.append(value)

    convert_operators(ctx)

    finish_state(ctx)  # module state (state_ops.py): StateInit/StateRead first, StateWrite last
    outputs, output_names = [], []
    for index in ctx.subgraph.outputs if ctx.subgraph.outputs is not None else []:
        index = int(index)
        if index not in ctx.env:
            raise CompileError(f"{source}: subgraph output tensor {index} ('{ctx.tensor_names[index]}') "
                               "is not computed by any operator")
        outputs.append(ctx.env[index])
        output_names.append(ctx.tensor_names[index])
    graph = Graph("main", inputs, outputs, ctx.graph_nodes, output_names, source)
    graph.quantization = io_quantization(ctx, graph)
    verify(graph)
    return graph
