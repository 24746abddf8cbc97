"""Kernel of the RoiAlign op (iree_py/ir/ops_nms.py), static and symbolic specs alike: one workgroup
per roi. The samples per bin come from the roi read at run time (sampling_ratio 0: ceil(roi size /
output size)); each sample is bilinear over the four neighbours, as onnxruntime computes it in f32
(samples outside [-1, size] count as 0). A batch index outside the images fails the dispatch with
STATUS_INDEX_OUT_OF_RANGE, a roi whose sample count is not finite or above 2^24 per axis with
STATUS_UNSUPPORTED_VALUE (codegen/kernel_abi.py)."""
from __future__ import annotations

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_abi import STATUS_INDEX_OUT_OF_RANGE, STATUS_UNSUPPORTED_VALUE
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import F32, I64, const_f32, const_i64, element_ptr, entry_alloca, for_range
from iree_py.codegen.llvm.dims import DynamicKernel, begin_dynamic_kernel
from iree_py.codegen.llvm.copy_common import fail_unless
from iree_py.targets import Target
from iree_py.ir.types import DType

I1 = ir.IntType(1)
MAX_GRID = float(1 << 24)


def _load(b: ir.IRBuilder, base: ir.Value, index: ir.Value | int, ty: ir.Type) -> ir.Value:
    return b.load(element_ptr(b, base, index, ty), typ=ty, align=4)


