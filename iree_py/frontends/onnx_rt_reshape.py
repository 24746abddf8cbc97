"""ONNX layout ops whose parameters are tensors given at run time (static data input):

  Squeeze / Unsqueeze  axes at run time: the output shape is computed by small i64 ops and read as
                       symbols; the result is a Reshape (a view, no data moves).
  Slice                axes and/or steps at run time (any sign): per axis, start/step/count are
                       normalized by i64 ops, count is a symbol, and the axis is gathered at
                       start + step * iota(count).
  OneHot               depth at run time: Equal(indices, iota(depth)) selects on/off values.
  Dropout              ratio / training_mode at run time: identity when training_mode is false or
                       ratio is 0; otherwise the call fails at run time (a check names the node).

Every symbol is read from a tensor already clamped to be >= 0 (kernels take symbols as unsigned
push constants). Imported lazily by onnx_symbolic.SYMBOLIC_CONVERTERS (it imports this module).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.frontends.onnx_symbolic import (INDEX_DTYPES, _slice, _squeeze, _unsqueeze, dims_of, elements,
                                             is_known, runtime_symbols)
from iree_py.ir.graph import Value
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

I64 = np.int64


# --- small i64 helpers -----------------------------------------------------------------------------

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


# --- Squeeze / Unsqueeze ---------------------------------------------------------------------------

def _unsqueeze_shape(ctx: "OnnxContext", dims: list[int], axes: Value) -> Value:
    """Output dim j: 1 where j is an inserted axis, else input dim j - #(axes < j)."""
    rank = len(dims) + axes.type.num_elements
    k = axes.type.num_elements
    row = ctx.emit("Reshape", [_from_end(ctx, axes, _i64(ctx, rank, "rank"))], {"shape": [1, k]})
    j = _i64(ctx, np.arange(rank).reshape(rank, 1), "out_axes")
    inserted = _count(ctx, ctx.emit("Equal", [row, j]))
    before = _count(ctx, ctx.emit("Less", [row, j]))
    source = ctx.emit("Sub", [ctx.emit("Reshape", [j], {"shape": [rank]}), before])
    source = _clamp(ctx, source, _i64(ctx, 0, "zero"), _i64(ctx, max(len(dims) - 1, 0), "last_axis"))
    table = _i64(ctx, dims if dims else [1], "input_dims")
    taken = ctx.emit("Gather", [table, source], {"axis": 0})
    is_new = ctx.emit("Less", [_i64(ctx, 0, "zero"), inserted])
    return ctx.emit("Where", [is_new, _i64(ctx, 1, "one"), taken], hint=f"{ctx.node_name}_shape")


def _squeeze_shape(ctx: "OnnxContext", dims: list[int], axes: Value) -> Value:
    """Output dim j: input dim src[j], the j-th kept axis = #(axes a with kept(a) <= j), where kept(a)
    = a + 1 - #(squeezed axes <= a) counts the kept axes through a."""
    rank, k = len(dims), axes.type.num_elements
    out_rank = rank - k
    row = ctx.emit("Reshape", [_from_end(ctx, axes, _i64(ctx, rank, "rank"))], {"shape": [1, k]})
    a = _i64(ctx, np.arange(rank).reshape(rank, 1), "in_axes")
    through = _count(ctx, ctx.emit("Less", [row, ctx.emit("Add", [a, _i64(ctx, 1, "one")])]))
    kept = ctx.emit("Sub", [_i64(ctx, np.arange(1, rank + 1), "kept_max"), through])
    kept_row = ctx.emit("Reshape", [kept], {"shape": [1, rank]})
    j1 = _i64(ctx, np.arange(1, out_rank + 1).reshape(out_rank, 1), "out_axes_plus_one")
    source = _count(ctx, ctx.emit("Less", [kept_row, j1]))
    source = _clamp(ctx, source, _i64(ctx, 0, "zero"), _i64(ctx, rank - 1, "last_axis"))
    taken = ctx.emit("Gather", [_i64(ctx, dims, "input_dims"), source], {"axis": 0})
    return ctx.emit("Reshape", [taken], {"shape": [out_rank]}, hint=f"{ctx.node_name}_shape")


