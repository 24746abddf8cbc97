"""ONNX ops that make or pass whole tensors: Identity, Dropout (inference: identity), Constant,
ConstantOfShape, Shape, Size, EyeLike and Range, each with its symbolic form (shapes computed from
symbolic dims fold into known values, symbolic.py) and its run-time form where an input arrives at
run time:

  Dropout              ratio / training_mode at run time: identity when training_mode is false or
                       ratio is 0; otherwise the call fails at run time (a check names the node).
  Range (float)     count = max(ceil((limit - start) / delta), 0) computed by small nodes (float64 for
                    f64 inputs, else float32), read as a symbol; y = start + delta * iota(count),
                    computed in float32 (float64) and cast back, as numpy's arange fills f16/bf16.
A count that is NaN (delta 0, NaN inputs) or negative gives an empty Range; counts are capped at
RANGE_MAX_COUNT so the cast to int64 is always defined. Range of constants is a constant; with
symbolic dims start + delta * iota(n), iota an exclusive CumSum of ones.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from iree_py.frontends.onnx.compose import Converter
from iree_py.frontends.onnx.dims import dims_of
from iree_py.frontends.onnx.symbolic import (INDEX_DTYPES, SymbolicConverter, _cast, _const, _length_symbol, _runtime,
                                             _scalar, _static_data, elements, integral, iota, is_known, known_result,
                                             runtime_symbols, shape_input, smax)
from iree_py.ir.graph import Value
from iree_py.ir.symbols import Expr, call
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


def identity(ctx: "OnnxContext") -> list[Value]:
    return [ctx.input(0)]


def dropout(ctx: "OnnxContext") -> list[Value]:
    if ctx.opset >= 12 and ctx.has_input(2) and bool(ctx.const_input(2, "training_mode")):
        raise ctx.error("training_mode=true is not supported (inference only)")
    x = ctx.input(0)
    if not ctx.output_used(1):
        return [x]
    return [x, ctx.const(np.ones(dims_of(x), dtype=np.bool_), out=1)]


def constant(ctx: "OnnxContext") -> list[Value]:
    for attr, dtype in (("value", None), ("value_float", np.float32), ("value_floats", np.float32),
                        ("value_int", np.int64), ("value_ints", np.int64)):
        value = ctx.attr(attr)
        if value is not None:
            return [ctx.const(np.asarray(value, dtype=dtype), out=0)]
    raise ctx.error("only value, value_float(s) and value_int(s) constants are supported")


def constant_of_shape(ctx: "OnnxContext") -> list[Value]:
    shape = tuple(int(d) for d in ctx.const_input(0, "shape").reshape(-1))
    fill = ctx.attr("value")
    fill = np.zeros(1, np.float32) if fill is None else fill.reshape(-1)
    array = np.full(shape, fill[0], dtype=fill.dtype) if math.prod(shape) <= 4096 else \
        np.broadcast_to(fill[:1].reshape(()), shape)  # a read-only view: no memory for big weights
    return [ctx.const(array, out=0)]


def shape(ctx: "OnnxContext") -> list[Value]:
    dims = np.array(dims_of(ctx.input(0)), dtype=np.int64)
    start, end = int(ctx.attr("start", 0)), ctx.attr("end")
    return [ctx.const(dims[start:None if end is None else int(end)], out=0)]


def _runtime_dropout(ctx: "OnnxContext") -> list[Value] | None:
    """Dropout with ratio / training_mode given at run time: identity (mask all true) when
    training_mode is false or ratio is 0; otherwise a run-time check fails (random dropping is not
    implemented)."""
    if ctx.opset < 12 or not (_runtime(ctx, 1) or _runtime(ctx, 2)):
        return None
    x = _static_data(ctx, "Dropout")
    refused: Value | None = None
    if ctx.has_input(2):
        training = ctx.input(2)
        refused = ctx.emit("Cast", [ctx.emit("Reshape", [training], {"shape": [1]})], {"to": DType.bool.value})
    if ctx.has_input(1):
        ratio = ctx.emit("Reshape", [ctx.input(1)], {"shape": [1]})
        dropping = ctx.emit("Not", [ctx.emit("Equal", [ratio, ctx.const(np.zeros(1, ratio.type.dtype.numpy))])])
    else:
        dropping = ctx.const(np.ones(1, np.bool_), "default_ratio_nonzero")
    if refused is None:  # training_mode defaults to false: identity whatever the ratio
        return _identity_outputs(ctx, x)
    refused = ctx.emit("And", [refused, dropping])
    ok = ctx.emit("Cast", [ctx.emit("Not", [refused])], {"to": DType.i64.value},
                  hint=f"{ctx.node_name}_training_mode_is_false_or_ratio_is_0")
    flag = runtime_symbols(ctx, ok, "training_mode")[0]
    n = x.type.num_elements
    # A reshape to n * flag elements and back: its element-count check fails when flag is 0, and
    # the check's message names the node by this name.
    node_name = ctx.node_name
    ctx.node_name = f"{node_name}_training_mode_true_with_ratio_above_0_is_not_supported"
    flat = ctx.emit("Reshape", [x], {"shape": [flag * n]})
    y = ctx.emit("Reshape", [flat], {"shape": list(dims_of(x))}, out=0)
    ctx.node_name = node_name
    return _identity_outputs(ctx, y)


def _identity_outputs(ctx: "OnnxContext", y: Value) -> list[Value]:
    if y.name != ctx.node.output[0]:
        y = ctx.emit("Reshape", [y], {"shape": list(dims_of(y))}, out=0)
    if not ctx.output_used(1):
        return [y]
    return [y, ctx.const(np.ones(dims_of(y), dtype=np.bool_), out=1)]


def eye_like(ctx: "OnnxContext") -> list[Value]:
    import onnx.helper
    x = ctx.input(0)
    if x.type.rank != 2:
        raise ctx.error(f"input {x.type} must be 2-D")
    dtype = x.type.dtype.numpy if ctx.attr("dtype") is None else \
        onnx.helper.tensor_dtype_to_np_dtype(int(ctx.attr("dtype")))
    rows, cols = dims_of(x)
    return [ctx.const(np.eye(rows, cols, int(ctx.attr("k", 0)), dtype=dtype), out=0)]


def size(ctx: "OnnxContext") -> list[Value]:
    return [ctx.const(np.array(math.prod(dims_of(ctx.input(0))), np.int64), out=0)]


def _symbolic_shape(ctx: "OnnxContext") -> list[Value] | None:
    x = ctx.input(0)
    if x.type.is_static:
        return None
    start, end = int(ctx.attr("start", 0)), ctx.attr("end")
    dims = np.empty(x.type.rank, dtype=object)
    dims[:] = list(dims_of(x))
    return [known_result(ctx, dims[start:None if end is None else int(end)], DType.i64)]


def _symbolic_size(ctx: "OnnxContext") -> list[Value] | None:
    x = ctx.input(0)
    if x.type.is_static:
        return None
    return [known_result(ctx, np.array(x.type.element_count, dtype=object), DType.i64)]


def _symbolic_identity(ctx: "OnnxContext") -> list[Value] | None:
    return [ctx.input(0)] if is_known(ctx, ctx.input(0)) else None


def _symbolic_constant_of_shape(ctx: "OnnxContext") -> list[Value] | None:
    shape, _ = shape_input(ctx, 0, "shape")
    if all(isinstance(d, int) for d in shape):
        return None
    fill = ctx.attr("value")
    fill = np.zeros(1, np.float32) if fill is None else np.asarray(fill).reshape(-1)
    scalar = ctx.const(fill[:1].reshape(()), "fill")
    return [ctx.emit("Expand", [scalar], {"shape": shape}, out=0)]


# --- Range -----------------------------------------------------------------------------------------

def range_(ctx: "OnnxContext") -> list[Value]:
    """Range of constants (the causal-mask index math of expanded Attention functions)."""
    start, limit, delta = (ctx.const_input(i, name) for i, name in enumerate(("start", "limit", "delta")))
    for i, (name, v) in enumerate((("start", start), ("limit", limit), ("delta", delta))):
        if v.size != 1:  # the spec says scalar; one-element tensors (as onnx's reference takes) are read as one
            raise ctx.error(f"{name} (input {i}) must be a scalar, got shape {list(v.shape)}")
    start, limit, delta = (v.reshape(()) for v in (start, limit, delta))
    if float(delta) == 0:
        raise ctx.error("delta (input 2) is 0")
    count = max(int(np.ceil((float(limit) - float(start)) / float(delta))), 0)
    values = start + np.arange(count, dtype=start.dtype) * delta
    return [ctx.const(values.astype(start.dtype), out=0)]


def _symbolic_range(ctx: "OnnxContext") -> list[Value] | None:
    """Range with a symbolic length: start + delta * iota(n), iota an exclusive CumSum of ones."""
    values = [ctx.input(i) for i in range(3)]
    if all(v.is_const for v in values):
        return None
    dtype = values[0].type.dtype
    folded = all(v.is_const or is_known(ctx, v) for v in values) and all(
        integral(e) for v in values for e in elements(ctx, v).reshape(-1))
    if dtype not in INDEX_DTYPES and not folded:
        return float_range(ctx, [ctx.tensor_of_known(v.name) if is_known(ctx, v) else v for v in values])
    if folded:  # a length from the symbols, also for whole floats (ultralytics' anchor grids)
        start, limit, delta = (_as_int(elements(ctx, v).reshape(-1)[0]) for v in values)
        if not isinstance(delta, int) or delta == 0:
            raise ctx.error(f"delta (input 2) is {delta}; a Range over symbolic dims needs a nonzero constant delta")
        count = call("ceildiv", limit - start, delta) if delta > 0 else call("ceildiv", start - limit, -delta)
        n = smax(ctx, count, 0)
    else:
        values = [ctx.tensor_of_known(v.name) if is_known(ctx, v) else v for v in values]
        n = runtime_symbols(ctx, _range_count(ctx, values), "Range length")[0]
        start, delta = (elements(ctx, v).reshape(-1)[0] if v.is_const else None for v in (values[0], values[2]))
    one = ctx.const(np.array(1, dtype.numpy), "one")
    iota = ctx.emit("CumSum", [ctx.emit("Expand", [one], {"shape": [n]})], {"axis": 0, "exclusive": 1, "reverse": 0})
    y = iota
    for i, (value, neutral, op) in enumerate(((delta, 1, "Mul"), (start, 0, "Add"))):
        if isinstance(value, int) and value == neutral:
            continue
        tensor = values[2 - 2 * i]
        if is_known(ctx, tensor):
            tensor = ctx.tensor_of_known(tensor.name)
        y = ctx.emit(op, [y, ctx.emit("Reshape", [tensor], {"shape": []}) if tensor.type.rank else tensor])
    return [_named(ctx, y)]


def _as_int(e: Any) -> Any:
    """A whole number (int or float) as an int; an Expr as it is."""
    return e if isinstance(e, Expr) else int(e)


def _range_count(ctx: "OnnxContext", values: list[Value]) -> Value:
    """max(0, ceil((limit - start) / delta)) computed at run time from start/limit/delta tensors:
    a symbol read from it is a length, never negative (push constants are unsigned).
    ceil(a / d) = (a + floormod(-a, d)) / d, an exact division for either sign of d."""
    start, limit, delta = (v if v.type.rank == 0 else ctx.emit("Reshape", [v], {"shape": []}) for v in values)
    zero = ctx.const(np.array(0, start.type.dtype.numpy), "zero")
    span = ctx.emit("Sub", [limit, start])
    rest = ctx.emit("FloorMod", [ctx.emit("Sub", [zero, span]), delta])
    count = ctx.emit("Max", [ctx.emit("Div", [ctx.emit("Add", [span, rest]), delta]), zero])
    return ctx.emit("Reshape", [count], {"shape": [1]}, hint=f"{ctx.node_name}_count")


def _named(ctx: "OnnxContext", y: Value) -> Value:
    """`y` under the node's output name (a no-op Reshape when an earlier op made it)."""
    assert ctx.node is not None
    if y.name == ctx.node.output[0]:
        return y
    return ctx.emit("Reshape", [y], {"shape": list(dims_of(y))}, out=0)


