"""The "resize" kernel: a gather-and-blend over tap tables computed at compile time
(iree_py/ir/resize_math.py).

Bindings: X, index table (i32), weight table (f32), Y. X is f32, or any dtype when every axis
has at most one tap (nearest: the element is moved, weights ignored). attrs: sizes (the output
shape), taps (per axis; 0 = the axis is copied), extrapolation_value. For an output position o,
each resized axis a contributes taps t with source index index_a[o_a, t] and weight
weight_a[o_a, t]; the output is the sum over all tap combinations of the product of the weights
times x at those indices, or extrapolation_value when some axis's first index is -1 (outside the
input, tf_crop_and_resize). One workgroup per index of the leading axes (all but the last two).

The "resize_rt" kernel (build_runtime; op ResizeRuntime, iree_py/ir/ops/resize.py): ONNX Resize
with the source coordinates and weights computed in the kernel, per output index, from scales and
roi read from bindings at run time. The arithmetic mirrors resize_math.py: float32 where
onnxruntime computes in float32, double where the Python reference does. Bindings: X (rank R),
scales (f32[K]), roi (f32[2K]), Y; attrs as the op. Dims are ints or Exprs (push constants). One
workgroup per index of the leading output axes (all but the last two). For each resized axis the
taps (source index, weight) of the current output index live in small stack arrays, computed when
the loop over that axis advances; the element is the blend of all tap combinations (f32), a moved
element (nearest on any dtype) or extrapolation_value when some axis maps outside the input
(tf_crop_and_resize). Memory safety: every float coordinate is clamped (NaN -> 0) before it becomes
an integer, and every source index is clamped to [0, in - 1]; the kernel does nothing when a
resized input axis is empty.
"""
from __future__ import annotations

import math

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (F32, I32, I64, begin_kernel, const_f32, const_i32, const_i64, element_ptr,
                                         entry_alloca, for_range, load_f32, static_shape, store_f32, strides_of)
from iree_py.codegen.llvm.copy_common import element_type
from iree_py.codegen.llvm.dims import begin_dynamic_kernel
from iree_py.codegen.llvm.pad import value_bits
from iree_py.ir.dim_checks import product
from iree_py.ir.types import DType
from iree_py.targets import Target


