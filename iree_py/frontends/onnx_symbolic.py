"""Symbolic dims in the ONNX frontend (docs/dynamic_shapes.md, "ONNX import of symbolic shapes").

Input dims: a `dim_param` without a size in `dims` becomes a symbol of the same name (made an
identifier); an unknown dim without a name (no dim_param, "?" or "", a negative dim_value) becomes
`<input>_d<axis>`, a symbol of its own (InputSymbols).

Known values: shape arithmetic (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters write
it) is folded at import, as the static path folds it into constants. A value whose elements are
known at import but not all ints (some are Exprs over symbols) is a *known value*: its Value is a
placeholder (no node computes it) and `ctx.known[name]` holds its elements as a numpy object array
of ints, bools and Exprs. The converters in SYMBOLIC_CONVERTERS fold known values (Shape, Size,
Gather, Slice, Concat, Unsqueeze, Squeeze, Reshape, Cast, Identity, Add/Sub/Mul/Div/Max/Min/Neg,
Equal, Where) and consume them as shapes (Reshape, Expand, ConstantOfShape, Range, Tile, Slice,
TopK); any other op reading a known value is an error naming it.

Run-time shape tensors: a shape input that is neither constant nor known (a graph input, or
computed from data) gives one fresh symbol per element, with `graph.symbol_sources[symbol] =
(value, flat_index)`: the lowering reads the element when the value is computed. Such symbols may be
negative (Reshape's -1, Slice's negative starts), so the formulas that use them only assume they
are integers (`ctx.runtime_symbols`).
"""
from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import onnx

from iree_py.frontends.onnx_dims import as_dim, dims_of
from iree_py.ir.graph import Value
from iree_py.ir.symbols import Expr, bounds, call, dim
from iree_py.ir.types import Dim, DType, TensorType

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

SymbolicConverter = Callable[["OnnxContext"], "list[Value] | None"]  # None: use the static converter
BIG = 1 << 62                 # "unbounded" for interval arithmetic
END_OF_AXIS = (1 << 31) - 1   # Slice ends at or past this mean "to the end" (INT32_MAX, INT64_MAX)
INDEX_DTYPES = (DType.i64, DType.i32)


# --- input dims ------------------------------------------------------------------------------------

def symbol_name(text: str) -> str:
    """`text` as an identifier: other characters become '_', a leading digit gets a '_' before it."""
    name = re.sub(r"\W", "_", text.strip()) or "_"
    return "_" + name if name[0].isdigit() else name


ANONYMOUS_PARAMS = ("", "?")  # dim_param values exporters write for "unknown" (Paddle2ONNX: "?")


def unknown_dim_key(input_name: str, axis: int, d: onnx.TensorShapeProto.Dimension) -> str | None:
    """How `dims` names an unknown input dim: its dim_param when it has a real one (every dim with
    that name is one symbol), else "<input>:<axis>" (a dim of its own); None for a known size.

    Exporters write an unknown dim as a dim_param ("batch", "unk__12", "p2o.DynamicDimension.0"),
    as a dim_param of "?" or "", as a negative dim_value (-1), or as neither field. A dim_value of
    0 is a size, as onnxruntime reads it (the ONNX node tests' empty tensors)."""
    if d.HasField("dim_value") and d.dim_value >= 0:
        return None
    if d.HasField("dim_param") and d.dim_param not in ANONYMOUS_PARAMS:
        return d.dim_param
    return f"{input_name}:{axis}"


class InputSymbols:
    """The symbols of a model's unknown input dims: one per distinct dim_param, one per anonymous
    dim (docs/dynamic_shapes.md). Each is an identifier (symbol_name), made unique when two keys
    would give the same one ("a.b" and "a_b")."""

    def __init__(self, dims: dict[str, int]) -> None:
        self.dims = dims
        self.symbols: dict[str, str] = {}   # key (unknown_dim_key) -> symbol

    def dim(self, input_name: str, axis: int, d: onnx.TensorShapeProto.Dimension) -> Dim:
        """One dim of a graph input: its size, the size `dims` gives it, or its symbol."""
        key = unknown_dim_key(input_name, axis, d)
        if key is None:
            return int(d.dim_value)
        symbol = self.symbols.get(key)
        if symbol is None:
            base = symbol_name(key if ":" not in key else f"{input_name}_d{axis}")
            taken = set(self.symbols.values())
            symbol = base if base not in taken else next(f"{base}_{i}" for i in range(2, 1 << 30)
                                                         if f"{base}_{i}" not in taken)
            self.symbols[key] = symbol
        for name in (key, symbol):
            if name in self.dims:
                return int(self.dims[name])
        return Expr.of(symbol)


# --- known values ----------------------------------------------------------------------------------

def is_known(ctx: "OnnxContext", v: Value) -> bool:
    return not v.is_const and v.name in ctx.known


def elements(ctx: "OnnxContext", v: Value) -> np.ndarray | None:
    """The elements of a constant or known value as an object array (Python ints/bools, Exprs)."""
    if v.is_const:
        array = np.asarray(v.const)
        return array.astype(object) if array.dtype.kind in "iub" else array
    return ctx.known.get(v.name)


def _canonical(e: Any) -> Any:
    if isinstance(e, Expr):
        return dim(e)
    if isinstance(e, (bool, np.bool_)):
        return bool(e)
    return int(e) if isinstance(e, (int, np.integer)) else e