def _squeeze_like(op: str, fold: Callable[["OnnxContext"], list[Value] | None]) -> Callable:
    def convert(ctx: "OnnxContext") -> list[Value] | None:
        if ctx.opset < 13 or not _runtime(ctx, 1) or is_known(ctx, ctx.input(0)):
            return fold(ctx)
        x = _static_data(ctx, op)
        axes = _index_input(ctx, 1, "axes")
        dims = [int(d) for d in dims_of(x)]
        if op == "Squeeze" and axes.type.num_elements > len(dims):
            raise ctx.error(f"axes '{ctx.input(1).name}' has {axes.type.num_elements} entries but {x.type} has "
                            f"rank {len(dims)}")
        shape = _unsqueeze_shape(ctx, dims, axes) if op == "Unsqueeze" else _squeeze_shape(ctx, dims, axes)
        if shape.type.num_elements == 0:
            return [ctx.emit("Reshape", [x], {"shape": []}, out=0)]
        # The Reshape's element-count check refuses a squeezed axis whose dim is not 1.
        return [ctx.emit("Reshape", [x], {"shape": runtime_symbols(ctx, shape, "shape")}, out=0)]
    return convert


# --- Slice -----------------------------------------------------------------------------------------

def _slice_params(ctx: "OnnxContext", rank: int, k: int) -> tuple[Value, Value, Value, Value]:
    """Per input axis (i64 [rank] each): raw start, end and step, and whether the axis is sliced."""
    starts, ends = _index_input(ctx, 1, "starts"), _index_input(ctx, 2, "ends")
    axes = _index_input(ctx, 3, "axes") if ctx.has_input(3) else _i64(ctx, np.arange(k), "axes")
    steps = _index_input(ctx, 4, "steps") if ctx.has_input(4) else _i64(ctx, np.ones(k), "steps")
    row = ctx.emit("Reshape", [_from_end(ctx, axes, _i64(ctx, rank, "rank"))], {"shape": [1, k]})
    hit = ctx.emit("Cast", [ctx.emit("Equal", [row, _i64(ctx, np.arange(rank).reshape(rank, 1), "in_axes")])],
                   {"to": DType.i64.value})

    def pick(v: Value) -> Value:
        return _sum_rows(ctx, ctx.emit("Mul", [hit, ctx.emit("Reshape", [v], {"shape": [1, k]})]))
    return pick(starts), pick(ends), pick(steps), _sum_rows(ctx, hit)


