"""Kernels of the data-dependent ops (iree_py/ir/ops/data_dependent.py): each op runs in two passes, a
count kernel whose i64[1] result the lowering reads into a symbol, then a kernel that writes the
output allocated at that size. The builders take static and symbolic specs alike (a static spec
simply has no push constants).

  nonzero_count  X -> i64[1]: elements != 0 (a float NaN counts as non-zero, as in numpy)
  nonzero        X, count -> i64[rank, n]: coordinates of the non-zero elements, row-major
  unique_count   X -> i64[1]: distinct slices along attrs axis (fails on a NaN: Unique has no
                 order for it)
  unique         X, count -> one of values / indices / inverse / counts (attrs result), slices
                 in lexicographic order (attrs sorted 1) or in the order of first occurrence

Every kernel is one workgroup walking the data in order (O(len) for NonZero, O(u len) for sorted
Unique, O(len^2) for unsorted Unique; len counts slices, each compared in O(slice size)). The
writing kernels first check that the count tensor still holds the symbol they were given (push
constant) and never write past it."""
from __future__ import annotations

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_abi import STATUS_UNSUPPORTED_VALUE
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import I64, const_i64, element_ptr, entry_alloca, for_range
from iree_py.codegen.llvm.copy_common import attr_dim, fail_unless
from iree_py.codegen.llvm.dims import DynamicKernel, begin_dynamic_kernel, product
from iree_py.targets import Target
from iree_py.ir.types import DType, TensorType

FLOATS = {DType.f32: ir.FloatType(), DType.f64: ir.DoubleType()}
SIGNED = (DType.i8, DType.i16, DType.i32, DType.i64)
UNSIGNED = (DType.u8, DType.u16, DType.u32, DType.u64, DType.bool)


HALF = {DType.f16, DType.bf16}  # compared as f32


class Elements:
    """Loads and comparisons of one tensor's elements in its own dtype (f16 and bf16 widened to
    f32), and raw loads and stores of their bits (for copies)."""

    def __init__(self, t: TensorType, what: str) -> None:
        if t.dtype not in (*FLOATS, *HALF, *SIGNED, *UNSIGNED):
            raise CompileError(f"{what}: unsupported dtype {t.dtype.value} of {t}")
        self.dtype = t.dtype
        self.raw = ir.IntType(t.dtype.itemsize * 8)
        self.type = FLOATS.get(t.dtype, ir.FloatType() if t.dtype in HALF else self.raw)
        self.align = min(4, t.dtype.itemsize)

    def load_raw(self, b: ir.IRBuilder, base: ir.Value, index: ir.Value) -> ir.Value:
        return b.load(element_ptr(b, base, index, self.raw), typ=self.raw, align=self.align)

    def store_raw(self, b: ir.IRBuilder, value: ir.Value, base: ir.Value, index: ir.Value) -> None:
        b.store(value, element_ptr(b, base, index, self.raw), align=self.align)

    def load(self, b: ir.IRBuilder, base: ir.Value, index: ir.Value) -> ir.Value:
        if self.dtype == DType.f16:
            half = b.load(element_ptr(b, base, index, ir.HalfType()), typ=ir.HalfType(), align=2)
            return b.fpext(half, ir.FloatType())
        if self.dtype == DType.bf16:
            bits = b.shl(b.zext(self.load_raw(b, base, index), ir.IntType(32)), ir.Constant(ir.IntType(32), 16))
            return b.bitcast(bits, ir.FloatType())
        return b.load(element_ptr(b, base, index, self.type), typ=self.type, align=self.align)

    def is_float(self) -> bool:
        return isinstance(self.type, (ir.FloatType, ir.DoubleType))

    def compare(self, b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value) -> ir.Value:
        if self.is_float():
            return b.fcmp_unordered(op, x, y) if op == "!=" else b.fcmp_ordered(op, x, y)
        if self.dtype in SIGNED:
            return b.icmp_signed(op, x, y)
        return b.icmp_unsigned(op, x, y)

    def nonzero(self, b: ir.IRBuilder, x: ir.Value) -> ir.Value:
        return self.compare(b, "!=", x, ir.Constant(self.type, 0))


