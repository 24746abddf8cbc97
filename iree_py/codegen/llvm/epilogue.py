"""Tile values for the conv2d and matmul kernels: vector load/store/FMA, loops that carry
accumulators, and the fused epilogue applied to each result vector before it is stored.

A "tile value" is either a float32 scalar (width 1) or an `<w x float>` vector (width w > 1):
tails narrower than the target's vector use narrower vectors, or, when the tail's width is known
only at run time, a full vector whose loads and stores are masked to its `valid` first lanes
(llvm.masked.load/store), so no lane ever touches memory outside the tensor. Buffers are only
4-byte aligned, so every load and store says `align 4`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from llvmlite import ir

from iree_py.codegen.kernel_spec import BINARY_OPS, UNARY_OPS, EpilogueOp
from iree_py.codegen.llvm import math as llvm_math
from iree_py.codegen.llvm.common import ALIGN, F32, I1, I32, I64, PTR, const_i32, const_i64 as i64, element_ptr, \
    splat_value


def tile_type(width: int) -> ir.Type:
    """float for width 1, <width x float> otherwise."""
    if width < 1:
        raise ValueError(f"tile width must be >= 1, got {width}")
    return F32 if width == 1 else ir.VectorType(F32, width)


def width_of(value: ir.Value) -> int:
    return value.type.count if isinstance(value.type, ir.VectorType) else 1


def zero(width: int) -> ir.Constant:
    return ir.Constant(tile_type(width), None)


def lane_mask(b: ir.IRBuilder, valid: ir.Value, width: int) -> ir.Value:
    """<width x i1>: lane i is set when i < valid (an i64)."""
    # Compared as i32 lanes, the width of the float lanes the mask selects: an i64 compare would
    # need packing down to each masked load's mask. Clamped to [0, width] first, so it fits.
    count = b.select(b.icmp_signed("<", valid, i64(width)), valid, i64(width))
    count = b.trunc(b.select(b.icmp_signed("<", count, i64(0)), i64(0), count), I32)
    lanes = ir.Constant(ir.VectorType(I32, width), list(range(width)))
    return b.icmp_signed("<", lanes, splat_value(b, count, ir.VectorType(I32, width)))


def _lanes(b: ir.IRBuilder, valid: ir.Value, width: int) -> ir.Value:
    """`valid` as a <width x i1> mask: a mask as given, an i64 count as its leading lanes."""
    if isinstance(valid.type, ir.VectorType):
        if valid.type.count != width:
            raise ValueError(f"a mask of {valid.type.count} lanes for a tile of {width}")
        return valid
    return lane_mask(b, valid, width)


def _intrinsic(b: ir.IRBuilder, name: str, fn_type: ir.FunctionType) -> ir.Function:
    module = b.module
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, fn_type, name=name)


def load_tile(b: ir.IRBuilder, base: ir.Value, index: ir.Value, width: int,
              valid: ir.Value | None = None) -> ir.Value:
    """`width` consecutive floats starting at base[index]. With `valid`, known only at run time
    (an i64 count of leading lanes, or a <width x i1> mask), only those lanes are read and the
    others are 0; a width-1 tile with a count (it is 1) is read as is."""
    if valid is None or (width == 1 and not isinstance(valid.type, ir.VectorType)):
        return b.load(element_ptr(b, base, index), typ=tile_type(width), align=ALIGN)
    ty = ir.VectorType(F32, width)  # a one-lane mask loads <1 x float>
    mask_ty = ir.VectorType(I1, width)
    fn = _intrinsic(b, f"llvm.masked.load.v{width}f32.p0", ir.FunctionType(ty, [PTR, I32, mask_ty, ty]))
    value = b.call(fn, [element_ptr(b, base, index), const_i32(ALIGN), _lanes(b, valid, width),
                        ir.Constant(ty, None)])
    return value if width > 1 else b.extract_element(value, const_i32(0))


def load_strided_tile(b: ir.IRBuilder, base: ir.Value, index: ir.Value, width: int,
                      stride: int, valid: ir.Value | None = None) -> ir.Value:
    """base[index + i * stride] for i < width: one load of the span that is needed ((width - 1) *
    stride + 1 floats, see load_span), then a shuffle that keeps every stride-th lane.
    `valid`: an i64 count of the leading lanes to read, or a mask over the span's lanes."""
    if stride == 1 or width == 1:
        return load_tile(b, base, index, width, valid)
    span = (width - 1) * stride + 1
    span_valid = valid
    if valid is not None and not isinstance(valid.type, ir.VectorType):
        span_valid = b.add(b.mul(b.sub(valid, i64(1)), i64(stride)), i64(1))
    return pick_lanes(b, load_span(b, base, index, span, width, span_valid), [i * stride for i in range(width)])


