"""Build .tflite bytes from a small Python description, with our generated object API (tests only).

    m = TfliteModel()
    x = m.input("x", (1, 8, 8, 3))
    w = m.const("w", weights)                       # float32 (or any numpy dtype) constant
    y = m.tensor("y")                                # shape filled in by `complete_shapes` (tflite_harness)
    q = m.tensor("q", dtype=np.int8, quant=Quant([0.05], [3]))   # int8 with scale/zero point
    m.op("CONV_2D", [x, w, -1], [y], Conv2DOptionsT(...))   # -1: an absent optional input
    m.custom_op("Convolution2DTransposeBias", [x, w, b], [y], options_bytes)   # a CUSTOM operator
    s = m.sparse_const("s", (4, 8), values, Sparsity(...))   # a constant in TFLite's sparse encoding
    m.output(y)
    data = m.build()
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np

from iree_py.frontends.tflite.schema import Buffer as buffer_fb
from iree_py.frontends.tflite.schema.BuiltinOperator import BuiltinOperator
from iree_py.frontends.tflite.schema.BuiltinOptions import BuiltinOptions
from iree_py.frontends.tflite.schema.DimensionMetadata import DimensionMetadataT
from iree_py.frontends.tflite.schema.DimensionType import DimensionType
from iree_py.frontends.tflite.schema.Int32Vector import Int32VectorT
from iree_py.frontends.tflite.schema.Model import ModelT
from iree_py.frontends.tflite.schema.Operator import OperatorT
from iree_py.frontends.tflite.schema.OperatorCode import OperatorCodeT
from iree_py.frontends.tflite.schema.QuantizationParameters import QuantizationParametersT
from iree_py.frontends.tflite.schema.SignatureDef import SignatureDefT
from iree_py.frontends.tflite.schema.SparseIndexVector import SparseIndexVector
from iree_py.frontends.tflite.schema.SparsityParameters import SparsityParametersT
from iree_py.frontends.tflite.schema.SubGraph import SubGraphT
from iree_py.frontends.tflite.schema.Tensor import TensorT
from iree_py.frontends.tflite.schema.TensorMap import TensorMapT
from iree_py.frontends.tflite.schema.TensorType import TensorType
from iree_py.frontends.tflite.schema.Uint8Vector import Uint8VectorT
from iree_py.frontends.tflite.schema.Uint16Vector import Uint16VectorT

TYPE_OF = {np.dtype(np.float32): TensorType.FLOAT32, np.dtype(np.float16): TensorType.FLOAT16,
           np.dtype(np.int32): TensorType.INT32, np.dtype(np.int64): TensorType.INT64,
           np.dtype(np.int8): TensorType.INT8, np.dtype(np.uint8): TensorType.UINT8,
           np.dtype(np.bool_): TensorType.BOOL}
# A sparse index vector's element type -> its SparseIndexVector union member.
INDEX_VECTOR_OF = {np.dtype(np.int32): (SparseIndexVector.Int32Vector, Int32VectorT),
                   np.dtype(np.uint16): (SparseIndexVector.Uint16Vector, Uint16VectorT),
                   np.dtype(np.uint8): (SparseIndexVector.Uint8Vector, Uint8VectorT)}


@dataclass
class Quant:
    """A tensor's QuantizationParameters: real = scale * (q - zero_point), per tensor (one entry) or
    per channel along `axis` (TFLite's quantized_dimension)."""
    scale: list[float]
    zero_point: list[int]
    axis: int = 0

    def to_fb(self) -> QuantizationParametersT:
        q = QuantizationParametersT()
        q.scale = [float(s) for s in self.scale]
        q.zeroPoint = [int(z) for z in self.zero_point]
        q.quantizedDimension = int(self.axis)
        return q


@dataclass
class Level:
    """One entry of dim_metadata: DENSE with its size, or SPARSE_CSR with its segments and indices
    (numpy arrays; their dtype, int32 / uint16 / uint8, picks the index vector type)."""
    dense_size: int = 0
    segments: np.ndarray | None = None
    indices: np.ndarray | None = None

    @property
    def sparse(self) -> bool:
        return self.segments is not None

    def to_fb(self) -> DimensionMetadataT:
        d = DimensionMetadataT()
        if not self.sparse:
            d.format, d.denseSize = DimensionType.DENSE, int(self.dense_size)
            return d
        d.format = DimensionType.SPARSE_CSR
        d.arraySegmentsType, d.arraySegments = _index_vector(self.segments)
        if self.indices is not None:      # None: a malformed level without indices (for error tests)
            d.arrayIndicesType, d.arrayIndices = _index_vector(self.indices)
        return d


def _index_vector(values: np.ndarray) -> tuple[int, Any]:
    array = np.asarray(values)
    kind, table = INDEX_VECTOR_OF[array.dtype]
    vector = table()
    vector.values = [int(v) for v in array.reshape(-1)]
    return kind, vector


@dataclass
class Sparsity:
    """A tensor's SparsityParameters, written as given: traversal_order (n tensor dims, then k block
    dims), block_map (tensor dim of each block dim; None when not block sparse), one Level per
    traversal position."""
    traversal_order: list[int]
    levels: list[Level]
    block_map: list[int] | None = None

    def to_fb(self) -> SparsityParametersT:
        sp = SparsityParametersT()
        sp.traversalOrder = [int(d) for d in self.traversal_order]
        if self.block_map is not None:
            sp.blockMap = [int(d) for d in self.block_map]
        sp.dimMetadata = [level.to_fb() for level in self.levels]
        return sp


class AlignedBufferT(buffer_fb.BufferT):
    """A Buffer whose data vector starts on a 16-byte boundary (the schema's force_align)."""

    def Pack(self, builder: flatbuffers.Builder) -> int:
        data = None
        if self.data is not None:
            payload = bytes(self.data)
            builder.StartVector(1, len(payload), 16)
            builder.head -= len(payload)
            builder.Bytes[builder.head:builder.head + len(payload)] = payload
            builder.vectorNumElems = len(payload)
            data = builder.EndVector()
        buffer_fb.BufferStart(builder)
        if data is not None:
            buffer_fb.BufferAddData(builder, data)
        return buffer_fb.BufferEnd(builder)


def options_type(options: Any) -> int:
    """The BuiltinOptions union type id of an options object (Conv2DOptionsT -> 1)."""
    return getattr(BuiltinOptions, type(options).__name__.removesuffix("T"))


@dataclass
class _Op:
    code: int
    inputs: list[int]
    outputs: list[int]
    options: Any = None
    custom_code: str | None = None          # CUSTOM operators: their name and raw options
    custom_options: bytes | None = None


@dataclass
class TfliteModel:
    tensors: list[TensorT] = field(default_factory=list)
    buffers: list[bytes | None] = field(default_factory=lambda: [None])   # buffer 0: the empty one
    ops: list[_Op] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    signature: str | None = None    # a SignatureDef with this key over the inputs and outputs
    signature_names: dict[int, str] = field(default_factory=dict)   # tensor index -> its name there (default: its own)
    version: int = 3

    def tensor(self, name: str, shape: tuple[int, ...] = (), dtype: Any = np.float32,
               data: np.ndarray | None = None, quant: Quant | None = None) -> int:
        t = TensorT()
        t.name, t.shape, t.type = name, [int(d) for d in shape], TYPE_OF[np.dtype(dtype)]
        if quant is not None:
            t.quantization = quant.to_fb()
        if data is not None:
            self.buffers.append(np.ascontiguousarray(data, dtype=dtype).tobytes())
            t.buffer = len(self.buffers) - 1
        self.tensors.append(t)
        return len(self.tensors) - 1

    def input(self, name: str, shape: tuple[int, ...], dtype: Any = np.float32, quant: Quant | None = None) -> int:
        index = self.tensor(name, shape, dtype, quant=quant)
        self.inputs.append(index)
        return index

    def const(self, name: str, array: np.ndarray, quant: Quant | None = None) -> int:
        array = np.asarray(array)
        return self.tensor(name, array.shape, array.dtype, array, quant)

    def sparse_const(self, name: str, shape: tuple[int, ...], values: np.ndarray, sparsity: Sparsity,
                     quant: Quant | None = None) -> int:
        """A constant of dense shape `shape` stored as `values` (the encoding's values, in order)."""
        values = np.asarray(values)
        index = self.tensor(name, shape, values.dtype, values, quant)
        self.tensors[index].sparsity = sparsity.to_fb()
        return index

    def op(self, code: int | str, inputs: list[int], outputs: list[int], options: Any = None) -> None:
        number = getattr(BuiltinOperator, code) if isinstance(code, str) else code
        self.ops.append(_Op(number, list(inputs), list(outputs), options))

    def custom_op(self, custom_code: str, inputs: list[int], outputs: list[int], options: bytes = b"") -> None:
        self.ops.append(_Op(BuiltinOperator.CUSTOM, list(inputs), list(outputs), None, custom_code, bytes(options)))

    def output(self, index: int) -> None:
        self.outputs.append(index)

    def build(self, *bodies: "TfliteModel") -> bytes:
        """The model: this is subgraph 0; `bodies` (sharing this model's buffers) are subgraphs 1..,
        which WHILE/IF/CALL_ONCE operators refer to by index."""
        return build_subgraphs([self, *bodies], self.version, self._signature() if self.signature else None)

    def subgraph(self) -> "TfliteModel":
        """A new, empty subgraph that shares this model's buffers (pass it to `build`)."""
        return TfliteModel(buffers=self.buffers)

    def _signature(self) -> SignatureDefT:
        sig = SignatureDefT()
        sig.signatureKey, sig.subgraphIndex = self.signature, 0

        def maps(indices: list[int]) -> list[TensorMapT]:
            result = []
            for i in indices:
                m = TensorMapT()
                m.name, m.tensorIndex = self.signature_names.get(i, self.tensors[i].name), i
                result.append(m)
            return result
        sig.inputs, sig.outputs = maps(self.inputs), maps(self.outputs)
        return sig


def build_subgraphs(subs: list[TfliteModel], version: int = 3, signature: SignatureDefT | None = None) -> bytes:
    """One TFLite flatbuffer of the subgraphs `subs` (subs[0] is the main one; all share its buffers)."""
    codes = sorted({(op.code, op.custom_code or "") for sub in subs for op in sub.ops})
    model = ModelT()
    model.version, model.description = version, "iree-py test model"
    model.operatorCodes = []
    for code, custom_code in codes:
        oc = OperatorCodeT()
        oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = code, min(code, 127), 1
        if custom_code:
            oc.customCode = custom_code
        model.operatorCodes.append(oc)
    model.subgraphs = []
    for i, s in enumerate(subs):
        sub = SubGraphT()
        sub.name, sub.tensors, sub.inputs, sub.outputs = "main" if i == 0 else f"subgraph{i}", s.tensors, s.inputs, s.outputs
        sub.operators = []
        for op in s.ops:
            o = OperatorT()
            o.opcodeIndex, o.inputs, o.outputs = codes.index((op.code, op.custom_code or "")), op.inputs, op.outputs
            if op.options is not None:
                o.builtinOptionsType, o.builtinOptions = options_type(op.options), op.options
            if op.custom_options:
                o.customOptions = list(op.custom_options)
            sub.operators.append(o)
        model.subgraphs.append(sub)
    model.buffers = []
    for data in subs[0].buffers:
        b = AlignedBufferT()
        b.data = data
        model.buffers.append(b)
    if signature is not None:
        model.signatureDefs = [signature]
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())