def _rt_slice(ctx: "OnnxContext") -> list[Value] | None:
    """Slice of a static input with axes or steps given at run time (or any negative step): each
    axis is gathered at start + step * iota(count) with ONNX's clamping done by i64 ops."""
    x = ctx.input(0)
    steps_const = not ctx.has_input(4) or not _runtime(ctx, 4)
    positive = steps_const and all(int(s) > 0 for s in np.asarray(
        ctx.input(4).const if ctx.has_input(4) and ctx.input(4).is_const else [1]).reshape(-1))
    if ctx.opset < 10 or is_known(ctx, x) or not any(_runtime(ctx, i) for i in (1, 2, 3, 4)):
        return _slice(ctx)
    if not _runtime(ctx, 3) and positive:
        return _slice(ctx)
    x = _static_data(ctx, "Slice")
    dims, rank = [int(d) for d in dims_of(x)], x.type.rank
    k = ctx.input(1).type.num_elements if ctx.input(1).type.is_static else -1
    if k < 0 or k > rank:
        raise ctx.error(f"starts '{ctx.input(1).name}' is {ctx.input(1).type}; at most {rank} entries are allowed")
    if k == 0:
        return [ctx.emit("Reshape", [x], {"shape": dims}, out=0)]
    s, e, t, sliced = _slice_params(ctx, rank, k)
    size, zero, one = _i64(ctx, dims, "dims"), _i64(ctx, 0, "zero"), _i64(ctx, 1, "one")
    untouched = ctx.emit("Equal", [sliced, zero])
    s = ctx.emit("Where", [untouched, zero, _from_end(ctx, s, size)])
    e = ctx.emit("Where", [untouched, size, _from_end(ctx, e, size)])
    t = ctx.emit("Where", [untouched, one, t])
    forward = ctx.emit("Less", [zero, t])
    last = ctx.emit("Sub", [size, one])
    s = ctx.emit("Where", [forward, _clamp(ctx, s, zero, size), _clamp(ctx, s, zero, last)])
    e = ctx.emit("Where", [forward, _clamp(ctx, e, zero, size), _clamp(ctx, e, _i64(ctx, -1, "minus_one"), last)])
    span = ctx.emit("Where", [forward, ctx.emit("Sub", [e, s]), ctx.emit("Sub", [s, e])])
    stride = ctx.emit("Max", [ctx.emit("Where", [forward, t, ctx.emit("Neg", [t])]), one])  # step 0 -> 1
    count = ctx.emit("Div", [ctx.emit("Add", [ctx.emit("Max", [span, zero]), ctx.emit("Sub", [stride, one])]),
                             stride], hint=f"{ctx.node_name}_counts")
    counts = runtime_symbols(ctx, count, "Slice length")
    y = x
    for axis in range(rank):
        start = ctx.emit("Slice", [s], {"starts": [axis], "ends": [axis + 1], "steps": [1]})
        step = ctx.emit("Slice", [t], {"starts": [axis], "ends": [axis + 1], "steps": [1]})
        index = ctx.emit("Add", [ctx.emit("Mul", [_iota(ctx, counts[axis]), step]), start])
        y = ctx.emit("Gather", [y, index], {"axis": axis}, out=0 if axis == rank - 1 else None)
    return [y]


# --- Pad -------------------------------------------------------------------------------------------

def _pad_params(ctx: "OnnxContext", rank: int) -> tuple[Value, Value, list[int] | None]:
    """Per input axis (i64 [rank] each) the begin and end pads, and the padded axes when known at
    import (None: any axis may be padded)."""
    pads = _index_input(ctx, 1, "pads")
    if not ctx.has_input(3) or ctx.opset < 18:
        if pads.type.num_elements != 2 * rank:
            raise ctx.error(f"pads '{ctx.input(1).name}' has {pads.type.num_elements} values; {2 * rank} needed")
        begin = ctx.emit("Slice", [pads], {"starts": [0], "ends": [rank], "steps": [1]})
        end = ctx.emit("Slice", [pads], {"starts": [rank], "ends": [2 * rank], "steps": [1]})
        return begin, end, None if _runtime(ctx, 1) else list(range(rank))
    axes = _index_input(ctx, 3, "axes")
    k = axes.type.num_elements
    if pads.type.num_elements != 2 * k:
        raise ctx.error(f"pads '{ctx.input(1).name}' has {pads.type.num_elements} values; {2 * k} needed for {k} axes")
    known = None if _runtime(ctx, 3) else [int(a) % rank for a in np.asarray(ctx.input(3).const).reshape(-1)]
    row = ctx.emit("Reshape", [_from_end(ctx, axes, _i64(ctx, rank, "rank"))], {"shape": [1, k]})
    hit = ctx.emit("Cast", [ctx.emit("Equal", [row, _i64(ctx, np.arange(rank).reshape(rank, 1), "in_axes")])],
                   {"to": DType.i64.value})

    def pick(first: int) -> Value:
        part = ctx.emit("Slice", [pads], {"starts": [first], "ends": [first + k], "steps": [1]})
        return _sum_rows(ctx, ctx.emit("Mul", [hit, ctx.emit("Reshape", [part], {"shape": [1, k]})]))
    return pick(0), pick(k), known


