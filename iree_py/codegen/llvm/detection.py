"""Kernels of the detection ops (iree_py/ir/ops/detection.py), static and symbolic specs alike.

  nms_select  boxes, scores, max_output, iou_threshold, score_threshold -> i64[B, C, N]: per batch
              and class, 1 + the index of each kept box in selection order, then zeros
  nms_output  selection, count -> i64[n, 3] (batch, class, box), after checking that the count
              tensor holds the symbol n the output was sized for
  roi_align   X[N, C, H, W], rois[R, 4], batch_indices[R] -> [R, C, output_height, output_width]

NonMaxSuppression runs in one workgroup. nms_select walks the candidates without sorting: step t
picks the best box (score descending, ties by lower index; NaN scores are never candidates) that
comes after step t-1's pick, then tests it against the boxes kept so far (read back from its own
output row), in f32 as onnxruntime: O(N^2) per batch and class.

RoiAlign runs one workgroup per roi. The samples per bin come from the roi read at run time
(sampling_ratio 0: ceil(roi size / output size)); each sample is bilinear over the four neighbours,
as onnxruntime computes it in f32 (samples outside [-1, size] count as 0). A batch index outside
the images fails the dispatch with STATUS_INDEX_OUT_OF_RANGE, a roi whose sample count is not
finite or above 2^24 per axis with STATUS_UNSUPPORTED_VALUE (codegen/kernel_abi.py)."""
from __future__ import annotations

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_abi import STATUS_INDEX_OUT_OF_RANGE, STATUS_UNSUPPORTED_VALUE
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import F32, I64, const_f32, const_i64, element_ptr, entry_alloca, for_range
from iree_py.codegen.llvm.copy_common import attr_dim, fail_unless
from iree_py.codegen.llvm.dims import DynamicKernel, begin_dynamic_kernel, product
from iree_py.targets import Target
from iree_py.ir.types import DType

I1 = ir.IntType(1)


def _load(b: ir.IRBuilder, base: ir.Value, index: ir.Value | int, ty: ir.Type) -> ir.Value:
    return b.load(element_ptr(b, base, index, ty), typ=ty, align=4)


def _store(b: ir.IRBuilder, value: ir.Value, base: ir.Value, index: ir.Value | int) -> None:
    b.store(value, element_ptr(b, base, index, value.type), align=4)


def _fmin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.fcmp_ordered("<", y, x), y, x)


def _fmax(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.fcmp_ordered("<", x, y), y, x)


def _corners(b: ir.IRBuilder, boxes: ir.Value, row: ir.Value, center: bool) -> tuple[ir.Value, ...]:
    """(x_min, x_max, y_min, y_max) of the box at `row` of the flattened [*, 4] boxes."""
    v = [_load(b, boxes, b.add(b.mul(row, const_i64(4)), const_i64(t)), F32) for t in range(4)]
    if center:
        half_w, half_h = b.fdiv(v[2], const_f32(2.0)), b.fdiv(v[3], const_f32(2.0))
        return b.fsub(v[0], half_w), b.fadd(v[0], half_w), b.fsub(v[1], half_h), b.fadd(v[1], half_h)
    return _fmin(b, v[1], v[3]), _fmax(b, v[1], v[3]), _fmin(b, v[0], v[2]), _fmax(b, v[0], v[2])


def _suppresses(b: ir.IRBuilder, boxes: ir.Value, row_a: ir.Value, row_b: ir.Value, center: bool,
                iou: ir.Value) -> ir.Value:
    """i1: IoU(a, b) > iou (onnxruntime's SuppressByIOU: no overlap or an empty box never suppresses)."""
    ax0, ax1, ay0, ay1 = _corners(b, boxes, row_a, center)
    bx0, bx1, by0, by1 = _corners(b, boxes, row_b, center)
    ix0, ix1, iy0, iy1 = _fmax(b, ax0, bx0), _fmin(b, ax1, bx1), _fmax(b, ay0, by0), _fmin(b, ay1, by1)
    inter = b.fmul(b.fsub(ix1, ix0), b.fsub(iy1, iy0))
    area_a, area_b = b.fmul(b.fsub(ax1, ax0), b.fsub(ay1, ay0)), b.fmul(b.fsub(bx1, bx0), b.fsub(by1, by0))
    union = b.fsub(b.fadd(area_a, area_b), inter)
    zero = const_f32(0.0)
    ok = b.and_(b.fcmp_ordered(">", ix1, ix0), b.fcmp_ordered(">", iy1, iy0))
    for positive in (inter, area_a, area_b, union):
        ok = b.and_(ok, b.fcmp_ordered(">", positive, zero))
    return b.and_(ok, b.fcmp_ordered(">", b.fdiv(inter, union), iou))


def _check_types(spec: KernelSpec, what: str) -> None:
    if len(spec.inputs) != 5 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 5 inputs and 1 output")
    wanted = (DType.f32, DType.f32, DType.i64, DType.f32, DType.f32)
    if tuple(t.dtype for t in spec.inputs) != wanted or spec.outputs[0].dtype != DType.i64:
        raise CompileError(f"{what}: unsupported dtypes {[t.dtype.value for t in spec.inputs]} "
                         f"(boxes, scores f32; max_output i64; thresholds f32)")


