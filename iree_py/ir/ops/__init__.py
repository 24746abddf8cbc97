"""THE op catalog: every normalized op's shape rule (an OpDef) and numpy reference, one file per op
family, each file ending with its OP_DEFS and KERNELS.

The frontends emit only these ops, the verifier checks nodes against them, codegen implements
exactly them and the numpy reference (iree_py/ir/reference.py) runs them. A shape rule takes the
input types and the attributes and returns the output types, or raises ValueError with what was
wrong (callers add the node name).

  elementwise.py     Add Sub Mul Div Pow Min Max Mod FloorMod PRelu, Relu Sigmoid Tanh LeakyRelu Clip,
                     the unary math ops and activations (Exp, Erf, Gelu, Celu, Sin, ...)
  logic.py           comparisons, And Or Xor Not, Where, IsNaN IsInf, shifts, Bitwise*, StringEqual
  cast.py            Cast, BitCast
  layout.py          Concat, Reshape, Transpose, Slice
  indexing.py        Gather, GatherElements, GatherND, ScatterElements, ScatterND, Expand
  pad.py             Pad
  resize.py          Resize (tap tables), ResizeRuntime
  conv.py            Conv, ConvTranspose, QConvTranspose
  matmul.py          MatMul
  pool.py            MaxPool, MaxPoolIndices, AveragePool, GlobalAveragePool, LpPool
  normalization.py   BatchNormalization, LRN, Softmax, LogSoftmax, Hardmax
  reduce.py          Reduce, ReduceRuntimeAxes, ArgMax, ArgMin, CumSum, CumProd
  topk.py            TopK
  recurrent.py       LSTM, GRU, RNN, QLSTM
  quantized.py       Quantize, Dequantize, QConv, QMatMul, ConvInteger, MatMulInteger, QAdd,
                     QAveragePool, QLookup
  qsoftmax.py        QSoftmax (TFLite's fixed-point softmax)
  data_dependent.py  NonZeroCount, NonZero, UniqueCount, Unique (two-pass ops)
  detection.py       NmsSelect, NmsOutput, RoiAlign
  control_flow.py    If, Loop, Fail
  sequences.py       the sequence and optional ops (no kernel: VM code)
  state.py           StateRead, StateWrite, StateInit (module state)
  dim_values.py      DimValues (a tensor of dims, stored by the host program)

The OpDef record, the dtype sets and the shared window helpers are in iree_py/ir/opdef.py.
"""
from __future__ import annotations

from typing import Any

from iree_py.ir.opdef import Kernel, OpDef, SymbolicShapeError
from iree_py.ir.ops import (cast, control_flow, conv, data_dependent, detection, dim_values, elementwise, indexing,
                            layout, logic, matmul, normalization, pad, pool, qsoftmax, quantized, recurrent, reduce,
                            resize, sequences, state, topk)
from iree_py.ir.ops.layout import slice_length  # noqa: F401  (codegen/llvm/slice.py reads it here)
from iree_py.ir.types import DType, TensorType

FAMILIES = (elementwise, logic, cast, layout, indexing, pad, resize, conv, matmul, pool, normalization, reduce, topk,
            recurrent, quantized, qsoftmax, data_dependent, detection, control_flow, sequences, state, dim_values)


def _one_entry_per_op(tables: list[tuple[str, dict[str, Any]]], what: str) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for family, table in tables:
        for name, entry in table.items():
            if name in merged:
                raise AssertionError(f"{what} of {name} is defined twice (again in ir/ops/{family}.py)")
            merged[name] = entry
    return merged


def _family(module: Any) -> str:
    return module.__name__.rsplit(".", 1)[-1]


OPS: dict[str, OpDef] = _one_entry_per_op([(_family(f), {d.name: d for d in f.OP_DEFS}) for f in FAMILIES], "the OpDef")
KERNELS: dict[str, Kernel] = _one_entry_per_op([(_family(f), f.KERNELS) for f in FAMILIES], "the numpy reference")
ELEMENTWISE_OPS = frozenset(name for name, d in OPS.items() if d.elementwise)


def infer_types(op: str, inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    """Output types of a normalized op; ValueError names what is wrong."""
    opdef = OPS.get(op)
    if opdef is None:
        raise ValueError(f"unknown op {op}")
    if len(inputs) < opdef.min_inputs or (opdef.max_inputs is not None and len(inputs) > opdef.max_inputs):
        raise ValueError(f"{op} takes {opdef.min_inputs}..{opdef.max_inputs or 'any'} inputs, got {len(inputs)}")
    if sorted(attrs) != sorted(opdef.attrs):
        raise ValueError(f"{op} attributes should be {sorted(opdef.attrs)}, got {sorted(attrs)}")
    try:
        return opdef.rule(inputs, attrs)
    except SymbolicShapeError as e:
        raise ValueError(f"{op} has no symbolic shape rule: {e}") from None


def is_float32(t: TensorType) -> bool:
    return t.dtype == DType.f32