def shape_text(array: np.ndarray) -> str:
    return ", ".join(str(e) for e in array.reshape(-1))


def known_result(ctx: "OnnxContext", array: Any, dtype: DType, out: int = 0) -> Value:
    """The node's output `out` with these elements: a constant when they are all numbers, else a
    known value (placeholder Value + ctx.known entry)."""
    array = np.asarray(array, dtype=object)
    flat = [_canonical(e) for e in array.reshape(-1)]
    canonical = np.empty(len(flat), dtype=object)
    canonical[:] = flat
    canonical = canonical.reshape(array.shape)
    if not any(isinstance(e, Expr) for e in flat):
        return ctx.const(np.array(flat, dtype=dtype.numpy).reshape(array.shape), out=out)
    assert ctx.node is not None
    name = ctx.node.output[out]
    ctx.known[name] = canonical
    return Value(name, TensorType(dtype, tuple(int(d) for d in array.shape)))


def _known_inputs(ctx: "OnnxContext") -> tuple[list[Value], list[np.ndarray] | None]:
    """The node's inputs, and their elements when every one is constant or known and one is known."""
    values = ctx.inputs()
    if not any(is_known(ctx, v) for v in values):
        return values, None
    arrays = [elements(ctx, v) for v in values]
    if any(a is None for a in arrays):
        return values, None  # with a run-time tensor: the static converter, on the known ones made tensors
    return values, arrays


def materialize(ctx: "OnnxContext", name: str) -> Value:
    """Known value `name` as a tensor the module computes at run time: a DimValues node (its
    elements evaluated from the symbols, ir/ops_dims.py), cast to the value's dtype."""
    array = ctx.known[name]
    dtype = ctx.env[name].type.dtype
    values = [as_dim(int(e) if isinstance(e, (bool, np.bool_)) else e) for e in array.reshape(-1)]
    tensor = ctx.emit("DimValues", [], {"shape": [int(d) for d in array.shape], "values": values}, hint=f"{name}_value")
    if dtype != DType.i64:
        tensor = ctx.emit("Cast", [tensor], {"to": dtype.value}, hint=f"{name}_as_{dtype.value}")
    return tensor


def integral(e: Any) -> bool:
    """Whether element `e` of a constant or known value is an integer (an int, an Expr, a whole float)."""
    return isinstance(e, (int, np.integer, bool, np.bool_, Expr)) or (isinstance(e, (float, np.floating))
                                                                      and float(e).is_integer())


# --- comparing dims --------------------------------------------------------------------------------

def _ranges(ctx: "OnnxContext", e: Expr) -> dict[str, tuple[int, int]]:
    return {s: (-BIG, BIG) if s in ctx.runtime_symbols else (0, BIG) for s in e.symbols}


def sign_of(ctx: "OnnxContext", a: Any, b: Any) -> int | None:
    """-1, 0 or 1 when a - b has that sign for every value of the symbols (dims >= 0, run-time
    symbols any integer); None when it depends on them."""
    d = Expr.of(as_dim(a)) - Expr.of(as_dim(b))
    if d.constant is not None:
        return (d.constant > 0) - (d.constant < 0)
    try:
        lo, hi = bounds(d, _ranges(ctx, d))
    except ValueError:  # a divisor that can be <= 0
        return None
    if lo > 0:
        return 1
    if hi < 0:
        return -1
    return 0 if lo == hi == 0 else None


def _difference_bounds(ctx: "OnnxContext", a: Any, b: Any) -> tuple[int, int] | None:
    """[lo, hi] of a - b over every value of the symbols; None when unbounded by division."""
    d = Expr.of(as_dim(a)) - Expr.of(as_dim(b))
    if d.constant is not None:
        return d.constant, d.constant
    try:
        return bounds(d, _ranges(ctx, d))
    except ValueError:
        return None


def smax(ctx: "OnnxContext", a: Any, b: Any) -> Dim:
    r = _difference_bounds(ctx, a, b)
    return as_dim(a) if r and r[0] >= 0 else as_dim(b) if r and r[1] <= 0 else dim(call("max", a, b))


def smin(ctx: "OnnxContext", a: Any, b: Any) -> Dim:
    r = _difference_bounds(ctx, a, b)
    return as_dim(a) if r and r[1] <= 0 else as_dim(b) if r and r[0] >= 0 else dim(call("min", a, b))


