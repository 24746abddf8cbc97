"""ONNX Pad (modes constant, reflect, edge, wrap) -> the Pad op; negative pads crop. Dims may be
symbolic: what sign_of cannot decide at import, the Pad op's rule checks at run time.

Pads, axes or constant_value given at run time (static input): per padded axis, output index o
gathers input index lo + map(o - begin - lo) (lo: the begin crop), map by the mode; constant mode
then puts the value where any axis lies in the padding.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx.compose import Converter, checked_axis, optional_const
from iree_py.frontends.onnx.dims import dims_of
from iree_py.frontends.onnx.symbolic import (SymbolicConverter, _clamp, _from_end, _i64, _index_input, _iota, _runtime,
                                             _static_data, _sum_rows, runtime_symbols, sign_of)
from iree_py.ir.graph import Value
from iree_py.ir.ops.pad import PAD_MODES
from iree_py.ir.symbols import Expr, dim
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


def pad(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    rank = x.type.rank
    mode = ctx.attr("mode", "constant")
    onnx_modes = PAD_MODES[:4] if ctx.opset >= 19 else PAD_MODES[:3]
    if mode not in onnx_modes:
        raise ctx.bad_attr("mode", mode, f"expected one of {list(onnx_modes)}")
    if ctx.opset < 11:
        pads = [int(p) for p in ctx.attr("pads", ctx.attr("paddings", []))]
        value = float(ctx.attr("value", 0.0))
        axes = list(range(rank))
    else:
        pads = [int(p) for p in ctx.const_input(1, "pads").reshape(-1)]
        value_given = optional_const(ctx, 2, "constant_value")
        value = 0.0 if value_given is None else value_given.reshape(-1)[0].item()
        axes_given = optional_const(ctx, 3, "axes") if ctx.opset >= 18 else None
        axes = list(range(rank)) if axes_given is None else \
            [checked_axis(ctx, int(a), rank, "axes") for a in axes_given.reshape(-1)]
    if len(pads) != 2 * len(axes):
        raise ctx.error(f"pads {pads} need {2 * len(axes)} values (axes {axes})")
    full = [0] * (2 * rank)
    for k, a in enumerate(axes):
        full[a], full[rank + a] = pads[k], pads[len(axes) + k]
    if not any(full):
        return [x]
    # Dims may be symbolic: what sign_of cannot decide here, the Pad op's rule checks at run time
    # (a reflect pad below its axis, an axis left non-empty by the crop).
    shape = dims_of(x)
    kept = [dim(Expr.of(d) - max(-full[i], 0) - max(-full[rank + i], 0)) for i, d in enumerate(shape)]
    if mode == "reflect" and any(sign_of(ctx, p, Expr.of(k) - 1) == 1
                                 for i, k in enumerate(kept) for p in (full[i], full[rank + i])):
        raise ctx.error(f"reflect pads {full} exceed the (cropped) dims - 1 of {x.type}")
    grown = [Expr.of(d) + full[i] + full[rank + i] for i, d in enumerate(shape)]
    if mode != "constant" and any(sign_of(ctx, k, 0) in (-1, 0) and sign_of(ctx, out, 0) == 1
                                  for k, out in zip(kept, grown)):
        raise ctx.error(f"mode {mode} cannot pad an empty (or cropped to nothing) axis of {x.type}, pads {full}")
    if x.type.dtype.numpy.kind in "iub":
        value = int(value)
    return [ctx.emit("Pad", [x], {"mode": mode, "pads": full, "value": value}, out=0)]


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
    start; an index of `size` where nothing may be read: the zero _runtime_pad appends to each axis."""
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


def _runtime_pad(ctx: "OnnxContext") -> list[Value] | None:
    """Pad with pads/axes/constant_value given at run time (static input): per padded axis, output
    index o gathers input index lo + map(o - begin - lo) (lo: the begin crop), map by the mode;
    constant mode then puts the value where any axis lies in the padding."""
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


CONVERTERS: dict[str, Converter] = {"Pad": pad}

SYMBOLIC_CONVERTERS: dict[str, SymbolicConverter] = {"Pad": _runtime_pad}

SHAPE_INPUTS: dict[str, tuple[int, ...]] = {"Pad": (1, 2, 3)}
