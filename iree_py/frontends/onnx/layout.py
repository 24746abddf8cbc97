"""ONNX layout ops -> Reshape, Transpose, Concat and Expand: Reshape, Flatten, Squeeze, Unsqueeze,
Transpose, Concat, Expand, Tile, DepthToSpace, SpaceToDepth; each with its symbolic form (a
symbolic input or a shape folded from symbolic dims, symbolic.py) and its run-time form:

  Tile             Reshape, Expand (broadcast), Reshape        (constant repeats)
  DepthToSpace     Reshape, Transpose, Reshape                   (DCR and CRD)
  SpaceToDepth     Reshape, Transpose, Reshape                   (DCR and CRD)
  Reshape          a shape given at run time (static input): 0 and -1 resolved by i64 ops, the dims read
                   as symbols
  Squeeze / Unsqueeze  axes at run time: the output shape is computed by small i64 ops and read as
                       symbols; the result is a Reshape (a view, no data moves).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.frontends.onnx import compose
from iree_py.frontends.onnx.compose import Converter, checked_axis
from iree_py.frontends.onnx.dims import as_dim, dim_list, dims_of
from iree_py.frontends.onnx.symbolic import (SymbolicConverter, _clamp, _count, _from_end, _i64, _index_input,
                                             _known_inputs, _runtime, _static_data, const_ints, elements, exact_div,
                                             is_known, known_result, runtime_symbols, shape_input, sign_of, smax)
from iree_py.ir.graph import Value
from iree_py.ir.symbols import call, dim
from iree_py.ir.types import Dim, DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


def _reshape(ctx: "OnnxContext", v: Value, shape: tuple[int, ...], out: int | None = None) -> Value:
    return ctx.emit("Reshape", [v], {"shape": dim_list(shape)}, out=out)


def concat(ctx: "OnnxContext") -> list[Value]:
    values = ctx.inputs()
    if not values:
        raise ctx.error("Concat needs at least one input")
    axis = checked_axis(ctx, int(ctx.attr("axis", 1 if ctx.opset < 4 else 0)), values[0].type.rank)
    if len(values) == 1:
        return values
    return [ctx.emit("Concat", values, {"axis": axis}, out=0)]


def _resolve_shape(ctx: "OnnxContext", x: Value, requested: list[int], allow_zero: bool) -> tuple[int, ...]:
    shape = list(requested)
    src = dims_of(x)
    for i, d in enumerate(shape):
        if d == 0 and not allow_zero:
            if i >= len(src):
                raise ctx.error(f"shape {requested}: 0 at index {i} but input {x.type} has rank {len(src)}")
            shape[i] = src[i]
    if shape.count(-1) > 1:
        raise ctx.error(f"shape {requested} has more than one -1")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        total = math.prod(src)
        if known == 0 or total % known:
            raise ctx.error(f"cannot reshape {x.type} to {requested}")
        shape[shape.index(-1)] = total // known
    if math.prod(shape) != math.prod(src) or any(d < 0 for d in shape):
        raise ctx.error(f"cannot reshape {x.type} to {requested}")
    return tuple(shape)


def reshape(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    if ctx.opset < 5:
        requested = [int(d) for d in ctx.attr("shape", [])]
    else:
        requested = [int(d) for d in ctx.const_input(1, "shape").reshape(-1)]
    allow_zero = bool(ctx.attr("allowzero", 0))
    return [_reshape(ctx, x, _resolve_shape(ctx, x, requested, allow_zero), out=0)]


def flatten(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    shape = dims_of(x)
    axis = int(ctx.attr("axis", 1))
    if axis < 0:
        axis += len(shape)
    if not 0 <= axis <= len(shape):
        raise ctx.bad_attr("axis", ctx.attr("axis"), f"out of range for {x.type}")
    return [_reshape(ctx, x, (math.prod(shape[:axis]), math.prod(shape[axis:])), out=0)]


def transpose(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    perm = [int(p) for p in ctx.attr("perm", list(range(x.type.rank))[::-1])]
    if sorted(perm) != list(range(x.type.rank)):
        raise ctx.bad_attr("perm", perm, f"not a permutation of the {x.type.rank} axes of {x.type}")
    if perm == list(range(x.type.rank)):
        return [x]
    return [ctx.emit("Transpose", [x], {"perm": perm}, out=0)]


def _axes(ctx: "OnnxContext") -> list[int] | None:
    if ctx.opset < 13:
        axes = ctx.attr("axes")
        return None if axes is None else [int(a) for a in axes]
    if not ctx.has_input(1):
        return None
    return [int(a) for a in ctx.const_input(1, "axes").reshape(-1)]


def squeeze(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    shape = dims_of(x)
    axes = _axes(ctx)
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    axes = [checked_axis(ctx, a, len(shape), "axes") for a in axes]
    for a in axes:  # a symbolic dim is checked to be 1 at run time (the Reshape's rule)
        if isinstance(shape[a], int) and shape[a] != 1:
            raise ctx.bad_attr("axes", axes, f"dim {a} of {x.type} is not 1")
    return [_reshape(ctx, x, tuple(d for i, d in enumerate(shape) if i not in axes), out=0)]


def unsqueeze(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    axes = _axes(ctx)
    if axes is None:
        raise ctx.error("axes are required")
    out_rank = x.type.rank + len(axes)
    axes = sorted(checked_axis(ctx, a, out_rank, "axes") for a in axes)
    shape = list(dims_of(x))
    for a in axes:
        shape.insert(a, 1)
    return [_reshape(ctx, x, tuple(shape), out=0)]


def _expand_to(ctx: "OnnxContext", x: Value, shape: tuple[int, ...], out: int | None = None) -> Value:
    if dims_of(x) == shape:
        return x if out is None else compose.reshape(ctx, x, shape, out=out)
    return ctx.emit("Expand", [x], {"shape": list(shape)}, out=out)


def expand(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    requested = tuple(int(d) for d in ctx.const_input(1, "shape").reshape(-1))
    try:
        shape = tuple(int(d) for d in np.broadcast_shapes(dims_of(x), requested))
    except ValueError:
        raise ctx.error(f"input {x.type} does not broadcast to shape {list(requested)}") from None
    if shape == dims_of(x):
        return [x]
    return [_expand_to(ctx, x, shape, out=0)]


def tile(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    dims = dims_of(x)
    repeats = [int(r) for r in ctx.const_input(1, "repeats").reshape(-1)]
    if len(repeats) != len(dims) or any(r < 0 for r in repeats):
        raise ctx.error(f"repeats {repeats} must be {len(dims)} non-negative counts for input {x.type}")
    if all(r == 1 for r in repeats):
        return [x]
    split, expanded = [], []
    for d, r in zip(dims, repeats):
        if r != 1:
            split.append(1)
            expanded.append(r)
        split.append(d)
        expanded.append(d)
    y = _expand_to(ctx, compose.reshape(ctx, x, tuple(split)), tuple(expanded))
    return [compose.reshape(ctx, y, tuple(d * r for d, r in zip(dims, repeats)), out=0)]


def _block(ctx: "OnnxContext") -> tuple[Value, int, tuple[int, int, int, int]]:
    x = ctx.input(0)
    if x.type.rank != 4:
        raise ctx.error(f"input {x.type} must be 4-D [N, C, H, W]")
    block = int(ctx.attr("blocksize", 0))
    if block < 1:
        raise ctx.bad_attr("blocksize", block, "must be >= 1")
    n, c, h, w = dims_of(x)
    return x, block, (n, c, h, w)


def depth_to_space(ctx: "OnnxContext") -> list[Value]:
    x, bs, (n, c, h, w) = _block(ctx)
    mode = ctx.attr("mode", "DCR")
    if c % (bs * bs):
        raise ctx.error(f"channels {c} of {x.type} not divisible by blocksize^2 = {bs * bs}")
    if mode == "DCR":
        split, perm = (n, bs, bs, c // (bs * bs), h, w), [0, 3, 4, 1, 5, 2]
    elif mode == "CRD":
        split, perm = (n, c // (bs * bs), bs, bs, h, w), [0, 1, 4, 2, 5, 3]
    else:
        raise ctx.bad_attr("mode", mode, "expected DCR or CRD")
    y = ctx.emit("Transpose", [compose.reshape(ctx, x, split)], {"perm": perm})
    return [compose.reshape(ctx, y, (n, c // (bs * bs), h * bs, w * bs), out=0)]


def space_to_depth(ctx: "OnnxContext") -> list[Value]:
    x, bs, (n, c, h, w) = _block(ctx)
    if h % bs or w % bs:
        raise ctx.error(f"spatial dims of {x.type} not divisible by blocksize {bs}")
    mode = ctx.attr("mode", "DCR")  # an attribute from opset 25; DCR before
    if mode not in ("DCR", "CRD"):
        raise ctx.bad_attr("mode", mode, "expected DCR or CRD")
    perm = [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]
    y = ctx.emit("Transpose", [compose.reshape(ctx, x, (n, c, h // bs, bs, w // bs, bs))], {"perm": perm})
    return [compose.reshape(ctx, y, (n, c * bs * bs, h // bs, w // bs), out=0)]


def _symbolic_concat(ctx: "OnnxContext") -> list[Value] | None:
    values, arrays = _known_inputs(ctx)
    if arrays is None:
        return None
    axis = int(ctx.attr("axis", 0))
    return [known_result(ctx, np.concatenate(arrays, axis=axis), values[0].type.dtype)]


def _symbolic_unsqueeze(ctx: "OnnxContext") -> list[Value] | None:
    x = ctx.input(0)
    if not is_known(ctx, x):
        return None
    axes = _axes(ctx) or []
    rank = x.type.rank + len(axes)
    out = np.expand_dims(elements(ctx, x), tuple(sorted(a + rank if a < 0 else a for a in axes)))
    return [known_result(ctx, out, x.type.dtype)]


def _symbolic_squeeze(ctx: "OnnxContext") -> list[Value] | None:
    x = ctx.input(0)
    if not is_known(ctx, x):
        return None
    axes = _axes(ctx)
    array = elements(ctx, x)
    out = np.squeeze(array) if axes is None else np.squeeze(array, tuple(a % array.ndim for a in axes))
    return [known_result(ctx, out, x.type.dtype)]


def _reshape_known(ctx: "OnnxContext", x: Value) -> list[Value]:
    array = elements(ctx, x)
    requested = const_ints(ctx, 1, "shape")
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


def _symbolic_reshape(ctx: "OnnxContext") -> list[Value] | None:
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


def _symbolic_expand(ctx: "OnnxContext") -> list[Value] | None:
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


def _symbolic_tile(ctx: "OnnxContext") -> list[Value] | None:
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
    y = _expand_to(ctx, compose.reshape(ctx, x, tuple(split)), tuple(expanded))
    return [compose.reshape(ctx, y, tuple(as_dim(d * r) for d, r in zip(dims, repeats)), out=0)]


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


CONVERTERS: dict[str, Converter] = {
    "Concat": concat,
    "Reshape": reshape,
    "Flatten": flatten,
    "Transpose": transpose,
    "Squeeze": squeeze,
    "Unsqueeze": unsqueeze,
    "Expand": expand,
    "Tile": tile,
    "DepthToSpace": depth_to_space,
    "SpaceToDepth": space_to_depth,
}

SYMBOLIC_CONVERTERS: dict[str, SymbolicConverter] = {
    "Concat": _symbolic_concat,
    "Unsqueeze": _squeeze_like("Unsqueeze", _symbolic_unsqueeze),
    "Squeeze": _squeeze_like("Squeeze", _symbolic_squeeze),
    "Reshape": _symbolic_reshape,
    "Expand": _symbolic_expand,
    "Tile": _symbolic_tile,
}

SHAPE_INPUTS: dict[str, tuple[int, ...]] = {"Reshape": (1,), "Expand": (1,), "Tile": (1,), "Squeeze": (1,),
                                             "Unsqueeze": (1,)}
