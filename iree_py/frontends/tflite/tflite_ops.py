"""TFLite SPLIT, SPLIT_V, PACK, UNPACK, DEPTH_TO_SPACE and CAST -> the normalized Slice, Concat,
Reshape, Transpose and Cast ops.

The data-movement operators work on any element type (float, int8/uint8 with their bytes copied
as TFLite copies them, int32, ...); the data keeps TFLite's own layout. CAST converts element values
as TFLite's kernel does (C's static_cast: float -> integer truncates toward zero; -> bool is != 0);
it ignores quantization parameters, as TFLite does.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from iree_py.frontends.tflite.schema.BuiltinOperator import BuiltinOperator as B
from iree_py.frontends.tflite.schema.DepthToSpaceOptions import DepthToSpaceOptionsT
from iree_py.frontends.tflite.schema.PackOptions import PackOptionsT
from iree_py.frontends.tflite.schema.UnpackOptions import UnpackOptionsT
from iree_py.ir.graph import Value

if TYPE_CHECKING:
    from iree_py.frontends.tflite.importer import TfliteContext

Converter = Callable[["TfliteContext"], list[Value]]


def _shape(v: Value) -> tuple[int, ...]:
    return tuple(int(d) for d in v.type.shape)


def _axis(ctx: "TfliteContext", axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise ctx.error(f"axis {axis} out of range for {what} of rank {rank}")
    return axis % rank


def _const_axis(ctx: "TfliteContext", i: int, x: Value) -> int:
    values = ctx.const_input(i, "axis").reshape(-1)
    if values.size != 1:
        raise ctx.error(f"axis (input {i}) must hold one value, got {values.tolist()}")
    return _axis(ctx, int(values[0]), x.type.rank, f"input {x.type}")


def _pieces(ctx: "TfliteContext", x: Value, axis: int, sizes: list[int]) -> list[Value]:
    """Slices of x along `axis` with the given sizes, one per operator output, each named for it."""
    results, start = [], 0
    dims = list(_shape(x))
    for i, size in enumerate(sizes):
        starts, ends = [0] * len(dims), list(dims)
        starts[axis], ends[axis] = start, start + size
        if len(sizes) == 1:
            results.append(ctx.reshape(x, ctx.output_shape(i), out=i))
        else:
            y = ctx.emit("Slice", [x], {"starts": starts, "ends": ends, "steps": [1] * len(dims)})
            results.append(ctx.reshape(y, ctx.output_shape(i), out=i))
        start += size
    return results


def _output_count(ctx: "TfliteContext") -> int:
    assert ctx.op is not None
    return len(ctx.op.outputs) if ctx.op.outputs is not None else 0


def split(ctx: "TfliteContext") -> list[Value]:
    """SPLIT(axis, input): num_splits equal parts (the operator's outputs)."""
    x = ctx.input(1)
    axis = _const_axis(ctx, 0, x)
    count = _output_count(ctx)
    dim = _shape(x)[axis]
    if count < 1 or dim % count:
        raise ctx.error(f"axis {axis} of {x.type} (size {dim}) does not split into {count} equal parts")
    return _pieces(ctx, x, axis, [dim // count] * count)


def split_v(ctx: "TfliteContext") -> list[Value]:
    """SPLIT_V(input, size_splits, axis): parts of the given sizes; one size may be -1 (the rest)."""
    x = ctx.input(0)
    axis = _const_axis(ctx, 2, x)
    sizes = [int(s) for s in ctx.const_input(1, "size_splits").reshape(-1)]
    dim = _shape(x)[axis]
    if len(sizes) != _output_count(ctx):
        raise ctx.error(f"size_splits {sizes} has {len(sizes)} entries for {_output_count(ctx)} outputs")
    unknown = [i for i, s in enumerate(sizes) if s == -1]
    if len(unknown) > 1 or any(s < -1 for s in sizes):
        raise ctx.error(f"size_splits {sizes}: sizes must be >= 0, with at most one -1")
    if unknown:
        sizes[unknown[0]] = dim - (sum(sizes) + 1)
    if sum(sizes) != dim or min(sizes) < 0:
        raise ctx.error(f"size_splits {sizes} do not add up to size {dim} of axis {axis} of {x.type}")
    return _pieces(ctx, x, axis, sizes)


def pack(ctx: "TfliteContext") -> list[Value]:
    """PACK: the inputs (all one shape) stacked along a new axis."""
    opts = ctx.options(PackOptionsT)
    values = [ctx.input(i) for i in range(ctx.num_inputs())]
    shape = _shape(values[0])
    for i, v in enumerate(values):
        if _shape(v) != shape or v.type.dtype != values[0].type.dtype:
            raise ctx.error(f"input {i} is {v.type}; every input must be {values[0].type}")
    axis = _axis(ctx, int(opts.axis), len(shape) + 1, "the packed output")
    expanded = list(shape[:axis]) + [1] + list(shape[axis:])
    parts = [ctx.reshape(v, tuple(expanded)) for v in values]
    if len(parts) == 1:
        return [ctx.reshape(parts[0], ctx.output_shape(0), out=0)]
    return [ctx.emit("Concat", parts, {"axis": axis}, out=0)]


def unpack(ctx: "TfliteContext") -> list[Value]:
    """UNPACK: one output per index along `axis`, that axis dropped."""
    opts = ctx.options(UnpackOptionsT)
    x = ctx.input(0)
    axis = _axis(ctx, int(opts.axis), x.type.rank, f"input {x.type}")
    dim = _shape(x)[axis]
    if _output_count(ctx) != dim:
        raise ctx.error(f"{_output_count(ctx)} outputs, but axis {axis} of {x.type} has {dim} entries")
    return _pieces(ctx, x, axis, [1] * dim)


def depth_to_space(ctx: "TfliteContext") -> list[Value]:
    """DEPTH_TO_SPACE (NHWC): y[n, h*b + i, w*b + j, c] = x[n, h, w, (i*b + j)*C/b^2 + c], done as
    Reshape [N, H, W, b, b, C/b^2] -> Transpose (swap W and the first b) -> Reshape."""
    x = ctx.input(0)
    block = int(ctx.options(DepthToSpaceOptionsT).blockSize)
    if x.type.rank != 4:
        raise ctx.error(f"input {x.type} must be rank 4 (NHWC)")
    n, h, w, c = _shape(x)
    if block < 1 or c % (block * block):
        raise ctx.error(f"block_size {block} must be >= 1 with block_size^2 dividing the {c} channels of {x.type}")
    split = ctx.reshape(x, (n, h, w, block, block, c // (block * block)))
    y = ctx.emit("Transpose", [split], {"perm": [0, 1, 3, 2, 4, 5]})
    return [ctx.reshape(y, (n, h * block, w * block, c // (block * block)), out=0)]


CAST_TYPES = ("f32", "f16", "f64", "i32", "i64", "i16", "i8", "u8", "bool")


def cast(ctx: "TfliteContext") -> list[Value]:
    x = ctx.input(0)
    to = ctx.tensor_type(ctx._index(0, outputs=True), "output").dtype.value
    if x.type.dtype.value not in CAST_TYPES or to not in CAST_TYPES:
        raise ctx.error(f"CAST from {x.type.dtype.value} to {to} is not supported (types: {', '.join(CAST_TYPES)})")
    if x.type.dtype.value == to:
        return [ctx.reshape(x, ctx.output_shape(0), out=0)]
    return [ctx.emit("Cast", [x], {"to": to}, out=0)]


TFLITE_OPS_CONVERTERS: dict[int, Converter] = {
    B.SPLIT: split,
    B.SPLIT_V: split_v,
    B.PACK: pack,
    B.UNPACK: unpack,
    B.DEPTH_TO_SPACE: depth_to_space,
    B.CAST: cast,
}