def _pad_index(ctx: "OnnxContext", mode: str, s: Value, kept: Value, lo: Value, size: Value) -> tuple[Value, Value]:
    """(index into the uncropped input, inside?) for the source positions s counted from the cropped
    start; an index of `size` where nothing may be read: the zero _rt_pad appends to each axis."""
    zero, one = _i64(ctx, 0, "zero"), _i64(ctx, 1, "one")
    inside = ctx.emit("And", [ctx.emit("Less", [s, kept]), ctx.emit("Not", [ctx.emit("Less", [s, zero])])])
    if mode == "constant":
        return ctx.emit("Where", [inside, ctx.emit("Add", [s, lo]), size]), inside
    if mode == "edge":
        mapped = _clamp(ctx, s, zero, ctx.emit("Sub", [kept, one]))
    elif mode == "wrap":
        mapped = ctx.emit("FloorMod", [s, ctx.emit("Max", [kept, one])])
    else:  # reflect: period 2 (kept - 1); an axis of one element repeats it
        last = ctx.emit("Sub", [kept, one])
        period = ctx.emit("Max", [ctx.emit("Add", [last, last]), one])
        t = ctx.emit("FloorMod", [s, period])
        mapped = ctx.emit("Where", [ctx.emit("Less", [t, kept]), t, ctx.emit("Sub", [period, t])])
    usable = ctx.emit("Less", [zero, kept])  # a cropped-away axis cannot be padded from: read nothing
    return ctx.emit("Where", [usable, ctx.emit("Add", [mapped, lo]), size]), inside


def _rt_pad(ctx: "OnnxContext") -> list[Value] | None:
    """Pad with pads/axes/constant_value given at run time (static input): per padded axis, output
    index o gathers input index lo + map(o - begin - lo) (lo: the begin crop), map by the mode;
    constant mode then puts the value where any axis lies in the padding."""
    from iree_py.ir.ops.pad import PAD_MODES
    if ctx.opset < 11 or not any(_runtime(ctx, i) for i in (1, 2, 3)):
        return None
    x = _static_data(ctx, "Pad")
    mode = ctx.attr("mode", "constant")
    modes = PAD_MODES[:4] if ctx.opset >= 19 else PAD_MODES[:3]
    if mode not in modes:
        raise ctx.bad_attr("mode", mode, f"expected one of {list(modes)}")
    dims, rank = [int(d) for d in dims_of(x)], x.type.rank
    if rank == 0:
        return [ctx.emit("Reshape", [x], {"shape": []}, out=0)]
    begin, end, padded = _pad_params(ctx, rank)
    zero = _i64(ctx, 0, "zero")
    size = _i64(ctx, dims, "dims")
    counts = ctx.emit("Max", [ctx.emit("Add", [ctx.emit("Add", [size, begin]), end]), zero],
                      hint=f"{ctx.node_name}_out_dims")
    out_dims = runtime_symbols(ctx, counts, "Pad output dim")
    lo = ctx.emit("Max", [ctx.emit("Neg", [begin]), zero])
    kept = ctx.emit("Sub", [ctx.emit("Sub", [size, lo]), ctx.emit("Max", [ctx.emit("Neg", [end]), zero])])
    axes = list(range(rank)) if padded is None else sorted(set(padded))
    # A zero after the end of each gathered axis, read where nothing of x may be (index `size`): a
    # Gather fails the call on an index outside its axis.
    after = [1 if a in axes else 0 for a in range(rank)]
    y = ctx.emit("Pad", [x], {"mode": "constant", "pads": [0] * rank + after,
                              "value": 0 if x.type.dtype.numpy.kind in "iub" else 0.0})
    mask = None
    for axis in axes:
        def at(v: Value) -> Value:
            return ctx.emit("Slice", [v], {"starts": [axis], "ends": [axis + 1], "steps": [1]})
        s = ctx.emit("Sub", [ctx.emit("Sub", [_iota(ctx, out_dims[axis]), at(begin)]), at(lo)])
        index, inside = _pad_index(ctx, mode, s, at(kept), at(lo), at(size))
        y = ctx.emit("Gather", [y, index], {"axis": axis})
        if mode == "constant":
            shape = [1] * rank
            shape[axis] = out_dims[axis]
            inside = ctx.emit("Reshape", [inside], {"shape": shape})
            mask = inside if mask is None else ctx.emit("And", [mask, inside])
    if mode == "constant" and ctx.has_input(2) and mask is not None:
        value = ctx.input(2)
        if value.is_const and not np.any(np.asarray(value.const)):
            mask = None  # the gathers already read the appended zeros in the padding
        else:
            if value.type.dtype != x.type.dtype:
                value = ctx.emit("Cast", [value], {"to": x.type.dtype.value})
            value = ctx.emit("Reshape", [value], {"shape": []})
            y = ctx.emit("Where", [mask, y, value])
    return [ctx.emit("Reshape", [y], {"shape": list(dims_of(y))}, out=0)]