def _fmax(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """std::max(x, y)."""
    return b.select(b.fcmp_ordered("<", x, y), y, x)


def _grid(dk: DynamicKernel, ratio: int, size: ir.Value, out: int) -> ir.Value:
    """Samples per bin along one axis (i64)."""
    if ratio > 0:
        return const_i64(ratio)
    b = dk.builder
    ceil = b.module.declare_intrinsic("llvm.ceil", [F32])
    v = b.call(ceil, [b.fdiv(size, const_f32(float(out)))])
    fail_unless(dk, b.fcmp_ordered("<=", b.call(b.module.declare_intrinsic("llvm.fabs", [F32]), [v]),
                                   const_f32(MAX_GRID)), "grid", STATUS_UNSUPPORTED_VALUE)
    return b.fptosi(v, I64)


class _Bilinear:
    """The four (weight, row, column) terms of one sample (y, x) in an H x W image."""

    def __init__(self, b: ir.IRBuilder, y: ir.Value, x: ir.Value, height: ir.Value, width: ir.Value) -> None:
        fh, fw, zero = b.sitofp(height, F32), b.sitofp(width, F32), const_f32(0.0)
        valid = b.and_(b.and_(b.fcmp_ordered(">=", y, const_f32(-1.0)), b.fcmp_ordered("<=", y, fh)),
                       b.and_(b.fcmp_ordered(">=", x, const_f32(-1.0)), b.fcmp_ordered("<=", x, fw)))
        y, x = b.select(valid, y, zero), b.select(valid, x, zero)
        y, x = b.select(b.fcmp_ordered("<=", y, zero), zero, y), b.select(b.fcmp_ordered("<=", x, zero), zero, x)
        y_low, y_high, ly = self._axis(b, y, height)
        x_low, x_high, lx = self._axis(b, x, width)
        one = const_f32(1.0)
        hy, hx = b.fsub(one, ly), b.fsub(one, lx)
        weights = (b.fmul(hy, hx), b.fmul(hy, lx), b.fmul(ly, hx), b.fmul(ly, lx))
        self.weights = [b.select(valid, w, zero) for w in weights]
        self.cells = [(y_low, x_low), (y_low, x_high), (y_high, x_low), (y_high, x_high)]

    @staticmethod
    def _axis(b: ir.IRBuilder, v: ir.Value, size: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
        last = b.sub(size, const_i64(1))
        low = b.fptosi(v, I64)
        at_end = b.icmp_signed(">=", low, last)
        low = b.select(at_end, last, low)
        high = b.select(at_end, last, b.add(low, const_i64(1)))
        v = b.select(at_end, b.sitofp(last, F32), v)
        return low, high, b.fsub(v, b.sitofp(low, F32))


def build_roi_align(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"roi_align kernel {spec.name}"
    if len(spec.inputs) != 3 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 3 inputs and 1 output")
    if tuple(t.dtype for t in spec.inputs) != (DType.f32, DType.f32, DType.i64):
        raise CompileError(f"{what}: unsupported dtypes {[t.dtype.value for t in spec.inputs]} (X, rois f32, "
                         f"batch_indices i64)")
    a = spec.attrs
    oh, ow, ratio = int(a["output_height"]), int(a["output_width"]), int(a["sampling_ratio"])
    is_max, half_pixel = a["mode"] == "max", bool(int(a["half_pixel"]))
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    x, rois, batches, dst = dk.binding(0), dk.binding(1), dk.binding(2), dk.binding(3)
    images, channels, height, width = dk.dims(spec.inputs[0])
    r = dk.workgroup_id_index(0)
    image = _load(b, batches, r, I64)
    fail_unless(dk, b.and_(b.icmp_signed(">=", image, const_i64(0)), b.icmp_signed("<", image, images)), "batch_index",
                STATUS_INDEX_OUT_OF_RANGE)
    fail_unless(dk, b.and_(b.icmp_signed(">", height, const_i64(0)), b.icmp_signed(">", width, const_i64(0))), "image")
    scale, offset = const_f32(float(a["spatial_scale"])), const_f32(0.5 if half_pixel else 0.0)
    x0, y0, x1, y1 = (b.fsub(b.fmul(_load(b, rois, b.add(b.mul(r, const_i64(4)), const_i64(t)), F32), scale), offset)
                      for t in range(4))
    roi_w, roi_h = b.fsub(x1, x0), b.fsub(y1, y0)
    if not half_pixel:
        roi_w, roi_h = _fmax(b, roi_w, const_f32(1.0)), _fmax(b, roi_h, const_f32(1.0))
    bin_h, bin_w = b.fdiv(roi_h, const_f32(float(oh))), b.fdiv(roi_w, const_f32(float(ow)))
    grid_h, grid_w = _grid(dk, ratio, roi_h, oh), _grid(dk, ratio, roi_w, ow)
    samples = b.mul(grid_h, grid_w)
    count = b.sitofp(b.select(b.icmp_signed("<", samples, const_i64(1)), const_i64(1), samples), F32)
    fgh, fgw = b.sitofp(grid_h, F32), b.sitofp(grid_w, F32)
    acc, first = entry_alloca(b, F32, "acc"), entry_alloca(b, I1, "first")
    with for_range(b, 0, channels, name="c") as c:
        plane = b.mul(b.add(b.mul(image, channels), c), b.mul(height, width))
        with for_range(b, 0, oh, name="ph") as ph:
            with for_range(b, 0, ow, name="pw") as pw:
                b.store(const_f32(0.0), acc)
                b.store(ir.Constant(I1, 1), first)
                with for_range(b, 0, grid_h, name="iy") as iy:
                    step_y = b.fdiv(b.fmul(b.fadd(b.sitofp(iy, F32), const_f32(0.5)), bin_h), fgh)
                    yy = b.fadd(b.fadd(y0, b.fmul(b.sitofp(ph, F32), bin_h)), step_y)
                    with for_range(b, 0, grid_w, name="ix") as ix:
                        step_x = b.fdiv(b.fmul(b.fadd(b.sitofp(ix, F32), const_f32(0.5)), bin_w), fgw)
                        xx = b.fadd(b.fadd(x0, b.fmul(b.sitofp(pw, F32), bin_w)), step_x)
                        sample = _Bilinear(b, yy, xx, height, width)
                        terms = [b.fmul(w, _load(b, x, b.add(plane, b.add(b.mul(i, width), j)), F32))
                                 for w, (i, j) in zip(sample.weights, sample.cells)]
                        if is_max:
                            val = _fmax(b, _fmax(b, _fmax(b, terms[0], terms[1]), terms[2]), terms[3])
                            b.store(b.select(b.load(first), val, _fmax(b, b.load(acc), val)), acc)
                            b.store(ir.Constant(I1, 0), first)
                        else:
                            val = b.fadd(b.fadd(b.fadd(terms[0], terms[1]), terms[2]), terms[3])
                            b.store(b.fadd(b.load(acc), val), acc)
                out = b.add(b.mul(b.add(b.mul(b.add(b.mul(r, channels), c), const_i64(oh)), ph), const_i64(ow)), pw)
                result = b.load(acc) if is_max else b.fdiv(b.load(acc), count)
                b.store(result, element_ptr(b, dst, out, F32), align=4)
    dk.finish()
    return dk.info(workgroup_count=(spec.inputs[1].shape[0], 1, 1))