def _monomial_quotient(a: Expr, divisor: tuple, coefficient: int) -> Expr | None:
    """a / (coefficient * divisor) when that monomial divides every term of a exactly."""
    quotient: Expr = Expr.of(0)
    for monomial, c in a.terms:
        rest = list(monomial)
        for atom in divisor:
            if atom not in rest:
                return None
            rest.remove(atom)
        if c % coefficient:
            return None
        term = Expr.of(c // coefficient)
        for atom in rest:
            term = term * (Expr.of(atom) if isinstance(atom, str) else Expr(((((atom,), 1),))))
        quotient = quotient + term
    return quotient


def exact_div(a: Any, b: Any) -> Dim | None:
    """a / b when it is exact: b one monomial dividing every term of a (batch*seq*64 / (2*batch*seq)),
    or a polynomial b with a = b * q for q one of a's terms over one of b's ((512 + 512*w) / (1 + w))."""
    a, b = Expr.of(as_dim(a)), Expr.of(as_dim(b))
    if len(b.terms) == 1:
        (divisor, coefficient), = b.terms
        quotient = _monomial_quotient(a, divisor, coefficient)
        return None if quotient is None else dim(quotient)
    for term_a in a.terms:
        for divisor, coefficient in b.terms:
            q = _monomial_quotient(Expr((term_a,)), divisor, coefficient)
            if q is not None and (a - b * q).constant == 0:
                return dim(q)
    return None


def floordiv(a: Any, b: Any) -> Dim:
    q = exact_div(a, b)
    return q if q is not None else dim(call("floordiv", a, b))


class Undecided(Exception):
    """A comparison of dims the symbols decide: the op is computed at run time instead."""


def _equal(ctx: "OnnxContext") -> Callable[[Any, Any], bool]:
    def equal(a: Any, b: Any) -> bool:
        s = sign_of(ctx, a, b)
        if s is None:
            raise Undecided(f"{a} == {b}")
        return s == 0
    return equal


def _truncating_div(a: Any, b: Any) -> Dim:
    """ONNX integer Div: truncation toward zero for numbers; floordiv for dims (non-negative)."""
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q
    return floordiv(a, b)


# --- run-time shape tensors ------------------------------------------------------------------------

def _fresh_symbol(ctx: "OnnxContext", hint: str) -> str:
    """A symbol name no value of `ctx` uses and that was not handed out before (callers may take
    several before any value carries them)."""
    taken = set(ctx.symbol_sources) | ctx.symbols_given | set().union(*(v.type.symbols for v in ctx.env.values()))
    name = symbol_name(hint)
    while name in taken:
        name += "_"
    ctx.symbols_given.add(name)
    return name


def runtime_symbols(ctx: "OnnxContext", v: Value, what: str) -> list[Dim]:
    """One symbol per element of the run-time integer tensor `v`, read when `v` is computed."""
    if v.type.dtype not in INDEX_DTYPES:
        raise ctx.error(f"{what} '{v.name}' is {v.type}; a {what} given at run time must be int64 or int32")
    if not v.type.is_static:
        raise ctx.error(f"{what} '{v.name}' ({v.type}) has a symbolic length; its rank must be known at import")
    existing = {k: s for s, (source, k) in ctx.symbol_sources.items() if source is v or source.name == v.name}
    if v.type.dtype == DType.i32:
        v = ctx.emit("Cast", [v], {"to": DType.i64.value}, hint=f"{v.name}_i64")
    symbols: list[Dim] = []
    for k in range(v.type.num_elements):
        name = existing.get(k)
        if name is None:
            name = _fresh_symbol(ctx, f"{v.name}_{k}")
            ctx.symbol_sources[name] = (v, k)
            ctx.runtime_symbols.add(name)
        symbols.append(Expr.of(name))
    return symbols


def shape_input(ctx: "OnnxContext", i: int, what: str) -> tuple[list[Dim], bool]:
    """Input i's elements as dims, and whether they are read at run time (may then be -1, 0, ...)."""
    v = ctx.input(i)
    array = elements(ctx, v)
    if array is not None:
        return [as_dim(e) for e in array.reshape(-1)], False
    return runtime_symbols(ctx, v, what), True


# --- folding known values --------------------------------------------------------------------------

def _elementwise(fn_of: Callable[["OnnxContext"], Callable[..., Any]], result: str = "same") -> SymbolicConverter:
    def convert(ctx: "OnnxContext") -> list[Value] | None:
        values, arrays = _known_inputs(ctx)
        if arrays is None:
            return None
        if any(v.type.dtype.numpy.kind == "f" for v in values) and (
                ctx.node.op_type == "Div" or not all(integral(e) for a in arrays for e in a.reshape(-1))):
            return None  # float arithmetic that may leave the integers: computed at run time
        try:
            out = np.asarray(np.frompyfunc(fn_of(ctx), len(arrays), 1)(*arrays), dtype=object)
        except Undecided:
            return None  # an Equal the symbols decide: on tensors at run time
        dtype = DType.bool if result == "bool" else values[0].type.dtype
        return [known_result(ctx, out, dtype)]
    return convert


def _reduce(op: str) -> SymbolicConverter:
    """ReduceProd / ReduceSum / ReduceMax / ReduceMin of a known value, folded (tf2onnx's Keras
    Reshape: Shape -> Gather -> ReduceProd -> Concat -> Reshape)."""
    def convert(ctx: "OnnxContext") -> list[Value] | None:
        from iree_py.frontends.onnx_reduce import REDUCE_OPS, _normalized_axes, _requested_axes
        x = ctx.input(0)
        if not is_known(ctx, x) or any(is_known(ctx, v) for v in ctx.inputs()[1:]):
            return None
        array = elements(ctx, x)
        axes = _requested_axes(ctx, REDUCE_OPS[op][1])
        if axes is None:
            if ctx.opset >= REDUCE_OPS[op][1] and int(ctx.attr("noop_with_empty_axes", 0)):
                return [known_result(ctx, array, x.type.dtype)]
            axes = list(range(array.ndim))
        combine = {"ReduceProd": lambda a, b: a * b, "ReduceSum": lambda a, b: a + b,
                   "ReduceMax": lambda a, b: smax(ctx, a, b), "ReduceMin": lambda a, b: smin(ctx, a, b)}[op]
        ufunc = np.frompyfunc(combine, 2, 1)
        keepdims = bool(int(ctx.attr("keepdims", 1)))
        for axis in sorted(_normalized_axes(ctx, axes, array.ndim), reverse=True):
            if array.shape[axis] == 0:
                return None  # an empty reduction: the static converter knows its start value
            array = ufunc.reduce(array, axis=axis, keepdims=keepdims)
        return [known_result(ctx, np.asarray(array, dtype=object), x.type.dtype)]
    return convert


def _where(ctx: "OnnxContext") -> list[Value] | None:
    values, arrays = _known_inputs(ctx)
    if arrays is None:
        return None
    cond, a, b = np.broadcast_arrays(*arrays)
    out = np.empty(cond.shape, dtype=object)
    for index in np.ndindex(cond.shape):
        out[index] = a[index] if bool(cond[index]) else b[index]
    return [known_result(ctx, out, values[1].type.dtype)]


def _cast(ctx: "OnnxContext") -> list[Value] | None:
    values, arrays = _known_inputs(ctx)
    if arrays is None:
        return None
    to = DType.from_numpy(onnx.helper.tensor_dtype_to_np_dtype(int(ctx.attr("to"))))
    if to.numpy.kind not in "iuf":
        return None  # (bool, ...): computed at run time
    # A float known value keeps its integer elements (YOLO heads cast a grid size to float for a
    # Range); exact while they stay below 2**24, as real sizes do.
    return [known_result(ctx, arrays[0], to)]


def _shape(ctx: "OnnxContext") -> list[Value] | None:
    x = ctx.input(0)
    if x.type.is_static:
        return None
    start, end = int(ctx.attr("start", 0)), ctx.attr("end")
    dims = np.empty(x.type.rank, dtype=object)
    dims[:] = list(dims_of(x))
    return [known_result(ctx, dims[start:None if end is None else int(end)], DType.i64)]


def _size(ctx: "OnnxContext") -> list[Value] | None:
    x = ctx.input(0)
    if x.type.is_static:
        return None
    return [known_result(ctx, np.array(x.type.element_count, dtype=object), DType.i64)]


def _gather(ctx: "OnnxContext") -> list[Value] | None:
    data, indices = ctx.input(0), ctx.input(1)
    if is_known(ctx, indices):
        raise ctx.error(f"indices '{indices.name}' are computed from symbolic dims; only constant indices "
                        f"into shapes are supported")
    if not is_known(ctx, data):
        return None
    if not indices.is_const:
        raise ctx.error(f"gathers from a shape computed from symbolic dims with the run-time indices "
                        f"'{indices.name}'; only constant indices are supported")
    axis = int(ctx.attr("axis", 0))
    known = elements(ctx, data)
    index = np.asarray(indices.const).astype(np.int64)
    if not -known.ndim <= axis < known.ndim:
        raise ctx.bad_attr("axis", axis, f"out of range for '{data.name}' of rank {known.ndim}")
    size = known.shape[axis]
    if ((index < -size) | (index >= size)).any():  # known at import: refused here, not left to run time
        raise ctx.error(f"indices {index.tolist()} into '{data.name}' (computed from symbolic dims) are outside the "
                        f"range [{-size}, {size - 1}] of axis {axis}")
    taken = np.take(known, index, axis=axis)
    return [known_result(ctx, taken, data.type.dtype)]


def _concat(ctx: "OnnxContext") -> list[Value] | None:
    values, arrays = _known_inputs(ctx)
    if arrays is None:
        return None
    axis = int(ctx.attr("axis", 0))
    return [known_result(ctx, np.concatenate(arrays, axis=axis), values[0].type.dtype)]


def _const_ints(ctx: "OnnxContext", i: int, what: str) -> list[int]:
    return [int(a) for a in np.asarray(ctx.const_input(i, what)).reshape(-1)]


def _axes(ctx: "OnnxContext") -> list[int] | None:
    if ctx.opset < 13:
        axes = ctx.attr("axes")
        return None if axes is None else [int(a) for a in axes]
    return _const_ints(ctx, 1, "axes") if ctx.has_input(1) else None


def _unsqueeze(ctx: "OnnxContext") -> list[Value] | None:
    x = ctx.input(0)
    if not is_known(ctx, x):
        return None
    axes = _axes(ctx) or []
    rank = x.type.rank + len(axes)
    out = np.expand_dims(elements(ctx, x), tuple(sorted(a + rank if a < 0 else a for a in axes)))
    return [known_result(ctx, out, x.type.dtype)]


def _squeeze(ctx: "OnnxContext") -> list[Value] | None:
    x = ctx.input(0)
    if not is_known(ctx, x):
        return None
    axes = _axes(ctx)
    array = elements(ctx, x)
    out = np.squeeze(array) if axes is None else np.squeeze(array, tuple(a % array.ndim for a in axes))
    return [known_result(ctx, out, x.type.dtype)]


def _identity(ctx: "OnnxContext") -> list[Value] | None:
    return [ctx.input(0)] if is_known(ctx, ctx.input(0)) else None


# --- consumers: shapes from known values and run-time tensors --------------------------------------

def _reshape_known(ctx: "OnnxContext", x: Value) -> list[Value]:
    array = elements(ctx, x)
    requested = _const_ints(ctx, 1, "shape")
    target = [array.shape[i] if d == 0 and not ctx.attr("allowzero", 0) else d for i, d in enumerate(requested)]
    return [known_result(ctx, array.reshape(target), x.type.dtype)]


def resolve_reshape(ctx: "OnnxContext", x: Value, requested: list[Dim], allow_zero: bool) -> list[Dim]:
    """Reshape's target dims (ints and dims known at import) over a (possibly symbolic) input: 0
    copies the input dim (unless allowzero), -1 is total // product(others)."""
    src = dims_of(x)
    if sum(1 for d in requested if isinstance(d, int) and d == -1) > 1:
        raise ctx.error(f"shape {requested} has more than one -1")
    bases: list[Dim] = []
    minus_one: list[Dim] = []
    for i, d in enumerate(requested):
        if isinstance(d, int):
            if d == 0 and not allow_zero:
                if i >= len(src):
                    raise ctx.error(f"shape {requested}: 0 at index {i} but input {x.type} has rank {len(src)}")
                d = src[i]
            if isinstance(d, int) and d < -1:
                raise ctx.error(f"shape {requested} has the negative size {d}")
            bases.append(1 if d == -1 else d)
            minus_one.append(1 if d == -1 else 0)
        else:
            bases.append(d)
            minus_one.append(0)
    if all(n == 0 for n in minus_one):
        return bases
    product = math.prod(bases)
    exact = exact_div(x.type.element_count, product)  # else a 0 dim must not divide by zero
    inferred = exact if exact is not None else dim(call("floordiv", x.type.element_count, smax(ctx, product, 1)))
    return [as_dim(b + n * (inferred - 1)) if n != 0 else b for b, n in zip(bases, minus_one)]


def resolved_shape_tensor(ctx: "OnnxContext", x: Value, shape: Value, allow_zero: bool) -> Value:
    """Reshape's run-time target shape with ONNX's 0 and -1 resolved by i64 ops, for a static input:
    0 -> the input dim, -1 -> element count // product of the others. The symbols read from it are
    dims, never negative (kernels get symbols as unsigned push constants)."""
    i64 = DType.i64.numpy
    if shape.type.dtype != DType.i64:
        shape = ctx.emit("Cast", [shape], {"to": DType.i64.value})
    count = shape.type.num_elements
    if not allow_zero:
        src = list(dims_of(x)) + [0] * max(0, count - x.type.rank)
        is_zero = ctx.emit("Equal", [shape, ctx.const(np.zeros(count, i64), "zeros")])
        shape = ctx.emit("Where", [is_zero, ctx.const(np.array(src[:count], i64), "input_dims"), shape])
    is_inferred = ctx.emit("Equal", [shape, ctx.const(np.array(-1, i64), "minus_one")])
    known = ctx.emit("Where", [is_inferred, ctx.const(np.array(1, i64), "one"), shape])
    product: Value | None = None
    for k in range(count):
        part = ctx.emit("Slice", [known], {"starts": [k], "ends": [k + 1], "steps": [1]})
        product = part if product is None else ctx.emit("Mul", [product, part])
    assert product is not None  # at least 1: a 0 dim without -1 must not divide by zero
    product = ctx.emit("Max", [product, ctx.const(np.array(1, i64), "one")])
    inferred = ctx.emit("Div", [ctx.const(np.array([x.type.num_elements], i64), "element_count"), product])
    return ctx.emit("Where", [is_inferred, inferred, shape], hint=f"{ctx.node_name}_resolved_shape")


def _reshape(ctx: "OnnxContext") -> list[Value] | None:
    x = ctx.input(0)
    if is_known(ctx, x):
        return _reshape_known(ctx, x)
    if ctx.opset < 5:
        return None
    shape = ctx.input(1)
    if x.type.is_static and elements(ctx, shape) is None and shape.type.is_static and shape.type.num_elements:
        resolved = resolved_shape_tensor(ctx, x, shape, bool(ctx.attr("allowzero", 0)))
        return [ctx.emit("Reshape", [x], {"shape": runtime_symbols(ctx, resolved, "shape")}, out=0)]
    if elements(ctx, shape) is None:
        raise ctx.error(f"a Reshape of {x.type} (symbolic dims) to a shape given at run time ('{shape.name}') is "
                        f"not supported: its 0 and -1 entries cannot be resolved without the input's dims as a tensor")
    requested, _ = shape_input(ctx, 1, "shape")
    if x.type.is_static and all(isinstance(d, int) for d in requested):
        return None
    target = resolve_reshape(ctx, x, requested, bool(ctx.attr("allowzero", 0)))
    return [ctx.emit("Reshape", [x], {"shape": target}, out=0)]


def broadcast(ctx: "OnnxContext", a: Dim, b: Dim) -> Dim:
    """One dim of a bidirectional broadcast (Expand); a run-time check when it depends on symbols."""
    if isinstance(b, int) and b == 1:
        return a
    if isinstance(a, int) and a == 1:
        return b
    if sign_of(ctx, a, b) == 0:
        return a
    if isinstance(a, int) and isinstance(b, int):
        raise ctx.error(f"dims {a} and {b} do not broadcast")
    try:
        from iree_py.ir.dim_checks import broadcast_dim  # dyn_rules: records the run-time check
    except ImportError:
        return smax(ctx, a, b)
    return as_dim(broadcast_dim(a, b, f"Expand of dims {a} and {b}"))


def _expand(ctx: "OnnxContext") -> list[Value] | None:
    x = ctx.input(0)
    requested, runtime = shape_input(ctx, 1, "shape")
    if x.type.is_static and not runtime and all(isinstance(d, int) for d in requested):
        return None
    src = list(dims_of(x))
    rank = max(len(src), len(requested))
    src = [1] * (rank - len(src)) + src
    requested = [1] * (rank - len(requested)) + list(requested)
    shape = [broadcast(ctx, a, b) for a, b in zip(src, requested)]
    if shape == list(dims_of(x)):
        return [x]
    return [ctx.emit("Expand", [x], {"shape": shape}, out=0)]


def _constant_of_shape(ctx: "OnnxContext") -> list[Value] | None:
    shape, _ = shape_input(ctx, 0, "shape")
    if all(isinstance(d, int) for d in shape):
        return None
    fill = ctx.attr("value")
    fill = np.zeros(1, np.float32) if fill is None else np.asarray(fill).reshape(-1)
    scalar = ctx.const(fill[:1].reshape(()), "fill")
    return [ctx.emit("Expand", [scalar], {"shape": shape}, out=0)]


def _range(ctx: "OnnxContext") -> list[Value] | None:
    """Range with a symbolic length: start + delta * iota(n), iota an exclusive CumSum of ones."""
    values = [ctx.input(i) for i in range(3)]
    if all(v.is_const for v in values):
        return None
    dtype = values[0].type.dtype
    folded = all(v.is_const or is_known(ctx, v) for v in values) and all(
        integral(e) for v in values for e in elements(ctx, v).reshape(-1))
    if dtype not in INDEX_DTYPES and not folded:
        from iree_py.frontends.onnx_signal_rt import float_range
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


def _tile(ctx: "OnnxContext") -> list[Value] | None:
    from iree_py.frontends.onnx_indexing import _expand_to, _reshape as reshape
    x = ctx.input(0)
    repeats, runtime = shape_input(ctx, 1, "repeats")
    if x.type.is_static and not runtime and all(isinstance(r, int) for r in repeats):
        return None
    dims = dims_of(x)
    if len(repeats) != len(dims):
        raise ctx.error(f"repeats {repeats} must be {len(dims)} counts for input {x.type}")
    split, expanded = [], []
    for d, r in zip(dims, repeats):
        if not (isinstance(r, int) and r == 1):
            split.append(1)
            expanded.append(r)
        split.append(d)
        expanded.append(d)
    y = _expand_to(ctx, reshape(ctx, x, tuple(split)), tuple(expanded))
    return [reshape(ctx, y, tuple(as_dim(d * r) for d, r in zip(dims, repeats)), out=0)]


def _slice_bound(ctx: "OnnxContext", index: Dim, size: Dim) -> Dim:
    """A positive-step Slice start or end clamped into [0, size] (negative counts from the end)."""
    if isinstance(index, int):
        if index >= END_OF_AXIS:
            return size
        if index <= -END_OF_AXIS:
            return 0
        return smin(ctx, index, size) if index >= 0 else smax(ctx, as_dim(size + index), 0)
    return smin(ctx, index, size)  # a dim known at import: non-negative


def _slice(ctx: "OnnxContext") -> list[Value] | None:
    x = ctx.input(0)
    if is_known(ctx, x):
        return _slice_known(ctx, x)
    if ctx.opset < 10:
        from iree_py.frontends.onnx_ops import _slice_lists
        starts, ends, axes, steps = _slice_lists(ctx)
    else:
        count = ctx.input(1).type.num_elements if ctx.input(1).type.is_static else 0
        axes = _const_ints(ctx, 3, "axes") if ctx.has_input(3) else list(range(count))
        steps = _const_ints(ctx, 4, "steps") if ctx.has_input(4) else [1] * count
        if any(not -x.type.rank <= a < x.type.rank for a in axes):
            raise ctx.bad_attr("axes", axes, f"an axis is out of range for {x.type}")
        runtime = any(elements(ctx, ctx.input(i)) is None for i in (1, 2))
        if runtime and x.type.is_static and all(s > 0 for s in steps) and len(axes) == count:
            begin, end = _clamped_bounds(ctx, x, axes)  # resolved by i64 ops: the symbols are >= 0
            starts, ends = runtime_symbols(ctx, begin, "starts"), runtime_symbols(ctx, end, "ends")
        elif runtime:
            raise ctx.error(f"a Slice of {x.type} with starts/ends given at run time is supported for a static "
                            f"input with positive steps only")
        else:
            starts, ends = shape_input(ctx, 1, "starts")[0], shape_input(ctx, 2, "ends")[0]
            if x.type.is_static and all(isinstance(d, int) for d in starts + ends):
                return None
    shape = list(dims_of(x))
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} differ in length")
    full: dict[str, list[Dim]] = {"starts": [0] * len(shape), "ends": list(shape), "steps": [1] * len(shape)}
    for axis, start, end, step in zip(axes, starts, ends, steps):
        axis = axis + len(shape) if axis < 0 else axis
        size = shape[axis]
        if step <= 0:
            if isinstance(size, int) and isinstance(start, int) and isinstance(end, int):
                from iree_py.frontends.onnx_ops import normalize_slice
                full["starts"][axis], full["ends"][axis] = normalize_slice(size, start, end, step)
                full["steps"][axis] = step
                continue
            raise ctx.error(f"Slice with step {step} on the symbolic axis {axis} of {x.type} is not supported")
        begin = _slice_bound(ctx, start, size)
        full["starts"][axis] = begin
        full["ends"][axis] = smax(ctx, _slice_bound(ctx, end, size), begin)
        full["steps"][axis] = step
    if full == {"starts": [0] * len(shape), "ends": list(shape), "steps": [1] * len(shape)}:
        return [x]
    return [ctx.emit("Slice", [x], full, out=0)]