# --- OneHot ----------------------------------------------------------------------------------------

def _rt_one_hot(ctx: "OnnxContext") -> list[Value] | None:
    """OneHot with depth given at run time: Where(indices' == iota(depth), on, off), indices' being
    the indices with negatives counted from depth (out of range rows stay off, as ONNX says)."""
    if not _runtime(ctx, 1):
        return None
    indices, depth_v, values = ctx.input(0), ctx.input(1), ctx.input(2)
    if depth_v.type.dtype == DType.bool or not depth_v.type.is_static or depth_v.type.num_elements != 1:
        raise ctx.error(f"depth '{depth_v.name}' is {depth_v.type}; a numeric scalar or 1-element tensor is required")
    if values.type.shape != (2,):
        raise ctx.error(f"values '{values.name}' is {values.type}; it must hold [off, on]")
    depth_i = ctx.emit("Reshape", [ctx.emit("Cast", [depth_v], {"to": DType.i64.value})], {"shape": [1]})
    depth_i = ctx.emit("Max", [depth_i, _i64(ctx, 0, "zero")], hint=f"{ctx.node_name}_depth")
    depth = runtime_symbols(ctx, depth_i, "depth")[0]
    rank = indices.type.rank + 1
    axis = int(ctx.attr("axis", -1))
    if not -rank <= axis < rank:
        raise ctx.error(f"axis {axis} is out of range for output rank {rank}")
    axis = axis + rank if axis < 0 else axis
    index = _from_end(ctx, _as_i64(ctx, indices), depth_i)  # float indices truncate, as onnxruntime casts
    index = ctx.emit("Reshape", [index], {"shape": [*dims_of(indices)[:axis], 1, *dims_of(indices)[axis:]]})
    iota_shape = [1] * rank
    iota_shape[axis] = depth
    iota = ctx.emit("Reshape", [_iota(ctx, depth)], {"shape": iota_shape})
    off = ctx.emit("Slice", [values], {"starts": [0], "ends": [1], "steps": [1]})
    on = ctx.emit("Slice", [values], {"starts": [1], "ends": [2], "steps": [1]})
    return [ctx.emit("Where", [ctx.emit("Equal", [index, iota]), on, off], out=0)]


# --- Dropout ---------------------------------------------------------------------------------------

def _rt_dropout(ctx: "OnnxContext") -> list[Value] | None:
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


RT_RESHAPE_CONVERTERS: dict[str, Callable[["OnnxContext"], list[Value] | None]] = {
    "Squeeze": _squeeze_like("Squeeze", _squeeze),
    "Unsqueeze": _squeeze_like("Unsqueeze", _unsqueeze),
    "Slice": _rt_slice,
    "OneHot": _rt_one_hot,
    "Dropout": _rt_dropout,
    "Pad": _rt_pad,
}