def load_span(b: ir.IRBuilder, base: ir.Value, index: ir.Value, count: int, width: int,
              valid: ir.Value | None = None) -> ir.Value:
    """base[index : index + count] as a vector of `count` rounded up to a multiple of `width` lanes
    (the lanes past `count` are undefined, and never read). A load of an odd lane count such as 15
    would be split into loads of 8, 4, 2 and 1 lanes put back together one by one; this one is
    whole loads of `width` lanes, the last one ending at the span's end (it overlaps the one before:
    no lane outside the span is read). `valid` as for load_tile, over `count` lanes: then the tail
    is one masked load and the lanes past `valid` are 0."""
    lanes = -(-count // width) * width
    if valid is None and lanes == count:
        return load_tile(b, base, index, lanes)
    if valid is None and count < width:  # too short for whole loads
        valid = i64(count)
    if valid is None:
        full = count // width
        chunks = [load_tile(b, base, b.add(index, i64(k * width)), width) for k in range(full)]
        chunks.append(load_tile(b, base, b.add(index, i64(count - width)), width))
        joined = _concat(b, chunks)
        tail = full * width - (count - width)  # lane of the last chunk where element full * width lies
        return pick_lanes(b, joined, [e if e < full * width else e + tail if e < count else 0 for e in range(lanes)])
    if isinstance(valid.type, ir.VectorType):
        if valid.type.count != count:
            raise ValueError(f"a mask of {valid.type.count} lanes for a span of {count}")
        padding = ir.Constant(valid.type, [ir.Constant(I1, 0)] * count)
        mask = _widen(b, valid, lanes, padding)
    else:
        mask = valid  # a count of leading lanes: the padding lanes lie past it
    return load_tile(b, base, index, lanes, mask)


def _widen(b: ir.IRBuilder, value: ir.Value, lanes: int, padding: ir.Value | None = None) -> ir.Value:
    """`value` (a vector) with lanes added up to `lanes`: padding's lanes, or undefined ones."""
    count = value.type.count
    if lanes > 2 * count:
        raise ValueError(f"a vector of {count} lanes cannot be widened to {lanes} by one shuffle")
    other = padding if padding is not None else ir.Constant(value.type, ir.Undefined)
    return b.shuffle_vector(value, other, ir.Constant(ir.VectorType(I32, lanes), list(range(lanes))))


def _concat(b: ir.IRBuilder, vectors: list[ir.Value]) -> ir.Value:
    """The vectors (all of one type) end to end, in a vector of the next power-of-two multiple of
    their lanes (the lanes past them undefined)."""
    while len(vectors) > 1:
        if len(vectors) % 2:
            vectors.append(ir.Constant(vectors[-1].type, ir.Undefined))
        vectors = [b.shuffle_vector(x, y, ir.Constant(ir.VectorType(I32, 2 * x.type.count),
                                                       list(range(2 * x.type.count))))
                   for x, y in zip(vectors[::2], vectors[1::2])]
    return vectors[0]


def pick_lanes(b: ir.IRBuilder, value: ir.Value, lanes: Sequence[int]) -> ir.Value:
    """The vector of value's `lanes`, in that order (one lane: the scalar)."""
    if len(lanes) == 1:
        return b.extract_element(value, const_i32(lanes[0]))
    mask = ir.Constant(ir.VectorType(I32, len(lanes)), [ir.Constant(I32, i) for i in lanes])
    return b.shuffle_vector(value, ir.Constant(value.type, ir.Undefined), mask)


def store_tile(b: ir.IRBuilder, value: ir.Value, base: ir.Value, index: ir.Value,
               valid: ir.Value | None = None) -> None:
    """Store `value` at base[index]; with `valid` (an i64 count of leading lanes), only those."""
    width = width_of(value)
    if valid is None or width == 1:
        b.store(value, element_ptr(b, base, index), align=ALIGN)
        return
    fn = _intrinsic(b, f"llvm.masked.store.v{width}f32.p0",
                    ir.FunctionType(ir.VoidType(), [value.type, PTR, I32, ir.VectorType(I1, width)]))
    b.call(fn, [value, element_ptr(b, base, index), const_i32(ALIGN), lane_mask(b, valid, width)])


def lane_offset(b: ir.IRBuilder, stride: int | ir.Value, lane: int) -> ir.Value:
    """lane * stride, for a stride known at build time (an int) or only at run time (an i64)."""
    return i64(lane * stride) if isinstance(stride, int) else b.mul(stride, i64(lane))


def gather_tile(b: ir.IRBuilder, base: ir.Value, index: ir.Value, width: int, stride: int | ir.Value) -> ir.Value:
    """base[index + i * stride] for i < width, one scalar load per lane (lanes far apart)."""
    if width == 1:
        return load_tile(b, base, index, 1)
    value = ir.Constant(tile_type(width), ir.Undefined)
    for lane in range(width):
        element = load_tile(b, base, b.add(index, lane_offset(b, stride, lane)), 1)
        value = b.insert_element(value, element, ir.Constant(I32, lane))
    return value


def scatter_tile(b: ir.IRBuilder, value: ir.Value, base: ir.Value, index: ir.Value,
                 stride: int | ir.Value) -> None:
    """base[index + i * stride] = value[i] for every lane i, one scalar store per lane."""
    if (isinstance(stride, int) and stride == 1) or width_of(value) == 1:
        store_tile(b, value, base, index)
        return
    for lane in range(width_of(value)):
        element = b.extract_element(value, ir.Constant(I32, lane))
        store_tile(b, element, base, b.add(index, lane_offset(b, stride, lane)))


def narrow_tile(b: ir.IRBuilder, value: ir.Value, width: int) -> ir.Value:
    """The first `width` lanes of vector `value` (a scalar for width 1)."""
    if width == width_of(value):
        return value
    if width == 1:
        return b.extract_element(value, ir.Constant(I32, 0))
    mask = ir.Constant(ir.VectorType(I32, width), [ir.Constant(I32, i) for i in range(width)])
    return b.shuffle_vector(value, ir.Constant(value.type, ir.Undefined), mask)


def splat(b: ir.IRBuilder, scalar: ir.Value, width: int) -> ir.Value:
    """A scalar float broadcast to a tile of `width` lanes."""
    if width == 1:
        return scalar
    vec_type = tile_type(width)
    one = b.insert_element(ir.Constant(vec_type, ir.Undefined), scalar, ir.Constant(I32, 0))
    mask = ir.Constant(ir.VectorType(I32, width), [ir.Constant(I32, 0)] * width)
    return b.shuffle_vector(one, ir.Constant(vec_type, ir.Undefined), mask)


def fma(b: ir.IRBuilder, x: ir.Value, y: ir.Value, acc: ir.Value) -> ir.Value:
    """x * y + acc with one rounding (llvm.fma)."""
    module = b.module
    suffix = f"v{x.type.count}f32" if isinstance(x.type, ir.VectorType) else "f32"
    name = f"llvm.fma.{suffix}"
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(x.type, [x.type] * 3), name=name)
    return b.call(fn, [x, y, acc])