def _clamped_bounds(ctx: "OnnxContext", x: Value, axes: list[int]) -> tuple[Value, Value]:
    """A static input's Slice starts and ends (inputs 1, 2; positive steps) clamped into [0, dim] at
    run time: negative ones count from the end, and end >= start."""
    i64 = DType.i64.numpy
    rank = x.type.rank
    sizes = ctx.const(np.array([dims_of(x)[a + rank if a < 0 else a] for a in axes], i64), "axis_sizes")
    zero = ctx.const(np.array(0, i64), "zero")
    bounds_: list[Value] = []
    for i, what in ((1, "starts"), (2, "ends")):
        v = ctx.input(i)
        if v.type.dtype not in INDEX_DTYPES:
            raise ctx.error(f"{what} '{v.name}' is {v.type}; a {what} given at run time must be int64 or int32")
        if v.type.dtype != DType.i64:
            v = ctx.emit("Cast", [v], {"to": DType.i64.value})
        from_end = ctx.emit("Where", [ctx.emit("Less", [v, zero]), ctx.emit("Add", [v, sizes]), v])
        hint = f"{ctx.node_name}_{what}" if what == "starts" else f"{ctx.node_name}_ends_clamped"
        bounds_.append(ctx.emit("Min", [ctx.emit("Max", [from_end, zero]), sizes], hint=hint))
    begin, end = bounds_
    return begin, ctx.emit("Max", [end, begin], hint=f"{ctx.node_name}_ends")


