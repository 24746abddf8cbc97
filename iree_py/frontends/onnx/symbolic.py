"""Symbolic dims in the ONNX frontend (docs/dynamic_shapes.md, "ONNX import of symbolic shapes").

Input dims: a `dim_param` without a size in `dims` becomes a symbol of the same name (made an
identifier); an unknown dim without a name (no dim_param, "?" or "", a negative dim_value) becomes
`<input>_d<axis>`, a symbol of its own (InputSymbols).

Known values: shape arithmetic (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters write
it) is folded at import, as the static path folds it into constants. A value whose elements are
known at import but not all ints (some are Exprs over symbols) is a *known value*: its Value is a
placeholder (no node computes it) and `ctx.known[name]` holds its elements as a numpy object array
of ints, bools and Exprs. The symbolic converters (each family file's SYMBOLIC_CONVERTERS,
joined in registry.py) fold known values (Shape, Size, Gather, Slice, Concat, Unsqueeze, Squeeze,
Reshape, Cast, Identity, Add/Sub/Mul/Div/Max/Min/Neg, Equal, Where) and consume them as shapes
(Reshape, Expand, ConstantOfShape, Range, Tile, Slice, TopK); any other op reading a known value is an error naming it.

Run-time shape tensors: a shape input that is neither constant nor known (a graph input, or
computed from data) gives one fresh symbol per element, with `graph.symbol_sources[symbol] =
(value, flat_index)`: the lowering reads the element when the value is computed. Such symbols may be
negative (Reshape's -1, Slice's negative starts), so the formulas that use them only assume they
are integers (`ctx.runtime_symbols`).

This file holds what they share: the input dims' symbols, known values, comparisons of dims
(sign_of, smax, exact_div, ...), the symbols read from run-time tensors, and the small i64 ops that
turn a parameter given at run time (axes, pads, a count) into non-negative values to read.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import onnx
import onnx.helper

from iree_py.frontends.onnx.dims import as_dim, dims_of
from iree_py.ir.graph import Value
from iree_py.ir.symbols import Expr, bounds, call, dim
from iree_py.ir.types import Dim, DType, TensorType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


SymbolicConverter = Callable[["OnnxContext"], "list[Value] | None"]  # None: use the static converter


BIG = 1 << 62                 # "unbounded" for interval arithmetic


END_OF_AXIS = (1 << 31) - 1   # Slice ends at or past this mean "to the end" (INT32_MAX, INT64_MAX)


INDEX_DTYPES = (DType.i64, DType.i32)


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
    elements evaluated from the symbols, ir/ops/dim_values.py), cast to the value's dtype."""
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


def const_ints(ctx: "OnnxContext", i: int, what: str) -> list[int]:
    return [int(a) for a in np.asarray(ctx.const_input(i, what)).reshape(-1)]


def fold_elementwise(fn_of: Callable[["OnnxContext"], Callable[..., Any]], result: str = "same") -> SymbolicConverter:
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


# --- small ops on values given at run time --------------------------------------------------------

I64 = np.int64


def _i64(ctx: "OnnxContext", array: object, hint: str) -> Value:
    return ctx.const(np.array(array, I64), hint)


def _as_i64(ctx: "OnnxContext", v: Value) -> Value:
    return v if v.type.dtype == DType.i64 else ctx.emit("Cast", [v], {"to": DType.i64.value})


def _index_input(ctx: "OnnxContext", i: int, what: str) -> Value:
    v = ctx.input(i)
    if v.type.dtype not in INDEX_DTYPES:
        raise ctx.error(f"{what} (input {i}, '{v.name}') is {v.type}; it must be int64 or int32")
    if not v.type.is_static or v.type.rank > 1:
        raise ctx.error(f"{what} (input {i}, '{v.name}') is {v.type}; a 1-D tensor of static length is required")
    return ctx.emit("Reshape", [_as_i64(ctx, v)], {"shape": [v.type.num_elements]})


def _sum_rows(ctx: "OnnxContext", m: Value) -> Value:
    """Sum over axis 1 of a static [rows, cols] i64 tensor -> [rows] (cols is tiny: a rank)."""
    rows, cols = dims_of(m)
    total: Value | None = None
    for c in range(cols):
        part = ctx.emit("Slice", [m], {"starts": [0, c], "ends": [rows, c + 1], "steps": [1, 1]})
        total = part if total is None else ctx.emit("Add", [total, part])
    if total is None:
        return _i64(ctx, np.zeros(rows), "zeros")
    return ctx.emit("Reshape", [total], {"shape": [rows]})


def _count(ctx: "OnnxContext", predicate: Value) -> Value:
    """Per row, how many entries of the [rows, cols] bool `predicate` hold."""
    return _sum_rows(ctx, ctx.emit("Cast", [predicate], {"to": DType.i64.value}))


def _clamp(ctx: "OnnxContext", v: Value, lo: Value, hi: Value) -> Value:
    return ctx.emit("Min", [ctx.emit("Max", [v, lo]), hi])


def _from_end(ctx: "OnnxContext", v: Value, size: Value) -> Value:
    """ONNX's negative index: v + size where v < 0."""
    return ctx.emit("Where", [ctx.emit("Less", [v, _i64(ctx, 0, "zero")]), ctx.emit("Add", [v, size]), v])


def _iota(ctx: "OnnxContext", n: object) -> Value:
    """0, 1, ..., n - 1 (i64) for a dim n (int or symbol)."""
    ones = ctx.emit("Expand", [_i64(ctx, 1, "one")], {"shape": [n]})
    return ctx.emit("CumSum", [ones], {"axis": 0, "exclusive": 1, "reverse": 0})


def _runtime(ctx: "OnnxContext", i: int) -> bool:
    """Input i is given and is neither a constant nor folded at import."""
    return ctx.has_input(i) and not ctx.input(i).is_const and elements(ctx, ctx.input(i)) is None


def _static_data(ctx: "OnnxContext", op: str) -> Value:
    x = ctx.input(0)
    if not x.type.is_static:
        raise ctx.error(f"{op} of {x.type} (symbolic dims) with parameters given at run time is not supported; "
                        f"only a statically shaped data input")
    return x


def _scalar(ctx: "OnnxContext", v: Value) -> Value:
    return v if v.type.rank == 0 else ctx.emit("Reshape", [v], {"shape": []})


def _cast(ctx: "OnnxContext", v: Value, dtype: DType, out: int | None = None) -> Value:
    if v.type.dtype == dtype and out is None:
        return v
    return ctx.emit("Cast", [v], {"to": dtype.value}, out=out)


def _const(ctx: "OnnxContext", value: float, dtype: DType, hint: str) -> Value:
    return ctx.const(np.array(value, dtype.numpy), hint)


def iota(ctx: "OnnxContext", n: Dim, dtype: DType) -> Value:
    """[0, 1, ..., n - 1] of `dtype` for a length `n` known only at run time (exclusive CumSum of ones)."""
    one = ctx.const(np.array(1, np.int64), "one")
    ones = ctx.emit("Expand", [one], {"shape": [n]})
    counted = ctx.emit("CumSum", [ones], {"axis": 0, "exclusive": 1, "reverse": 0})
    return _cast(ctx, counted, dtype)


def _length_symbol(ctx: "OnnxContext", count: Value, what: str) -> Dim:
    """The symbol read at run time from the int64 scalar `count` (already non-negative)."""
    flat = ctx.emit("Reshape", [count], {"shape": [1]}, hint=f"{ctx.node_name}_count")
    return runtime_symbols(ctx, flat, what)[0]
