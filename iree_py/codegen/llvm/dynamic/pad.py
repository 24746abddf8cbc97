"""The "pad" kernel for symbolic dims (codegen/llvm/pad.py is the static kernel): any element
type, attrs pads [begins..., ends...] static ints (negative crops) on symbolic dims, mode constant
(attrs value), reflect, symmetric, edge or wrap.

Negative pads crop first (a crop larger than its axis makes the kernel fail); output index o on
an axis then reads s = o - max(begin, 0), mapped into the cropped input by the mode (constant:
outside means the value). Each output row (every axis but the last) finds its source row once;
the row's middle, where s lies inside the input, is a contiguous copy and only the border columns
are mapped one by one. A mode other than constant
needs every cropped axis non-empty: otherwise the kernel fails (unless the output is empty).
Workgroups split the rows."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import I1, const_i64, for_range, max_index, min_index
from iree_py.codegen.llvm.copy_common import element_type
from iree_py.codegen.llvm.dynamic.common import begin_dynamic_kernel
from iree_py.codegen.llvm.dynamic.copy_common import (copy_run, fail_unless, fill_run, group_rows, product,
                                                       require_same_dims, row_grid, row_major_strides)
from iree_py.codegen.llvm.pad import value_bits
from iree_py.targets import Target
from iree_py.ir.ops_resize_pad import PAD_MODES
from iree_py.ir.symbols import Expr, dim


def map_index(b: ir.IRBuilder, s: ir.Value, n: ir.Value, mode: str) -> tuple[ir.Value, ir.Value]:
    """(input index, inside?) for the unmapped source index s along an axis of n (> 0 unless
    constant mode) elements."""
    zero, one = const_i64(0), const_i64(1)
    inside = b.icmp_unsigned("<", s, n)
    if mode == "constant":
        return b.select(inside, s, zero), inside
    true = ir.Constant(I1, 1)
    if mode == "edge":
        return min_index(b, max_index(b, s, zero), b.sub(n, one)), true
    if mode == "wrap":
        return b.srem(b.add(b.srem(s, n), n), n), true
    if mode == "symmetric":  # mirror including the edge: period 2n
        period = b.add(n, n)
        t = b.srem(b.add(b.srem(s, period), period), period)
        return b.select(b.icmp_signed("<", t, n), t, b.sub(b.sub(period, one), t)), true
    # reflect: mirror without repeating the edge, period 2(n - 1); an axis of one element is constant
    period = max_index(b, b.add(b.sub(n, one), b.sub(n, one)), one)
    t = b.srem(b.add(b.srem(s, period), period), period)
    mirrored = b.select(b.icmp_signed("<", t, n), t, b.sub(period, t))
    return b.select(b.icmp_signed("==", n, one), zero, mirrored), true


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"pad kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    x_t, y_t = spec.inputs[0], spec.outputs[0]
    if x_t.dtype != y_t.dtype:
        raise ValueError(f"{what}: dtype {x_t.dtype.value} != output {y_t.dtype.value}")
    mode, pads = spec.attrs["mode"], [int(p) for p in spec.attrs["pads"]]
    rank = x_t.rank
    if mode not in PAD_MODES:
        raise ValueError(f"{what}: mode {mode!r} is not one of {list(PAD_MODES)}")
    if rank == 0 or len(pads) != 2 * rank or y_t.rank != rank:
        raise ValueError(f"{what}: pads {pads} do not fit {x_t} -> {y_t}")
    elem = element_type(x_t.dtype.itemsize, what)
    fill = ir.Constant(elem, value_bits(spec.attrs.get("value", 0), x_t.dtype.numpy))
    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    require_same_dims(dk, [(Expr.of(x_t.shape[a]) + pads[a] + pads[rank + a], y_t.shape[a], f"axis {a}")
                           for a in range(rank)], what)
    crop = [max(-pads[a], 0) for a in range(rank)]
    lead = [max(pads[a], 0) for a in range(rank)]
    kept_d = [dim(Expr.of(x_t.shape[a]) - crop[a] - max(-pads[rank + a], 0)) for a in range(rank)]
    kept = [dk.dim(k) for k in kept_d]
    out_dims = dk.dims(y_t)
    zero = const_i64(0)
    # A crop larger than the axis: the output's size was computed from sizes that cannot be.
    fits: ir.Value = ir.Constant(I1, 1)
    for k in kept:
        fits = b.and_(fits, b.icmp_signed(">=", k, zero))
    fail_unless(dk, fits, "pad_crop")
    if mode != "constant":
        empty_out: ir.Value = ir.Constant(I1, 0)
        has_input: ir.Value = ir.Constant(I1, 1)
        for n, k in zip(out_dims, kept):
            empty_out = b.or_(empty_out, b.icmp_signed("==", n, zero))
            has_input = b.and_(has_input, b.icmp_signed(">", k, zero))
        fail_unless(dk, b.or_(empty_out, has_input), "pad_input")
    grid = row_grid(product(y_t.shape[:-1]), y_t.shape[-1])
    width, n_last = out_dims[-1], kept[-1]
    in_strides = row_major_strides(b, dk.dims(x_t))
    row_dims = out_dims[:-1]
    # The middle of a row: output columns [middle_start, middle_stop) read s = col - lead inside the input.
    middle_start = min_index(b, const_i64(lead[-1]), width)
    middle_stop = max_index(b, middle_start, min_index(b, b.add(const_i64(lead[-1]), n_last), width))
    src, dst = dk.binding(0), dk.binding(1)
    start, stop = group_rows(dk, grid)
    # An empty row (width 0) touches nothing; skipping it also keeps the modulo of an empty axis away.
    stop = b.select(b.icmp_signed(">", width, zero), stop, start)
    with for_range(b, start, stop, name="row") as row:
        src_row: ir.Value = const_i64(crop[-1])
        row_inside: ir.Value = ir.Constant(I1, 1)
        rest = row
        for axis in range(rank - 2, -1, -1):
            o = b.urem(rest, row_dims[axis]) if axis else rest
            rest = b.udiv(rest, row_dims[axis]) if axis else rest
            s, inside = map_index(b, b.sub(o, const_i64(lead[axis])), kept[axis], mode)
            src_row = b.add(src_row, b.mul(b.add(s, const_i64(crop[axis])), in_strides[axis]))
            row_inside = b.and_(row_inside, inside)
        dst_row = b.mul(row, width)

        def border(lo: ir.Value, hi: ir.Value) -> None:
            if mode == "constant":
                fill_run(b, dst, b.add(dst_row, lo), b.sub(hi, lo), fill)
                return
            with for_range(b, lo, hi, name="border") as col:
                s, _ = map_index(b, b.sub(col, const_i64(lead[-1])), n_last, mode)
                copy_run(b, dst, b.add(dst_row, col), src, b.add(src_row, s), const_i64(1), elem)

        with b.if_else(row_inside) as (then, otherwise):
            with then:
                border(zero, middle_start)
                copy_run(b, dst, b.add(dst_row, middle_start), src, src_row, b.sub(middle_stop, middle_start), elem)
                border(middle_stop, width)
            with otherwise:  # constant mode only: the row lies in the padding
                fill_run(b, dst, dst_row, width, fill)
    dk.finish()
    return dk.info(workgroup_count=(grid.groups, 1, 1))