def _slice_known(ctx: "OnnxContext", x: Value) -> list[Value]:
    array = elements(ctx, x)
    if ctx.opset < 10:
        from iree_py.frontends.onnx_ops import _slice_lists
        starts, ends, axes, steps = _slice_lists(ctx)
    else:
        starts, ends = _const_ints(ctx, 1, "starts"), _const_ints(ctx, 2, "ends")
        axes = _const_ints(ctx, 3, "axes") if ctx.has_input(3) else list(range(len(starts)))
        steps = _const_ints(ctx, 4, "steps") if ctx.has_input(4) else [1] * len(starts)
    index = [slice(None)] * array.ndim
    for axis, start, end, step in zip(axes, starts, ends, steps):
        index[axis] = slice(start, end, step)
    return [known_result(ctx, array[tuple(index)], x.type.dtype)]


def _split(ctx: "OnnxContext") -> list[Value] | None:
    """Split of a symbolic axis, or by sizes given at run time: Slices at the running offsets."""
    x = ctx.input(0)
    rank = x.type.rank
    axis = int(ctx.attr("axis", 0))
    if not -rank <= axis < rank:
        raise ctx.bad_attr("axis", axis, f"out of range for {x.type}")
    axis = axis + rank if axis < 0 else axis
    size = dims_of(x)[axis]
    count = len(ctx.node.output) if ctx.node is not None else 1
    if ctx.opset >= 13 and ctx.has_input(1):
        sizes, runtime = shape_input(ctx, 1, "split")
        if isinstance(size, int) and not runtime and all(isinstance(s, int) for s in sizes):
            return None
    elif ctx.opset < 13 and ctx.attr("split") is not None:
        if isinstance(size, int):
            return None
        sizes = [int(s) for s in ctx.attr("split")]
    elif isinstance(size, int):
        return None
    elif ctx.opset >= 18 and ctx.attr("num_outputs") is not None:
        count = int(ctx.attr("num_outputs"))
        part = dim(call("ceildiv", size, count))
        sizes = [part] * (count - 1) + [as_dim(size - part * (count - 1))]
    else:
        part = floordiv(size, count)  # ONNX wants size % count == 0; the last part takes any rest
        sizes = [part] * (count - 1) + [as_dim(size - part * (count - 1))]
    if len(sizes) != count:
        raise ctx.error(f"split sizes {sizes} must be {count} sizes, one per output")
    shape = list(dims_of(x))
    results, offset = [], 0
    for i, n in enumerate(sizes):
        starts: list[Dim] = [0] * rank
        ends: list[Dim] = list(shape)
        starts[axis], ends[axis] = as_dim(offset), as_dim(offset + n)
        results.append(ctx.emit("Slice", [x], {"starts": starts, "ends": ends, "steps": [1] * rank}, out=i))
        offset = offset + n
    return results