def _check(spec: KernelSpec) -> tuple[tuple[int, ...], tuple[int, ...], list[int]]:
    what = f"resize kernel {spec.name}"
    if len(spec.inputs) != 3 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects X, index table, weight table and 1 output")
    x_t, index_t, weight_t = spec.inputs
    if spec.outputs[0].dtype != x_t.dtype:
        raise ValueError(f"{what}: output dtype {spec.outputs[0].dtype.value} != input {x_t.dtype.value}")
    if index_t.dtype != DType.i32 or weight_t.dtype != DType.f32:
        raise ValueError(f"{what}: tables must be i32 and f32, got {index_t} and {weight_t}")
    in_shape = static_shape(x_t, what)
    out_shape = static_shape(spec.outputs[0], what)
    taps = [int(n) for n in spec.attrs["taps"]]
    if tuple(int(d) for d in spec.attrs["sizes"]) != out_shape or len(taps) != len(in_shape):
        raise ValueError(f"{what}: sizes {spec.attrs['sizes']} / taps {taps} do not match {in_shape} -> {out_shape}")
    entries = sum(n * o for n, o in zip(taps, out_shape))
    if index_t.num_elements != entries or weight_t.num_elements != entries:
        raise ValueError(f"{what}: tables hold {index_t.num_elements} entries, taps need {entries}")
    if x_t.dtype != DType.f32 and any(n > 1 for n in taps):
        raise ValueError(f"{what}: only f32 blends several taps; {x_t.dtype.value} takes one (nearest), taps {taps}")
    for axis, (n, i, o) in enumerate(zip(taps, in_shape, out_shape)):
        if n == 0 and i != o:
            raise ValueError(f"{what}: axis {axis} is copied (0 taps) but {i} != {o}")
    return in_shape, out_shape, taps


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    in_shape, out_shape, taps = _check(spec)
    rank = len(out_shape)
    in_strides, out_strides = strides_of(in_shape), strides_of(out_shape)
    table_base, offset = [], 0
    for n, o in zip(taps, out_shape):
        table_base.append(offset)
        offset += n * o
    resized = [a for a in range(rank) if taps[a]]
    split = max(0, rank - 2)
    groups = math.prod(out_shape[:split])
    extrapolation = float(spec.attrs.get("extrapolation_value", 0.0))
    dtype = spec.inputs[0].dtype
    copy_elem = None if dtype == DType.f32 else element_type(dtype.itemsize, f"resize kernel {spec.name}")

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, index_table, weight_table, dst = (kb.binding(i) for i in range(4))
    acc = entry_alloca(b, F32)
    position: list[ir.Value] = [const_i64(0)] * rank
    rest = kb.workgroup_id_index(0)
    for axis in range(split - 1, -1, -1):
        position[axis] = b.urem(rest, const_i64(out_shape[axis])) if axis else rest
        rest = b.udiv(rest, const_i64(out_shape[axis])) if axis else rest

    def entry(axis: int, tap: ir.Value | int) -> ir.Value:
        return b.add(b.mul(position[axis], const_i64(taps[axis])), b.add(const_i64(table_base[axis]),
                                                                          const_i64(tap) if isinstance(tap, int)
                                                                          else tap))

    def source_index(axis: int, tap: ir.Value | int) -> ir.Value:
        return b.sext(b.load(element_ptr(b, index_table, entry(axis, tap), I32), typ=I32, align=4), I64)

    def copy(offset: ir.Value, out_offset: ir.Value) -> None:
        """Non-f32 (nearest): one tap per axis, its weight 1: move the element."""
        for axis in resized:
            offset = b.add(offset, b.mul(source_index(axis, 0), const_i64(in_strides[axis])))
        align = min(4, copy_elem.width // 8)
        v = b.load(element_ptr(b, src, offset, copy_elem), typ=copy_elem, align=align)
        b.store(v, element_ptr(b, dst, out_offset, copy_elem), align=align)

    def blend(level: int, offset: ir.Value, weight: ir.Value | None) -> None:
        if level == len(resized):
            x = load_f32(b, src, offset)
            b.store(b.fadd(b.load(acc), x if weight is None else b.fmul(weight, x)), acc)
            return
        axis = resized[level]
        with for_range(b, 0, taps[axis], name=f"tap{axis}") as t:
            w = load_f32(b, weight_table, entry(axis, t))
            here = b.add(offset, b.mul(source_index(axis, t), const_i64(in_strides[axis])))
            blend(level + 1, here, w if weight is None else b.fmul(weight, w))

    def element() -> None:
        out_offset = const_i64(0)
        copied = const_i64(0)
        for axis in range(rank):
            out_offset = b.add(out_offset, b.mul(position[axis], const_i64(out_strides[axis])))
            if not taps[axis]:
                copied = b.add(copied, b.mul(position[axis], const_i64(in_strides[axis])))
        outside = ir.Constant(ir.IntType(1), 0)
        for axis in resized:
            outside = b.or_(outside, b.icmp_signed("<", source_index(axis, 0), const_i64(0)))
        with b.if_else(outside) as (then, otherwise):
            with then:
                if copy_elem is None:
                    store_f32(b, const_f32(extrapolation), dst, out_offset)
                else:
                    bits = value_bits(extrapolation, dtype.numpy)
                    b.store(ir.Constant(copy_elem, bits), element_ptr(b, dst, out_offset, copy_elem),
                            align=min(4, copy_elem.width // 8))
            with otherwise:
                if copy_elem is not None:
                    copy(copied, out_offset)
                    return
                b.store(const_f32(0.0), acc)
                blend(0, copied, None)
                store_f32(b, b.load(acc), dst, out_offset)

    def loops(axis: int) -> None:
        if axis == rank:
            element()
            return
        with for_range(b, 0, out_shape[axis], name=f"o{axis}") as i:
            position[axis] = i
            loops(axis + 1)

    if all(out_shape):
        loops(split)
    kb.finish()
    return KernelInfo(spec.name, (max(groups, 1), 1, 1), (),
                      tuple(t.num_bytes for t in (*spec.inputs, spec.outputs[0])))


# --- resize_rt: coordinates and weights computed per output index ------------------------------

F64 = ir.DoubleType()
I1 = ir.IntType(1)
TAPS = {"nearest": 1, "linear": 2, "cubic": 4}
SAFE = float(1 << 22)  # coordinates are clamped to +-SAFE before conversion (f32 is integral beyond 2**23)


def count_to_f32(b: ir.IRBuilder, count: ir.Value, target: Target) -> ir.Value:
    """An i64 element count (>= 0) as a float. 32-bit targets convert from i32: an i64 conversion
    would need a compiler builtin there."""
    if target.pointer_bits >= 64:
        return b.uitofp(count, F32)
    return b.uitofp(b.trunc(count, I32), F32)


def _d(v: float) -> ir.Constant:
    return ir.Constant(F64, v)


def _int(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """A float already clamped to +-SAFE, truncated to i64 through i32 (32-bit targets have no
    i64 conversion without a compiler builtin)."""
    return b.sext(b.fptosi(x, I32), I64)


def _float(b: ir.IRBuilder, i: ir.Value, ty: ir.Type) -> ir.Value:
    """An i64 within i32 range (a clamped coordinate or index) as a float, through i32."""
    return b.sitofp(b.trunc(i, I32), ty)


class _Axis:
    """Per resized axis: its dims as values and its taps (stack slots): fixed-size index/weight
    arrays, or for antialias the filter window (first index, tap count, centre, 1/stretch, norm)."""

    def __init__(self, b: ir.IRBuilder, k: int, a: int, in_dim: ir.Value, out_dim: ir.Value, n_taps: int):
        self.k, self.in_dim, self.out_dim = k, in_dim, out_dim
        self.index = b.alloca(ir.ArrayType(I64, n_taps), name=f"idx{a}")
        self.weight = b.alloca(ir.ArrayType(F32, n_taps), name=f"w{a}")
        self.outside = b.alloca(I1, name=f"out{a}")
        self.count = b.alloca(I64, name=f"count{a}")
        self.first = b.alloca(I64, name=f"first{a}")
        self.centre = b.alloca(F32, name=f"centre{a}")
        self.inv_scale = b.alloca(F32, name=f"inv_scale{a}")
        self.norm = b.alloca(F64, name=f"norm{a}")


class _Builder:
    def __init__(self, b: ir.IRBuilder, spec: KernelSpec, target: Target, scales: ir.Value, roi: ir.Value):
        self.b, self.spec, self.target = b, spec, target
        self.scales_ptr, self.roi_ptr = scales, roi
        a = spec.attrs
        self.mode, self.coordinate_mode, self.nearest_mode = a["mode"], a["coordinate_mode"], a["nearest_mode"]
        self.cubic_a = float(a["cubic_coeff_a"])
        self.exclude_outside = bool(a["exclude_outside"])
        self.from_sizes = bool(a["scales_from_sizes"])
        self.antialias = bool(a.get("antialias", 0))
        self.n_taps = TAPS[self.mode]
        self.k_count = len(a["axes"])

    # -- small helpers ------------------------------------------------------------------------------
    def f32_of(self, n: ir.Value) -> ir.Value:
        return count_to_f32(self.b, n, self.target)

    def safe_int(self, x: ir.Value) -> ir.Value:
        """fptosi of an f32 clamped to [-SAFE, SAFE] (NaN -> 0): never poison."""
        b = self.b
        x = b.select(b.fcmp_ordered("==", x, x), x, const_f32(0.0))
        x = b.select(b.fcmp_ordered("<", x, const_f32(-SAFE)), const_f32(-SAFE), x)
        x = b.select(b.fcmp_ordered(">", x, const_f32(SAFE)), const_f32(SAFE), x)
        return _int(b, x)

    def clamp_index(self, i: ir.Value, last: ir.Value) -> ir.Value:
        b = self.b
        i = b.select(b.icmp_signed("<", i, const_i64(0)), const_i64(0), i)
        return b.select(b.icmp_signed(">", i, last), last, i)

    def floor_int(self, x: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(trunc(x), floor(x)) as i64, x an f32."""
        b = self.b
        t = self.safe_int(x)
        above = b.fcmp_ordered(">", _float(b, t, F32), x)
        return t, b.sub(t, b.zext(above, I64))

    def round_half_away(self, x: ir.Value) -> ir.Value:
        """C round() of an f32, computed in double as the reference: floor(|x| + 0.5) with x's sign."""
        b = self.b
        xd = b.fpext(x, F64)
        ax = b.select(b.fcmp_ordered("<", xd, _d(0.0)), b.fsub(_d(0.0), xd), xd)
        ax = b.select(b.fcmp_ordered("<", ax, _d(SAFE)), ax, _d(SAFE))  # also NaN -> SAFE, clamped later
        r = _int(b, b.fadd(ax, _d(0.5)))  # >= 0: truncation is floor
        return b.select(b.fcmp_ordered("<", xd, _d(0.0)), b.sub(const_i64(0), r), r)

    # -- coordinates --------------------------------------------------------------------------------
    def scale(self, ax: _Axis) -> ir.Value:
        b = self.b
        if self.from_sizes:
            empty = b.icmp_signed("==", ax.in_dim, const_i64(0))
            return b.select(empty, const_f32(1.0), b.fdiv(self.f32_of(ax.out_dim), self.f32_of(ax.in_dim)))
        return b.load(element_ptr(b, self.scales_ptr, const_i64(ax.k), F32), typ=F32, align=4)

    def coordinate(self, o: ir.Value, ax: _Axis, scale: ir.Value) -> ir.Value:
        """resize_math.original_coordinate in LLVM IR."""
        b, mode = self.b, self.coordinate_mode
        xr, lo, lr = self.f32_of(o), self.f32_of(ax.in_dim), self.f32_of(ax.out_dim)
        half, one = const_f32(0.5), const_f32(1.0)
        if mode == "asymmetric":
            return b.fdiv(xr, scale)
        if mode == "half_pixel":
            return b.fsub(b.fdiv(b.fadd(xr, half), scale), half)
        if mode == "tf_half_pixel_for_nn":
            return b.fdiv(b.fadd(xr, half), scale)
        many = b.icmp_signed(">", ax.out_dim, const_i64(1))
        if mode in ("align_corners", "tf_crop_and_resize") and not self.from_sizes:
            lr = b.fmul(scale, lo)  # the spec's length_resized (resize_math docstring)
            many = b.fcmp_ordered(">", lr, one)
        if mode == "pytorch_half_pixel":
            return b.select(many, b.fsub(b.fdiv(b.fadd(xr, half), scale), half), const_f32(0.0))
        if mode == "align_corners":
            return b.select(many, b.fdiv(b.fmul(xr, b.fsub(lo, one)), b.fsub(lr, one)), const_f32(0.0))
        if mode == "tf_crop_and_resize":
            start = b.load(element_ptr(b, self.roi_ptr, const_i64(ax.k), F32), typ=F32, align=4)
            end = b.load(element_ptr(b, self.roi_ptr, const_i64(self.k_count + ax.k), F32), typ=F32, align=4)
            span = b.fsub(lo, one)
            general = b.fadd(b.fmul(start, span), b.fdiv(b.fmul(b.fmul(xr, b.fsub(end, start)), span), b.fsub(lr, one)))
            single = b.fptrunc(b.fmul(b.fmul(_d(0.5), b.fpext(b.fadd(start, end), F64)), b.fpext(span, F64)), F32)
            return b.select(many, general, single)
        if mode == "half_pixel_symmetric":
            adjustment = b.fdiv(lr, b.fmul(scale, lo))
            offset = b.fmul(b.fdiv(lo, const_f32(2.0)), b.fsub(one, adjustment))
            centre = b.fsub(b.fdiv(b.fadd(b.fpext(xr, F64), _d(0.5)), b.fpext(scale, F64)), _d(0.5))
            return b.fptrunc(b.fadd(b.fpext(offset, F64), centre), F32)
        raise CompileError(f"resize_rt kernel {self.spec.name}: coordinate_transformation_mode {mode!r} is not supported")

    # -- taps ---------------------------------------------------------------------------------------
    def store_tap(self, ax: _Axis, t: int, index: ir.Value, weight: ir.Value) -> None:
        b = self.b
        b.store(index, b.gep(ax.index, [const_i32(0), const_i32(t)]))
        b.store(weight, b.gep(ax.weight, [const_i32(0), const_i32(t)]))

    def nearest(self, x: ir.Value, scale: ir.Value) -> ir.Value:
        b, mode = self.b, self.nearest_mode
        trunc, floor = self.floor_int(x)
        ceil = b.add(trunc, b.zext(b.fcmp_ordered("<", _float(b, trunc, F32), x), I64))
        if mode == "floor":
            return floor
        if mode == "ceil":
            return ceil
        if mode == "simple":
            return b.select(b.fcmp_ordered("<", scale, const_f32(1.0)), ceil, trunc)
        rounded = self.round_half_away(x)
        if mode == "round_prefer_ceil":
            return rounded
        if mode == "round_prefer_floor":
            midpoint = b.fptrunc(b.fadd(_float(b, trunc, F64), _d(0.5)), F32)
            return b.select(b.fcmp_ordered("==", x, midpoint), floor, rounded)
        raise CompileError(f"resize_rt kernel {self.spec.name}: nearest_mode {mode!r} is not supported")

    def cubic_kernel(self, s: ir.Value) -> ir.Value:
        """Keys cubic weight of a double distance (resize_math.cubic_weights)."""
        b, a = self.b, _d(self.cubic_a)
        s = b.select(b.fcmp_ordered("<", s, _d(0.0)), b.fsub(_d(0.0), s), s)
        near = b.fadd(b.fmul(b.fmul(b.fsub(b.fmul(b.fadd(a, _d(2.0)), s), b.fadd(a, _d(3.0))), s), s), _d(1.0))
        far = b.fsub(b.fmul(b.fadd(b.fmul(b.fsub(b.fmul(a, s), b.fmul(_d(5.0), a)), s), b.fmul(_d(8.0), a)), s),
                     b.fmul(_d(4.0), a))
        return b.select(b.fcmp_ordered("<=", s, _d(1.0)), near,
                        b.select(b.fcmp_ordered("<", s, _d(2.0)), far, _d(0.0)))

    def taps(self, ax: _Axis, o: ir.Value) -> None:
        """Fill the axis's tap arrays for output index o (resize_math.axis_taps)."""
        b = self.b
        last = b.sub(ax.in_dim, const_i64(1))
        lastf = self.f32_of(last)
        scale = self.scale(ax)
        x = self.coordinate(o, ax, scale)
        outside = ir.Constant(I1, 0)
        if self.coordinate_mode == "tf_crop_and_resize":
            outside = b.or_(b.fcmp_ordered("<", x, const_f32(0.0)), b.fcmp_ordered(">", x, lastf))
        b.store(outside, ax.outside)
        b.store(const_i64(self.n_taps), ax.count)
        if self.antialias:
            self.antialias_window(ax, o, x, scale, last)
            return
        if self.mode == "nearest":
            self.store_tap(ax, 0, self.clamp_index(self.nearest(x, scale), last), const_f32(1.0))
            return
        if self.mode == "linear":
            xc = b.select(b.fcmp_ordered(">", x, const_f32(0.0)), x, const_f32(0.0))
            xc = b.select(b.fcmp_ordered("<", xc, lastf), xc, lastf)
            i1 = self.clamp_index(self.safe_int(xc), last)
            i2 = b.select(b.icmp_signed("<", i1, last), b.add(i1, const_i64(1)), last)
            d1 = b.fsub(xc, _float(b, i1, F32))
            d2 = b.fsub(_float(b, i2, F32), xc)
            d1 = b.select(b.fcmp_ordered("<", d1, const_f32(0.0)), b.fsub(const_f32(0.0), d1), d1)
            d2 = b.select(b.fcmp_ordered("<", d2, const_f32(0.0)), b.fsub(const_f32(0.0), d2), d2)
            same = b.icmp_signed("==", i1, i2)
            self.store_tap(ax, 0, i1, b.select(same, const_f32(1.0), d2))
            self.store_tap(ax, 1, i2, b.select(same, const_f32(0.0), d1))
            return
        _, base = self.floor_int(x)
        ratio = b.fpext(b.fsub(x, _float(b, base, F32)), F64)
        distances = [b.fadd(ratio, _d(1.0)), ratio, b.fsub(_d(1.0), ratio), b.fsub(_d(2.0), ratio)]
        weights = [self.cubic_kernel(s) for s in distances]
        indices = [b.add(base, const_i64(d)) for d in (-1, 0, 1, 2)]
        if self.exclude_outside:
            weights = [b.select(b.and_(b.icmp_signed(">=", i, const_i64(0)), b.icmp_signed("<=", i, last)), w, _d(0.0))
                       for i, w in zip(indices, weights)]
            total = _d(0.0)
            for w in weights:
                total = b.fadd(total, w)
            weights = [b.fdiv(w, total) for w in weights]
        for t, (i, w) in enumerate(zip(indices, weights)):
            self.store_tap(ax, t, self.clamp_index(i, last), b.fptrunc(w, F32))


    # -- antialias (resize_math._antialias_taps) ---------------------------------------------------
    def antialias_filter(self, t: ir.Value) -> ir.Value:
        """The filter at an f32 distance t, in double."""
        b = self.b
        t = b.fpext(t, F64)
        t = b.select(b.fcmp_ordered("<", t, _d(0.0)), b.fsub(_d(0.0), t), t)
        if self.mode == "linear":
            w = b.fsub(_d(1.0), t)
            return b.select(b.fcmp_ordered(">", w, _d(0.0)), w, _d(0.0))
        a = _d(self.cubic_a)
        near = b.fadd(b.fmul(b.fmul(b.fsub(b.fmul(b.fadd(a, _d(2.0)), t), b.fadd(a, _d(3.0))), t), t), _d(1.0))
        far = b.fmul(b.fsub(b.fmul(b.fadd(b.fmul(b.fsub(t, _d(5.0)), t), _d(8.0)), t), _d(4.0)), a)
        return b.select(b.fcmp_ordered("<", t, _d(1.0)), near, b.select(b.fcmp_ordered("<", t, _d(2.0)), far, _d(0.0)))

    def antialias_weight(self, ax: _Axis, i: ir.Value) -> ir.Value:
        """f32(filter((f32(i) - centre + 0.5) * inv_scale)), before normalization (double)."""
        b = self.b
        t = b.fmul(b.fadd(b.fsub(_float(b, i, F32), b.load(ax.centre, typ=F32)), const_f32(0.5)),
                   b.load(ax.inv_scale, typ=F32))
        return b.fpext(b.fptrunc(self.antialias_filter(t), F32), F64)

    def antialias_window(self, ax: _Axis, o: ir.Value, x: ir.Value, scale: ir.Value, last: ir.Value) -> None:
        b = self.b
        one = const_f32(1.0)
        inv = b.fdiv(one, scale)
        stretch = b.fcmp_ordered(">=", inv, one)
        half_support = const_f32(self.n_taps * 0.5)
        support = b.select(stretch, b.fmul(half_support, inv), half_support)
        b.store(b.select(stretch, b.fdiv(one, inv), one), ax.inv_scale)
        x = b.select(b.fcmp_ordered("==", inv, one), self.f32_of(o), x)
        centre = b.fadd(const_f32(0.5), x)
        b.store(centre, ax.centre)
        cd, sd = b.fpext(centre, F64), b.fpext(support, F64)
        lo = self.floor_double(b.fadd(b.fsub(cd, sd), _d(0.5)))
        hi = self.floor_double(b.fadd(b.fadd(cd, sd), _d(0.5)))
        if self.exclude_outside:
            lo = b.select(b.icmp_signed("<", lo, const_i64(0)), const_i64(0), lo)
            end = b.add(last, const_i64(1))
            hi = b.select(b.icmp_signed(">", hi, end), end, hi)
        count = b.sub(hi, lo)
        b.store(b.select(b.icmp_signed(">", count, const_i64(0)), count, const_i64(0)), ax.count)
        b.store(lo, ax.first)
        total = entry_slot(b, F64, "total")
        b.store(_d(0.0), total)
        with for_range(b, 0, b.load(ax.count, typ=I64), name="aa") as t:
            b.store(b.fadd(b.load(total, typ=F64), self.antialias_weight(ax, b.add(lo, t))), total)
        sum_ = b.load(total, typ=F64)
        b.store(b.select(b.fcmp_ordered("==", sum_, _d(0.0)), _d(1.0), b.fdiv(_d(1.0), sum_)), ax.norm)

    def floor_double(self, x: ir.Value) -> ir.Value:
        """floor of a double as i64, clamped to +-SAFE (NaN -> 0)."""
        b = self.b
        x = b.select(b.fcmp_ordered("==", x, x), x, _d(0.0))
        x = b.select(b.fcmp_ordered("<", x, _d(-SAFE)), _d(-SAFE), x)
        x = b.select(b.fcmp_ordered(">", x, _d(SAFE)), _d(SAFE), x)
        t = _int(b, x)
        return b.sub(t, b.zext(b.fcmp_ordered(">", _float(b, t, F64), x), I64))

    def tap(self, ax: _Axis, t: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(source index, f32 weight) of tap t of the axis's current output index."""
        b = self.b
        if not self.antialias:
            t32 = b.trunc(t, I32)
            return (b.load(b.gep(ax.index, [const_i32(0), t32]), typ=I64),
                    b.load(b.gep(ax.weight, [const_i32(0), t32]), typ=F32))
        i = b.add(b.load(ax.first, typ=I64), t)
        w = b.fptrunc(b.fmul(self.antialias_weight(ax, i), b.load(ax.norm, typ=F64)), F32)
        return self.clamp_index(i, b.sub(ax.in_dim, const_i64(1))), w


def entry_slot(b: ir.IRBuilder, ty: ir.Type, name: str) -> ir.Value:
    here = b.block
    b.position_at_start(here.function.entry_basic_block)
    slot = b.alloca(ty, name=name)
    b.position_at_end(here)
    return slot


def build_runtime(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    """The "resize_rt" kernel (see the module docstring)."""
    what = f"resize_rt kernel {spec.name}"
    if len(spec.inputs) != 3 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects X, scales, roi and one output")
    x_t, y_t = spec.inputs[0], spec.outputs[0]
    mode = spec.attrs["mode"]
    if mode not in TAPS:
        raise ValueError(f"{what}: mode {mode!r} is not one of {list(TAPS)}")
    if spec.attrs.get("antialias", 0) and mode == "nearest":
        raise ValueError(f"{what}: antialias needs mode linear or cubic")
    if x_t.dtype != y_t.dtype or (x_t.dtype != DType.f32 and mode != "nearest"):
        raise ValueError(f"{what}: {x_t} -> {y_t}: f32 for linear/cubic, any dtype (same in and out) for nearest")
    axes = [int(a) for a in spec.attrs["axes"]]
    rank = len(x_t.shape)
    n_taps = TAPS[mode]
    copy_elem = None if x_t.dtype == DType.f32 else element_type(x_t.dtype.itemsize, what)
    elem = F32 if copy_elem is None else copy_elem
    align = min(4, x_t.dtype.itemsize)
    extrapolation = float(spec.attrs["extrapolation_value"])
    fill = const_f32(extrapolation) if copy_elem is None else \
        ir.Constant(copy_elem, value_bits(extrapolation, x_t.dtype.numpy))

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    src, scales, roi, dst = (dk.binding(i) for i in range(4))
    kb = _Builder(b, spec, target, scales, roi)
    in_dims, out_dims = dk.dims(x_t), dk.dims(y_t)
    in_strides: list[ir.Value] = [const_i64(1)] * rank
    out_strides: list[ir.Value] = [const_i64(1)] * rank
    for a in range(rank - 2, -1, -1):
        in_strides[a] = b.mul(in_strides[a + 1], in_dims[a + 1])
        out_strides[a] = b.mul(out_strides[a + 1], out_dims[a + 1])

    entry = b.block.function.entry_basic_block
    here = b.block
    b.position_at_start(entry)
    resized = {a: _Axis(b, k, a, in_dims[a], out_dims[a], n_taps) for k, a in enumerate(axes)}
    acc = b.alloca(F32, name="acc")
    b.position_at_end(here)

    split = max(0, rank - 2)
    ok = ir.Constant(I1, 1)
    for ax in resized.values():
        ok = b.and_(ok, b.icmp_signed(">", ax.in_dim, const_i64(0)))
    position: list[ir.Value] = [const_i64(0)] * rank

    def blend(level: int, order: list[_Axis], offset: ir.Value, weight: ir.Value | None) -> None:
        if level == len(order):
            v = b.load(element_ptr(b, src, offset, F32), typ=F32, align=4)
            b.store(b.fadd(b.load(acc), v if weight is None else b.fmul(weight, v)), acc)
            return
        ax = order[level]
        with for_range(b, 0, b.load(ax.count, typ=I64), name=f"tap{level}") as t:
            i, w = kb.tap(ax, t)
            here = b.add(offset, b.mul(i, in_strides[axes[ax.k]]))
            blend(level + 1, order, here, w if weight is None else b.fmul(weight, w))

    def element() -> None:
        out_offset, copied = const_i64(0), const_i64(0)
        for a in range(rank):
            out_offset = b.add(out_offset, b.mul(position[a], out_strides[a]))
            if a not in resized:
                copied = b.add(copied, b.mul(position[a], in_strides[a]))
        outside = ir.Constant(I1, 0)
        for ax in resized.values():
            outside = b.or_(outside, b.load(ax.outside, typ=I1))
        target_ptr = element_ptr(b, dst, out_offset, elem)
        with b.if_else(outside) as (then, otherwise):
            with then:
                b.store(fill, target_ptr, align=align)
            with otherwise:
                if n_taps == 1:
                    offset = copied
                    for a, ax in resized.items():
                        i = b.load(b.gep(ax.index, [const_i32(0), const_i32(0)]), typ=I64)
                        offset = b.add(offset, b.mul(i, in_strides[a]))
                    v = b.load(element_ptr(b, src, offset, elem), typ=elem, align=align)
                    b.store(v, target_ptr, align=align)
                else:
                    b.store(const_f32(0.0), acc)
                    blend(0, list(resized.values()), copied, None)
                    b.store(b.load(acc), target_ptr, align=align)

    def loops(a: int) -> None:
        if a == rank:
            element()
            return
        with for_range(b, 0, out_dims[a], name=f"o{a}") as i:
            position[a] = i
            if a in resized:
                kb.taps(resized[a], i)
            loops(a + 1)

    with b.if_then(ok):
        rest = dk.workgroup_id_index(0)
        for a in range(split - 1, -1, -1):
            position[a] = b.urem(rest, out_dims[a]) if a else rest
            rest = b.udiv(rest, out_dims[a]) if a else rest
            if a in resized:
                kb.taps(resized[a], position[a])
        loops(split)
    dk.finish()
    groups = product(list(y_t.shape[:split])) if split else 1
    return dk.info(workgroup_count=(groups, 1, 1))