def imin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def imax(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed(">", x, y), x, y)


LoopBody = Callable[[ir.Value, list[ir.Value]], list[ir.Value]]


def carried_loop(b: ir.IRBuilder, start: ir.Value, stop: ir.Value, step: int,
                 values: Sequence[ir.Value], body: LoopBody, name: str) -> list[ir.Value]:
    """for (i = start; i < stop; i += step) values = body(i, values); returns the final values.

    The values (accumulators) live in phis, so the loop needs no memory for them. The range may
    be empty (the header tests first)."""
    pre = b.block
    head = b.append_basic_block(f"{name}.head")
    loop = b.append_basic_block(f"{name}.body")
    done = b.append_basic_block(f"{name}.done")
    b.branch(head)
    b.position_at_end(head)
    index = b.phi(I64, name=name)
    index.add_incoming(start, pre)
    phis = []
    for value in values:
        phi = b.phi(value.type)
        phi.add_incoming(value, pre)
        phis.append(phi)
    b.cbranch(b.icmp_signed("<", index, stop), loop, done)
    b.position_at_end(loop)
    new_values = body(index, list(phis))
    if len(new_values) != len(phis):
        raise ValueError(f"loop {name}: body returned {len(new_values)} values, expected {len(phis)}")
    latch = b.block
    index.add_incoming(b.add(index, i64(step)), latch)
    for phi, value in zip(phis, new_values):
        phi.add_incoming(value, latch)
    b.branch(head)
    b.position_at_end(done)
    return list(phis)