def _topk(ctx: "OnnxContext") -> list[Value] | None:
    x = ctx.input(0)
    if ctx.opset < 10:
        k: Dim = int(ctx.attr("k"))
        runtime = False
    else:
        (k,), runtime = shape_input(ctx, 1, "k")
    if x.type.is_static and isinstance(k, int):
        return None
    rank = x.type.rank
    axis = int(ctx.attr("axis", -1))
    axis = axis + rank if axis < 0 else axis
    if isinstance(k, int) and isinstance(dims_of(x)[axis], int) and not 0 <= k <= dims_of(x)[axis]:
        raise ctx.error(f"k {k} out of range for axis {axis} of {x.type}")
    attrs = {"axis": axis, "k": k, "largest": int(ctx.attr("largest", 1)) if ctx.opset >= 11 else 1}
    results: list[Value | None] = []
    for i, result in enumerate(("values", "indices")):
        results.append(ctx.emit("TopK", [x], {**attrs, "result": result}, out=i) if ctx.output_used(i) or i == 0
                       else None)
    return results  # type: ignore[return-value]


def _rt_reshape(op: str) -> SymbolicConverter:
    """Squeeze/Unsqueeze/Slice/OneHot/Dropout with parameters given at run time (onnx_rt_reshape.py,
    imported when first used: it imports this module; it falls back to the converters here)."""
    def convert(ctx: "OnnxContext") -> list[Value] | None:
        from iree_py.frontends.onnx_rt_reshape import RT_RESHAPE_CONVERTERS
        return RT_RESHAPE_CONVERTERS[op](ctx)
    return convert