def build_nms_select(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"nms_select kernel {spec.name}"
    _check_types(spec, what)
    center, use_threshold = bool(int(spec.attrs["center_point_box"])), bool(int(spec.attrs["use_score_threshold"]))
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    boxes, scores, dst = dk.binding(0), dk.binding(1), dk.binding(5)
    n, classes = dk.dim(spec.inputs[0].shape[1]), dk.dim(spec.inputs[1].shape[1])
    max_output = _load(b, dk.binding(2), 0, I64)
    iou, threshold = _load(b, dk.binding(3), 0, F32), _load(b, dk.binding(4), 0, F32)
    slot, prev, best = (entry_alloca(b, I64, name) for name in ("slot", "prev", "best"))
    prev_score, best_score = entry_alloca(b, F32, "prev_score"), entry_alloca(b, F32, "best_score")
    done, keep = entry_alloca(b, I1, "done"), entry_alloca(b, I1, "keep")
    with for_range(b, 0, dk.dim(product(spec.outputs[0].shape[:2])), name="bc") as bc:
        row0 = b.mul(bc, n)                     # this batch and class in scores and the output
        box0 = b.mul(b.sdiv(bc, classes), n)    # this batch in boxes
        with for_range(b, 0, n, name="z") as z:
            _store(b, const_i64(0), dst, b.add(row0, z))
        b.store(const_i64(0), slot)
        b.store(const_i64(-1), prev)
        b.store(const_f32(0.0), prev_score)
        b.store(b.icmp_signed("<=", max_output, const_i64(0)), done)
        with for_range(b, 0, n, name="t"):
            with b.if_then(b.not_(b.load(done))):
                _pick(dk, scores, row0, n, use_threshold, threshold, prev, prev_score, best, best_score)
                found = b.icmp_signed(">=", b.load(best), const_i64(0))
                with b.if_else(found) as (then, otherwise):
                    with then:
                        j = b.load(best)
                        b.store(j, prev)
                        b.store(b.load(best_score), prev_score)
                        b.store(ir.Constant(I1, 1), keep)
                        with for_range(b, 0, b.load(slot), name="k") as k:
                            kept = b.sub(_load(b, dst, b.add(row0, k), I64), const_i64(1))
                            hit = _suppresses(b, boxes, b.add(box0, kept), b.add(box0, j), center, iou)
                            b.store(b.and_(b.load(keep), b.not_(hit)), keep)
                        with b.if_then(b.load(keep)):
                            _store(b, b.add(j, const_i64(1)), dst, b.add(row0, b.load(slot)))
                            b.store(b.add(b.load(slot), const_i64(1)), slot)
                            b.store(b.icmp_signed(">=", b.load(slot), max_output), done)
                    with otherwise:
                        b.store(ir.Constant(I1, 1), done)
    dk.finish()
    return dk.info(workgroup_count=(1, 1, 1))


def _pick(dk: DynamicKernel, scores: ir.Value, row0: ir.Value, n: ir.Value, use_threshold: bool,
          threshold: ir.Value, prev: ir.Value, prev_score: ir.Value, best: ir.Value, best_score: ir.Value) -> None:
    """best := the highest-ranked candidate ranked below prev (-1 when none)."""
    b = dk.builder
    b.store(const_i64(-1), best)
    b.store(const_f32(0.0), best_score)
    with for_range(b, 0, n, name="j") as j:
        s = _load(b, scores, b.add(row0, j), F32)
        candidate = b.fcmp_ordered("==", s, s)
        if use_threshold:
            candidate = b.and_(candidate, b.fcmp_ordered(">", s, threshold))
        p, ps = b.load(prev), b.load(prev_score)
        after = b.or_(b.icmp_signed("<", p, const_i64(0)),
                      b.or_(b.fcmp_ordered("<", s, ps), b.and_(b.fcmp_ordered("==", s, ps), b.icmp_signed(">", j, p))))
        better = b.or_(b.icmp_signed("<", b.load(best), const_i64(0)), b.fcmp_ordered(">", s, b.load(best_score)))
        with b.if_then(b.and_(candidate, b.and_(after, better))):
            b.store(j, best)
            b.store(s, best_score)


def build_nms_output(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"nms_output kernel {spec.name}"
    if len(spec.inputs) != 2 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 2 inputs and 1 output")
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    count = dk.dim(attr_dim(spec.attrs["count"]))
    fail_unless(dk, b.icmp_signed("==", _load(b, dk.binding(1), 0, I64), count), "count")
    src, dst = dk.binding(0), dk.binding(2)
    _, classes, n = dk.dims(spec.inputs[0])
    position = entry_alloca(b, I64, "position")
    b.store(const_i64(0), position)
    with for_range(b, 0, dk.dim(product(spec.inputs[0].shape)), name="i") as i:
        v = _load(b, src, i, I64)
        at = b.load(position)
        with b.if_then(b.and_(b.icmp_signed("!=", v, const_i64(0)), b.icmp_signed("<", at, count))):
            row = b.sdiv(i, n)
            out = b.mul(at, const_i64(3))
            _store(b, b.sdiv(row, classes), dst, out)
            _store(b, b.srem(row, classes), dst, b.add(out, const_i64(1)))
            _store(b, b.sub(v, const_i64(1)), dst, b.add(out, const_i64(2)))
            b.store(b.add(at, const_i64(1)), position)
    dk.finish()
    return dk.info(workgroup_count=(1, 1, 1))


# --- RoiAlign ---------------------------------------------------------------------------------------

MAX_GRID = float(1 << 24)


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