def simple_loop(b: ir.IRBuilder, start: ir.Value, stop: ir.Value, step: int,
                body: Callable[[ir.Value], None], name: str) -> None:
    """for (i = start; i < stop; i += step) body(i)."""
    def carry_nothing(index: ir.Value, values: list[ir.Value]) -> list[ir.Value]:
        body(index)
        return []
    carried_loop(b, start, stop, step, [], carry_nothing, name)


def if_then(b: ir.IRBuilder, condition: ir.Value, body: Callable[[], None]) -> None:
    """llvmlite's if_then, taking the body as a callback (as the loop helpers here do)."""
    with b.if_then(condition):
        body()


def if_else(b: ir.IRBuilder, condition: ir.Value, then_body: Callable[[], None],
            else_body: Callable[[], None]) -> None:
    """llvmlite's if_else, taking both bodies as callbacks."""
    with b.if_else(condition) as (then, otherwise):
        with then:
            then_body()
        with otherwise:
            else_body()


# ---------------------------------------------------------------------------------------------
# The epilogue


@dataclass(frozen=True)
class TilePosition:
    """Where a result tile lies in the output, for reading epilogue operands.

    flat_index: i64 index of the tile's first element in the output.
    channel_index: i64 index into a "channel" operand: conv2d → the output channel (the same for
      every lane); matmul → the column of the first lane (lanes are consecutive columns).
    channel_along_lanes: False for conv2d (broadcast one element), True for matmul and the conv2d
      channel-vector path (load a vector).
    lane_stride: how far apart in the output consecutive lanes lie (1: contiguous; the conv2d
      channel-vector path: OH*OW, one lane per output channel plane; an i64 value when OH*OW is
      known only at run time), for "full" operands.
    valid: for a tile whose width is known only at run time, how many of its first lanes lie in
      the output (an i64; "full" operands are read for those lanes only); None: every lane.
    """

    flat_index: ir.Value
    channel_index: ir.Value
    channel_along_lanes: bool
    lane_stride: int | ir.Value = 1
    valid: ir.Value | None = None


def check_epilogue(ops: Sequence[EpilogueOp], input_count: int, kernel: str) -> None:
    """Fail at build time, naming the kernel and op, on an epilogue the kernels cannot apply."""
    for op in ops:
        if op.op in UNARY_OPS:
            continue
        if op.op not in BINARY_OPS:
            raise ValueError(f"kernel {kernel}: unsupported epilogue op {op.op!r}")
        if op.operand is None or not 0 <= op.operand < input_count:
            raise ValueError(f"kernel {kernel}: epilogue {op.op} operand {op.operand} is not one of "
                             f"the kernel's {input_count} inputs")
        if op.operand_kind not in ("scalar", "channel", "full"):
            raise ValueError(f"kernel {kernel}: epilogue {op.op} has operand_kind "
                             f"{op.operand_kind!r}, expected scalar, channel or full")


def _operand_tile(b: ir.IRBuilder, op: EpilogueOp, inputs: Sequence[ir.Value], width: int,
                  where: TilePosition) -> ir.Value:
    base = inputs[op.operand]
    if op.operand_kind == "scalar":
        return splat(b, b.load(base, typ=F32, align=ALIGN), width)
    if op.operand_kind == "full":
        if not (isinstance(where.lane_stride, int) and where.lane_stride == 1):
            assert where.valid is None, "a masked tile's lanes are contiguous"
            return gather_tile(b, base, where.flat_index, width, where.lane_stride)
        return load_tile(b, base, where.flat_index, width, where.valid)
    if where.channel_along_lanes:
        return load_tile(b, base, where.channel_index, width)
    return splat(b, b.load(element_ptr(b, base, where.channel_index), typ=F32, align=ALIGN), width)


def apply_epilogue(b: ir.IRBuilder, ops: Sequence[EpilogueOp], value: ir.Value,
                   inputs: Sequence[ir.Value], where: TilePosition) -> ir.Value:
    """value after each epilogue op in order; `inputs` are the kernel's input base pointers."""
    if not ops:
        return value
    width = width_of(value)
    for op in ops:
        if op.op in UNARY_OPS:
            value = llvm_math.emit_unary(b, op.op, dict(op.attrs), value)
            continue
        operand = _operand_tile(b, op, inputs, width, where)
        lhs, rhs = (operand, value) if op.operand_first else (value, operand)
        value = llvm_math.emit_binary(b, op.op, lhs, rhs)
    return value