def _rt_resize(op: str) -> SymbolicConverter:
    """Resize/Upsample with run-time scales/sizes/roi or symbolic dims (onnx_rt_resize.py, imported
    when first used: it imports this module)."""
    def convert(ctx: "OnnxContext") -> list[Value] | None:
        from iree_py.frontends.onnx_rt_resize import RT_RESIZE_CONVERTERS
        return RT_RESIZE_CONVERTERS[op](ctx)
    return convert


SYMBOLIC_CONVERTERS: dict[str, SymbolicConverter] = {
    "Shape": _shape,
    "Size": _size,
    "Gather": _gather,
    "Concat": _concat,
    "Unsqueeze": _rt_reshape("Unsqueeze"),  # falls back to _unsqueeze
    "Squeeze": _rt_reshape("Squeeze"),  # falls back to _squeeze
    "Identity": _identity,
    "Cast": _cast,
    "Add": _elementwise(lambda ctx: lambda a, b: a + b),
    "Sub": _elementwise(lambda ctx: lambda a, b: a - b),
    "Mul": _elementwise(lambda ctx: lambda a, b: a * b),
    "Div": _elementwise(lambda ctx: _truncating_div),
    "Max": _elementwise(lambda ctx: lambda a, b: smax(ctx, a, b)),
    "Min": _elementwise(lambda ctx: lambda a, b: smin(ctx, a, b)),
    "Neg": _elementwise(lambda ctx: lambda a: -a),
    "Equal": _elementwise(_equal, result="bool"),
    "Where": _where,
    **{op: _reduce(op) for op in ("ReduceProd", "ReduceSum", "ReduceMax", "ReduceMin")},
    "Reshape": _reshape,
    "Expand": _expand,
    "ConstantOfShape": _constant_of_shape,
    "Range": _range,
    "Tile": _tile,
    "Slice": _rt_reshape("Slice"),  # falls back to _slice
    "TopK": _topk,
    "Split": _split,
    "Resize": _rt_resize("Resize"),
    "Upsample": _rt_resize("Upsample"),
    "OneHot": _rt_reshape("OneHot"),
    "Dropout": _rt_reshape("Dropout"),
    "Pad": _rt_reshape("Pad"),
}