FLOAT_RANGE_DTYPES = (DType.f32, DType.f64, DType.f16, DType.bf16)


RANGE_MAX_COUNT = float(1 << 31)


def float_range(ctx: "OnnxContext", values: list[Value]) -> list[Value]:
    """Range of float start/limit/delta, some given at run time."""
    dtype = values[0].type.dtype
    if dtype not in FLOAT_RANGE_DTYPES:
        raise ctx.error(f"Range of {dtype.value} with a start, limit or delta given at run time is not "
                        f"supported; only int64/int32 and float32/float64/float16/bfloat16")
    if any(v.type.dtype != dtype for v in values) or any(v.type.num_elements != 1 for v in values):
        raise ctx.error(f"start, limit and delta must be scalars of one dtype, got "
                        f"{', '.join(str(v.type) for v in values)}")
    compute = DType.f64 if dtype == DType.f64 else DType.f32
    start, limit, delta = (_cast(ctx, _scalar(ctx, v), compute) for v in values)
    steps = ctx.emit("Ceil", [ctx.emit("Div", [ctx.emit("Sub", [limit, start]), delta])])
    zero, cap = _const(ctx, 0.0, compute, "zero"), _const(ctx, RANGE_MAX_COUNT, compute, "max_count")
    capped = ctx.emit("Where", [ctx.emit("Less", [steps, cap]), steps, cap])
    positive = ctx.emit("Greater", [capped, zero])  # false for NaN
    count = _cast(ctx, ctx.emit("Where", [positive, capped, zero]), DType.i64)
    n = _length_symbol(ctx, count, "Range length")
    y = ctx.emit("Add", [ctx.emit("Mul", [iota(ctx, n, compute), delta]), start])
    return [_cast(ctx, y, dtype, out=0)]


CONVERTERS: dict[str, Converter] = {
    "Identity": identity,
    "Dropout": dropout,
    "Constant": constant,
    "ConstantOfShape": constant_of_shape,
    "Shape": shape,
    "Size": size,
    "EyeLike": eye_like,
    "Range": range_,
}

SYMBOLIC_CONVERTERS: dict[str, SymbolicConverter] = {
    "Shape": _symbolic_shape,
    "Size": _symbolic_size,
    "Identity": _symbolic_identity,
    "Dropout": _runtime_dropout,
    "ConstantOfShape": _symbolic_constant_of_shape,
    "Range": _symbolic_range,
}

# Inputs that determine the output shape: a run-time tensor there selects the symbolic converter.
SHAPE_INPUTS: dict[str, tuple[int, ...]] = {"ConstantOfShape": (0,), "Range": (0, 1, 2), "Dropout": (1, 2)}
