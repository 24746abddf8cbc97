"""Helpers every kernel builder uses: the ABI entry function, binding pointers, workgroup ids,
counted loops, and the IR types kernels work with.

A kernel is `i32 @NAME(ptr %dispatch_state, ptr %workgroup_state)` returning 0 (kernel_abi.h).
Typical use:

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    with for_range(b, 0, n) as i:
        ...
    kb.finish()
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from llvmlite import ir

from iree_py.codegen.kernel_abi import dispatch_state_layout, workgroup_state_layout
from iree_py.targets import Target

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
PTR = ir.PointerType()
ALIGN = 4  # buffers are only guaranteed 4-byte aligned

KERNEL_FN_TYPE = ir.FunctionType(I32, [PTR, PTR])

# Added to every function definition's text before parsing (llvmlite's attribute set refuses it):
# stops LLVM from turning loops into memcpy/memset calls, since kernels import nothing.
NO_BUILTINS_ATTR = '"no-builtins"'


def float_vector(lanes: int) -> ir.VectorType:
    return ir.VectorType(F32, lanes)


def lanes_f32(target: Target) -> int:
    """How many f32 lanes a kernel should use along its innermost axis (at least 1)."""
    return max(1, target.vector_bits // 32)


def const_i32(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


def const_i64(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def const_f32(value: float) -> ir.Constant:
    return ir.Constant(F32, float(value))


def splat(value: float | ir.Value, ty: ir.Type) -> ir.Value:
    """`value` as `ty`: the constant itself for a scalar type, every lane set for a vector type."""
    if isinstance(ty, ir.VectorType):
        if isinstance(value, (int, float)):
            return ir.Constant(ty, [float(value)] * ty.count if ty.element == F32 else [int(value)] * ty.count)
        raise TypeError("splat of a non-constant into a vector: use splat_value(builder, ...)")
    if isinstance(value, (int, float)):
        return ir.Constant(ty, float(value) if isinstance(ty, ir.FloatType) else int(value))
    return value


def splat_value(b: ir.IRBuilder, value: ir.Value, ty: ir.Type) -> ir.Value:
    """A scalar SSA value broadcast to every lane of vector type `ty` (unchanged for a scalar type)."""
    if not isinstance(ty, ir.VectorType):
        return value
    vec = b.insert_element(ir.Constant(ty, ir.Undefined), value, const_i32(0))
    return b.shuffle_vector(vec, ir.Constant(ty, ir.Undefined), ir.Constant(ir.VectorType(I32, ty.count), [0] * ty.count))


def as_index(value: int | ir.Value) -> ir.Value:
    return const_i64(value) if isinstance(value, int) else value


def element_ptr(b: ir.IRBuilder, base: ir.Value, index: int | ir.Value, elem_ty: ir.Type = F32) -> ir.Value:
    """Address of element `index` (i64 or int) of an array of `elem_ty` starting at `base`."""
    return b.gep(base, [as_index(index)], source_etype=elem_ty)


def load_f32(b: ir.IRBuilder, base: ir.Value, index: int | ir.Value, ty: ir.Type = F32) -> ir.Value:
    """Load a float (or a float vector of type `ty`) starting at f32 element `index` of `base`."""
    return b.load(element_ptr(b, base, index), typ=ty, align=ALIGN)


def store_f32(b: ir.IRBuilder, value: ir.Value, base: ir.Value, index: int | ir.Value) -> None:
    b.store(value, element_ptr(b, base, index), align=ALIGN)


def load_binding_length(b: ir.IRBuilder, dispatch_state: ir.Value, index: int, pointer_bits: int) -> ir.Value:
    """The byte length of binding `index` (dispatch_state.binding_lengths[index]) as an i64."""
    word = pointer_bits // 8
    size_type = ir.IntType(pointer_bits)
    offset = dispatch_state_layout(pointer_bits).offsets["binding_lengths"]
    table = b.load(b.gep(dispatch_state, [const_i64(offset)], source_etype=I8), typ=PTR, align=word)
    length = b.load(b.gep(table, [const_i64(index)], source_etype=size_type), typ=size_type, align=word)
    return b.zext(length, I64) if pointer_bits < 64 else length


@dataclass
class KernelBuilder:
    """The function being built, its IR builder positioned in the body, and ABI accessors."""

    module: ir.Module
    function: ir.Function
    builder: ir.IRBuilder
    target: Target

    @property
    def dispatch_state(self) -> ir.Argument:
        return self.function.args[0]

    @property
    def workgroup_state(self) -> ir.Argument:
        return self.function.args[1]

    def binding(self, index: int) -> ir.Value:
        """Base pointer of binding `index` (inputs then outputs)."""
        b = self.builder
        offset = dispatch_state_layout(self.target.pointer_bits).offsets["bindings"]
        field = b.gep(self.dispatch_state, [const_i64(offset)], source_etype=I8)
        table = b.load(field, typ=PTR, align=self.target.pointer_bits // 8)
        slot = b.gep(table, [const_i64(index)], source_etype=PTR)
        base = b.load(slot, typ=PTR, align=self.target.pointer_bits // 8, name=f"binding{index}")
        return base

    def binding_length(self, index: int) -> ir.Value:
        """The byte length of binding `index` as the runtime passed it, as an i64."""
        return load_binding_length(self.builder, self.dispatch_state, index, self.target.pointer_bits)

    def workgroup_id(self, axis: int) -> ir.Value:
        """The workgroup id on `axis` (0 = x, 1 = y, 2 = z), as an i32."""
        if axis not in (0, 1, 2):
            raise ValueError(f"workgroup axis must be 0, 1 or 2, got {axis}")
        b = self.builder
        offset = workgroup_state_layout(self.target.pointer_bits).offsets["workgroup_id"] + 4 * axis
        field = b.gep(self.workgroup_state, [const_i64(offset)], source_etype=I8)
        return b.load(field, typ=I32, align=4, name=f"workgroup_id_{'xyz'[axis]}")

    def workgroup_id_index(self, axis: int) -> ir.Value:
        """The workgroup id on `axis` zero-extended to i64, ready for index math."""
        return self.builder.zext(self.workgroup_id(axis), I64)

    def finish(self) -> None:
        """Emit `ret i32 0` at the current position."""
        self.builder.ret(const_i32(0))


def return_unless(b: ir.IRBuilder, ok: ir.Value, status: int, name: str) -> None:
    """Continue when `ok` (an i1) holds, else return `status` (a code of kernel_abi.KERNEL_STATUSES)
    from the kernel, which fails the dispatch."""
    fn = b.block.function
    fail, cont = fn.append_basic_block(f"{name}.fail"), fn.append_basic_block(f"{name}.ok")
    b.cbranch(ok, cont, fail)
    b.position_at_end(fail)
    b.ret(const_i32(status))
    b.position_at_end(cont)


def begin_kernel(module: ir.Module, name: str, target: Target) -> KernelBuilder:
    """Add the entry function `name` with the kernel ABI signature; returns its builder."""
    if name in module.globals:
        raise ValueError(f"kernel {name!r} is defined twice in one module")
    fn = ir.Function(module, KERNEL_FN_TYPE, name=name)
    fn.linkage = "internal"  # reached through the library table, not by symbol
    fn.args[0].name = "dispatch_state"
    fn.args[1].name = "workgroup_state"
    for arg in fn.args:
        arg.add_attribute("noalias")
    fn.attributes.add("nounwind")
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    return KernelBuilder(module, fn, builder, target)


@contextmanager
def for_range(b: ir.IRBuilder, start: int | ir.Value, stop: int | ir.Value, step: int = 1,
              name: str = "i") -> Iterator[ir.Value]:
    """A counted loop `for (i = start; i < stop; i += step)` over i64; yields the index.

    The body is whatever the caller emits inside the `with`; afterwards the builder is positioned
    after the loop."""
    if step <= 0:
        raise ValueError(f"for_range step must be positive, got {step}")
    start_v, stop_v = as_index(start), as_index(stop)
    pre = b.block
    header = b.append_basic_block(f"{name}.header")
    body = b.append_basic_block(f"{name}.body")
    exit_ = b.append_basic_block(f"{name}.exit")
    b.branch(header)
    b.position_at_end(header)
    index = b.phi(I64, name=name)
    index.add_incoming(start_v, pre)
    b.cbranch(b.icmp_signed("<", index, stop_v), body, exit_)
    b.position_at_end(body)
    yield index
    nxt = b.add(index, const_i64(step), name=f"{name}.next")
    index.add_incoming(nxt, b.block)
    b.branch(header)
    b.position_at_end(exit_)


def vector_split(count: int, lanes: int) -> tuple[int, int]:
    """(vector part, tail) of a loop over `count` elements with `lanes`-wide vectors: the vector
    part is the largest multiple of `lanes` <= count."""
    vec = (count // lanes) * lanes if lanes > 1 else 0
    return vec, count - vec


def vector_end(b: ir.IRBuilder, length: int | ir.Value, lanes: int) -> int | ir.Value:
    """Where the vector part of a loop over `length` (>= 0) elements ends: the largest multiple of
    `lanes` <= length; 0 without vectors. An int length (a known dim) gives an int."""
    if isinstance(length, int):
        return vector_split(length, lanes)[0]
    if lanes <= 1:
        return const_i64(0)
    return b.mul(b.udiv(length, const_i64(lanes)), const_i64(lanes))


def has_vectors(vec_end: int | ir.Value, lanes: int) -> bool:
    """Whether a loop whose vector part ends at `vec_end` (vector_end's result) has one to emit."""
    return lanes > 1 and not (isinstance(vec_end, int) and vec_end == 0)


def for_columns(b: ir.IRBuilder, inner: int | ir.Value, lanes: int, body, scalar: ir.Type = F32) -> None:
    """body(ty, col) for vectors of `lanes` positions of [0, inner) (ty: `lanes` x `scalar`), then
    body(scalar, col) for each remaining position. `inner` is an int (a known dim) or an i64."""
    vec_inner = vector_end(b, inner, lanes)
    if has_vectors(vec_inner, lanes):
        with for_range(b, 0, vec_inner, step=lanes, name="c") as col:
            body(ir.VectorType(scalar, lanes), col)
    with for_range(b, vec_inner, inner, name="ct") as col:
        body(scalar, col)


def strides_of(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major element strides of `shape`."""
    strides = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * shape[axis + 1]
    return tuple(strides)


def static_shape(t, what: str) -> tuple[int, ...]:
    """The static shape of TensorType `t`; a clear error for symbolic dims."""
    if not t.is_static:
        raise ValueError(f"{what}: shape {t} is not static; kernels need static shapes")
    return tuple(int(d) for d in t.shape)


def entry_alloca(b: ir.IRBuilder, ty: ir.Type, name: str = "acc") -> ir.Value:
    """A stack slot in the function's entry block (promoted to a register by LLVM); use it for
    values carried across loop iterations. Assumes the builder is at the end of its block."""
    block = b.block
    b.position_at_start(block.function.entry_basic_block)
    slot = b.alloca(ty, name=name)
    b.position_at_end(block)
    return slot


def horizontal(b: ir.IRBuilder, vec: ir.Value, combine) -> ir.Value:
    """Fold the lanes of `vec` with `combine(b, x, y)` (e.g. fadd or max) into one scalar."""
    if not isinstance(vec.type, ir.VectorType):
        return vec
    acc = b.extract_element(vec, const_i32(0))
    for lane in range(1, vec.type.count):
        acc = combine(b, acc, b.extract_element(vec, const_i32(lane)))
    return acc


def min_index(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def max_index(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed(">", x, y), x, y)


def rows_or_columns(b: ir.IRBuilder, inner: int | ir.Value, by_rows: Callable[[], None],
                    by_columns: Callable[[], None]) -> None:
    """A kernel over [outer, length, inner] that works along the contiguous run when inner is 1
    (by_rows) and across the inner positions otherwise (by_columns): decided when the kernel is
    built for a known inner (an int), by a branch at run time for an i64 one (both compiled)."""
    if isinstance(inner, int):
        (by_rows if inner == 1 else by_columns)()
        return
    with b.if_else(b.icmp_signed("==", inner, const_i64(1))) as (rows_path, columns_path):
        with rows_path:
            by_rows()
        with columns_path:
            by_columns()