# Inputs that determine an op's output shape: a run-time tensor there selects the symbolic converter.
SHAPE_INPUTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,), "Expand": (1,), "ConstantOfShape": (0,), "Range": (0, 1, 2), "Tile": (1,),
    "Slice": (1, 2, 3, 4), "TopK": (1,), "Split": (1,),
    "Resize": (1, 2, 3), "Upsample": (1,),
    "Squeeze": (1,), "Unsqueeze": (1,), "OneHot": (1,), "Dropout": (1, 2), "Pad": (1, 2, 3),
}


def pick_symbolic_converter(ctx: "OnnxContext", n: onnx.NodeProto) -> SymbolicConverter | None:
    """The symbolic converter for node `n` when it reads a known value, a symbolically shaped tensor
    or a shape given at run time; None for the static path."""
    if n.domain not in ("", "ai.onnx"):
        return None
    found = {i: ctx.lookup(name) for i, name in enumerate(n.input) if name}  # in a body: outer values too
    inputs = {i: v for i, v in found.items() if v is not None}
    known = [v for v in inputs.values() if is_known(ctx, v)]
    convert = SYMBOLIC_CONVERTERS.get(n.op_type)
    if convert is None:
        return None  # the static converter reads any known input as a tensor computed at run time
    symbolic = any(not v.type.is_static for v in inputs.values())
    runtime_shape = any(i in inputs and not inputs[i].is_const for i in SHAPE_INPUTS.get(n.op_type, ()))
    return convert if known or symbolic or runtime_shape else None