def _store_i64(b: ir.IRBuilder, value: ir.Value, base: ir.Value, index: ir.Value | int) -> None:
    b.store(value, element_ptr(b, base, index, I64), align=4)


def _load_i64(b: ir.IRBuilder, base: ir.Value, index: ir.Value | int) -> ir.Value:
    return b.load(element_ptr(b, base, index, I64), typ=I64, align=4)


def _increment(b: ir.IRBuilder, slot: ir.Value, by: ir.Value | None = None) -> None:
    b.store(b.add(b.load(slot), by if by is not None else const_i64(1)), slot)


def _check_count(dk: DynamicKernel, count_binding: int, count: ir.Value) -> None:
    """The count tensor must hold the symbol the kernel was given (else the output was sized
    for another count)."""
    b = dk.builder
    fail_unless(dk, b.icmp_signed("==", _load_i64(b, dk.binding(count_binding), 0), count), "count")


def _expect(spec: KernelSpec, inputs: int, what: str) -> None:
    if len(spec.inputs) != inputs or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects {inputs} input(s) and 1 output")


def build_nonzero_count(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"nonzero_count kernel {spec.name}"
    _expect(spec, 1, what)
    x_t = spec.inputs[0]
    elements = Elements(x_t, what)
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    src, dst = dk.binding(0), dk.binding(1)
    found = entry_alloca(b, I64, "found")
    b.store(const_i64(0), found)
    with for_range(b, 0, dk.dim(product(x_t.shape)), name="i") as i:
        _increment(b, found, b.zext(elements.nonzero(b, elements.load(b, src, i)), I64))
    _store_i64(b, b.load(found), dst, 0)
    dk.finish()
    return dk.info(workgroup_count=(1, 1, 1))


def build_nonzero(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"nonzero kernel {spec.name}"
    _expect(spec, 2, what)
    x_t = spec.inputs[0]
    elements = Elements(x_t, what)
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    count = dk.dim(attr_dim(spec.attrs["count"]))
    _check_count(dk, 1, count)
    src, dst = dk.binding(0), dk.binding(2)
    dims = dk.dims(x_t)
    strides = [product(x_t.shape[axis + 1:]) for axis in range(x_t.rank)]
    position = entry_alloca(b, I64, "position")
    b.store(const_i64(0), position)
    with for_range(b, 0, dk.dim(product(x_t.shape)), name="i") as i:
        hit = b.and_(elements.nonzero(b, elements.load(b, src, i)), b.icmp_signed("<", b.load(position), count))
        with b.if_then(hit):
            at = b.load(position)
            for axis, (size, stride) in enumerate(zip(dims, strides)):
                coordinate = b.urem(b.udiv(i, dk.dim(stride)), size)
                _store_i64(b, coordinate, dst, b.add(b.mul(const_i64(axis), count), at))
            _increment(b, position)
    dk.finish()
    return dk.info(workgroup_count=(1, 1, 1))


class Slices:
    """X seen as [outer, n, inner] around attrs axis: slice j is X[:, j, :], compared
    lexicographically (outer, then inner, as numpy.unique with an axis)."""

    def __init__(self, dk: DynamicKernel, elements: Elements, axis: int) -> None:
        shape = dk.spec.inputs[0].shape
        self.dk, self.elements, self.src = dk, elements, dk.binding(0)
        self.outer, self.n, self.inner = (dk.dim(product(shape[:axis])), dk.dim(shape[axis]),
                                          dk.dim(product(shape[axis + 1:])))
        self.state = entry_alloca(dk.builder, I64, "order")

    def offset(self, o: ir.Value, j: ir.Value, c: ir.Value, n: ir.Value | None = None) -> ir.Value:
        b = self.dk.builder
        return b.add(b.mul(b.add(b.mul(o, n if n is not None else self.n), j), self.inner), c)

    def order(self, j: ir.Value, k: ir.Value) -> ir.Value:
        """-1, 0 or 1 as slice j comes before, equals or comes after slice k."""
        b, e = self.dk.builder, self.elements
        b.store(const_i64(0), self.state)
        with for_range(b, 0, self.outer, name="o") as o:
            with for_range(b, 0, self.inner, name="c") as c:
                x, y = e.load(b, self.src, self.offset(o, j, c)), e.load(b, self.src, self.offset(o, k, c))
                differs = b.select(e.compare(b, "<", x, y), const_i64(-1),
                                   b.select(e.compare(b, ">", x, y), const_i64(1), const_i64(0)))
                state = b.load(self.state)
                b.store(b.select(b.icmp_signed("==", state, const_i64(0)), differs, state), self.state)
        return b.load(self.state)

    def same(self, j: ir.Value, k: ir.Value) -> ir.Value:
        return self.dk.builder.icmp_signed("==", self.order(j, k), const_i64(0))

    def first_occurrence(self, i: ir.Value, first: ir.Value) -> ir.Value:
        """The lowest j <= i whose slice equals slice i (stored in `first`)."""
        b = self.dk.builder
        b.store(i, first)
        with for_range(b, 0, i, name="j") as j:
            with b.if_then(b.icmp_signed("==", b.load(first), i)):
                b.store(b.select(self.same(j, i), j, b.load(first)), first)
        return b.load(first)

    def copy(self, j: ir.Value, dst: ir.Value, slot: ir.Value, slots: ir.Value) -> None:
        """Slice j into slot `slot` of dst, shaped [outer, slots, inner]."""
        b, e = self.dk.builder, self.elements
        with for_range(b, 0, self.outer, name="o") as o:
            with for_range(b, 0, self.inner, name="c") as c:
                e.store_raw(b, e.load_raw(b, self.src, self.offset(o, j, c)), dst, self.offset(o, slot, c, slots))


def _refuse_nan(dk: DynamicKernel, elements: Elements, size: ir.Value) -> None:
    """Unique has no order for NaN: the count kernel fails (STATUS_UNSUPPORTED_VALUE) when the data holds one."""
    if not elements.is_float():
        return
    b = dk.builder
    seen = entry_alloca(b, ir.IntType(1), "nan")
    b.store(ir.Constant(ir.IntType(1), 0), seen)
    with for_range(b, 0, size, name="i") as i:
        v = elements.load(b, dk.binding(0), i)
        b.store(b.or_(b.load(seen), b.fcmp_unordered("uno", v, v)), seen)
    fail_unless(dk, b.not_(b.load(seen)), "nan", STATUS_UNSUPPORTED_VALUE)


def build_unique_count(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"unique_count kernel {spec.name}"
    _expect(spec, 1, what)
    x_t = spec.inputs[0]
    elements = Elements(x_t, what)
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    _refuse_nan(dk, elements, dk.dim(product(x_t.shape)))
    slices = Slices(dk, elements, int(spec.attrs["axis"]))
    found, first = entry_alloca(b, I64, "found"), entry_alloca(b, I64, "first")
    b.store(const_i64(0), found)
    with for_range(b, 0, slices.n, name="i") as i:
        _increment(b, found, b.zext(b.icmp_signed("==", slices.first_occurrence(i, first), i), I64))
    _store_i64(b, b.load(found), dk.binding(1), 0)
    dk.finish()
    return dk.info(workgroup_count=(1, 1, 1))


def build_unique(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"unique kernel {spec.name}"
    _expect(spec, 2, what)
    elements = Elements(spec.inputs[0], what)
    result = spec.attrs["result"]
    if result not in ("values", "indices", "inverse", "counts"):
        raise ValueError(f"{what}: result {result!r} must be values, indices, inverse or counts")
    dk = begin_dynamic_kernel(module, spec, target)
    count = dk.dim(attr_dim(spec.attrs["count"]))
    _check_count(dk, 1, count)
    slices = Slices(dk, elements, int(spec.attrs["axis"]))
    if int(spec.attrs["sorted"]):
        _unique_sorted(dk, slices, result, count)
    else:
        _unique_in_order(dk, slices, result, count)
    dk.finish()
    return dk.info(workgroup_count=(1, 1, 1))


def _write(dk: DynamicKernel, slices: Slices, result: str, slot: ir.Value, count: ir.Value, first: ir.Value,
           occurrences: ir.Value) -> None:
    """Slot `slot` of the values, indices or counts output."""
    b, dst = dk.builder, dk.binding(2)
    if result == "values":
        slices.copy(first, dst, slot, count)
    elif result == "indices":
        _store_i64(b, first, dst, slot)
    elif result == "counts":
        _store_i64(b, occurrences, dst, slot)


def _unique_in_order(dk: DynamicKernel, slices: Slices, result: str, count: ir.Value) -> None:
    """Slots in the order of first occurrence: slot p is the p-th slice seen for the first time;
    inverse[i] copies inverse[first occurrence of slice i]."""
    b, dst = dk.builder, dk.binding(2)
    slot, first, occurrences = (entry_alloca(b, I64, name) for name in ("slot", "first", "occurrences"))
    b.store(const_i64(0), slot)
    b.store(const_i64(0), occurrences)
    with for_range(b, 0, slices.n, name="i") as i:
        j = slices.first_occurrence(i, first)
        is_new = b.and_(b.icmp_signed("==", j, i), b.icmp_signed("<", b.load(slot), count))
        with b.if_else(is_new) as (new, seen):
            with new:
                if result == "counts":
                    b.store(const_i64(0), occurrences)
                    with for_range(b, i, slices.n, name="k") as k:
                        _increment(b, occurrences, b.zext(slices.same(k, i), I64))
                if result == "inverse":
                    _store_i64(b, b.load(slot), dst, i)
                else:
                    _write(dk, slices, result, b.load(slot), count, i, b.load(occurrences))
                _increment(b, slot)
            with seen:
                if result == "inverse":
                    _store_i64(b, _load_i64(b, dst, j), dst, i)


def _unique_sorted(dk: DynamicKernel, slices: Slices, result: str, count: ir.Value) -> None:
    """Slot r holds the r-th smallest distinct slice: pass r picks the first of the smallest slices
    above pass r-1's, then one scan counts its copies (and writes inverse for them)."""
    b, dst = dk.builder, dk.binding(2)
    zero = const_i64(0)
    prev, best, occurrences = (entry_alloca(b, I64, name) for name in ("prev", "best", "occurrences"))
    take = entry_alloca(b, ir.IntType(1), "take")
    b.store(const_i64(-1), prev)
    with for_range(b, 0, count, name="r") as r:
        b.store(const_i64(-1), best)
        with for_range(b, 0, slices.n, name="j") as j:
            b.store(b.icmp_signed("<", b.load(prev), zero), take)  # above the previous pick (none yet: all)
            with b.if_then(b.icmp_signed(">=", b.load(prev), zero)):
                b.store(b.icmp_signed(">", slices.order(j, b.load(prev)), zero), take)
            with b.if_then(b.and_(b.load(take), b.icmp_signed(">=", b.load(best), zero))):
                b.store(b.icmp_signed("<", slices.order(j, b.load(best)), zero), take)  # strictly: ties keep the first
            with b.if_then(b.load(take)):
                b.store(j, best)
        fail_unless(dk, b.icmp_signed(">=", b.load(best), zero), "slot")  # fewer distinct slices than count
        b.store(b.load(best), prev)
        b.store(zero, occurrences)
        with for_range(b, 0, slices.n, name="k") as k:
            with b.if_then(slices.same(k, b.load(best))):
                _increment(b, occurrences)
                if result == "inverse":
                    _store_i64(b, r, dst, k)
        if result != "inverse":
            _write(dk, slices, result, r, count, b.load(best), b.load(occurrences))
