"""DimValues: a tensor whose elements are dims (ints and symbolic Exprs), computed at run time from
the symbols' values. The ONNX frontend folds shape arithmetic (Shape, Gather, Concat, ...) into
"known values" at import (frontends/onnx/symbolic.py); when an op reads one as data (a Cast to
float, a Mul with a tensor, a Range limit), the value becomes this op. It needs no kernel: the host
program stores each element (vm/lowering.py). Its shape rule and numpy reference are here."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from iree_py.ir.opdef import Kernel, OpDef
from iree_py.ir.types import DType, TensorType

DIM_VALUES = "DimValues"


def dim_values_rule(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    """attrs: values (the elements, flat, ints or Exprs), shape (the tensor's static shape)."""
    shape = tuple(attrs["shape"])
    if not all(isinstance(d, int) and d >= 0 for d in shape):
        raise ValueError(f"DimValues shape {list(shape)} must be static")
    if len(attrs["values"]) != math.prod(shape):
        raise ValueError(f"DimValues has {len(attrs['values'])} values for shape {list(shape)}")
    return [TensorType(DType.i64, shape)]


def dim_values(inputs: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """The reference, on attrs whose Exprs were already evaluated (reference_symbolic.py)."""
    return np.array([int(v) for v in attrs["values"]], np.int64).reshape(tuple(attrs["shape"]))


OP_DEFS = [OpDef(DIM_VALUES, ("shape", "values"), 0, 0, dim_values_rule, dtypes=frozenset({DType.i64}))]
KERNELS: dict[str, Kernel] = {DIM_VALUES: dim_values}
