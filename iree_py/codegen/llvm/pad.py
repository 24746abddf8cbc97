"""The "pad" kernel (any element type): Y = X padded by attrs pads [begins..., ends...] (static
ints; negative pads crop) in mode constant (attrs value), reflect (mirror without repeating the
edge), symmetric (mirror repeating the edge: TFLite MIRROR_PAD), edge (repeat the edge) or wrap
(periodic). Dims are ints or Exprs.

Negative pads crop first; then output index o on an axis reads s = o - max(begin, 0), mapped
into the cropped input by the mode (constant: outside means the value). Each output row (all axes
but the last) finds its source row once; the row's middle, where s is inside the input, is a
contiguous copy, and only the border columns are mapped one by one (constant mode fills them).
Workgroups split the rows.

What the known sizes cannot show is checked by the kernel before it touches memory: a crop larger
than its axis, and (modes other than constant) an axis cropped to nothing while the output is not
empty, make it fail.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import ALIGN, I1, const_i64, element_ptr, for_range, lanes_f32, max_index, min_index
from iree_py.codegen.llvm.copy_common import (element_type, emit_contiguous_copy, fail_unless, fill_run, group_rows,
                                              require_same_dims, row_grid)
from iree_py.codegen.llvm.dims import DynamicKernel, begin_dynamic_kernel, product
from iree_py.codegen.llvm.shapes import row_major
from iree_py.ir.ops.pad import PAD_MODES
from iree_py.ir.symbols import Expr, call, dim
from iree_py.ir.types import Dim
from iree_py.targets import Target


def value_bits(value: float, dtype: np.dtype) -> int:
    """The pad value as the integer with the same bytes in the element type."""
    array = np.array(value).astype(dtype).reshape(1)
    return int(array.view(np.dtype(f"u{dtype.itemsize}"))[0])


@dataclass(frozen=True)
class _Axis:
    """The cropped input's length along an axis, and the sizes its mode maps with (i64 values,
    lowered in the entry block; constants for a known length)."""

    size: Dim
    n: ir.Value            # size
    last: ir.Value         # size - 1 (edge)
    period: ir.Value       # 2 size (symmetric); 2 (size - 1), at least 1 (reflect)
    period_last: ir.Value  # 2 size - 1 (symmetric)


def _axis(dk: DynamicKernel, size: Dim, mode: str) -> _Axis:
    e = Expr.of(size)
    if mode == "reflect":
        period = dk.dim(2 * (e - 1) if isinstance(size, int) else call("max", 2 * (e - 1), 1))
    else:
        period = dk.dim(2 * e)
    return _Axis(size, dk.dim(size), dk.dim(e - 1), period, dk.dim(2 * e - 1))


def map_index(b: ir.IRBuilder, s: ir.Value, axis: _Axis, mode: str) -> tuple[ir.Value, ir.Value]:
    """(input index, inside?) for the unmapped source index s along `axis` (size > 0 unless
    constant mode)."""
    zero = const_i64(0)
    inside = b.icmp_unsigned("<", s, axis.n)
    if mode == "constant":
        return b.select(inside, s, zero), inside
    true = ir.Constant(I1, 1)
    if mode == "edge":
        return min_index(b, max_index(b, s, zero), axis.last), true
    if mode == "wrap":
        return b.srem(b.add(b.srem(s, axis.n), axis.n), axis.n), true
    if mode == "reflect" and axis.size == 1:  # an axis of one element reflects onto itself
        return zero, true
    period = axis.period
    t = b.srem(b.add(b.srem(s, period), period), period)
    if mode == "symmetric":  # mirror including the edge: period 2n
        return b.select(b.icmp_signed("<", t, axis.n), t, b.sub(axis.period_last, t)), true
    # reflect: mirror without repeating the edge, period 2(n - 1)
    mirrored = b.select(b.icmp_signed("<", t, axis.n), t, b.sub(period, t))
    if isinstance(axis.size, int):
        return mirrored, true
    return b.select(b.icmp_signed("==", axis.n, const_i64(1)), zero, mirrored), true


def _any(b: ir.IRBuilder, flags: list[ir.Value], empty: bool) -> ir.Value:
    """An i1 that is the or (empty: False) or the and (empty: True) of `flags`."""
    result: ir.Value = ir.Constant(I1, int(empty))
    for flag in flags:
        result = b.and_(result, flag) if empty else b.or_(result, flag)
    return result


def _check_sizes(dk: DynamicKernel, kept: list[Dim], out_shape: tuple[Dim, ...], mode: str) -> None:
    """Fail the dispatch for sizes the known dims cannot rule out: a crop larger than its axis; in
    a mode other than constant, an axis cropped to nothing while the output is not empty."""
    b = dk.builder
    zero = const_i64(0)
    symbolic = [k for k in kept if not isinstance(k, int)]
    if symbolic:
        fail_unless(dk, _any(b, [b.icmp_signed(">=", dk.dim(k), zero) for k in symbolic], True), "pad_crop")
    if mode == "constant" or 0 in out_shape or not symbolic:
        return
    empty_out = _any(b, [b.icmp_signed("==", dk.dim(n), zero) for n in out_shape if not isinstance(n, int)], False)
    has_input = _any(b, [b.icmp_signed(">", dk.dim(k), zero) for k in symbolic], True)
    fail_unless(dk, b.or_(empty_out, has_input), "pad_input")


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"pad kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    x_t, y_t = spec.inputs[0], spec.outputs[0]
    if x_t.dtype != y_t.dtype:
        raise ValueError(f"{what}: dtype {x_t.dtype.value} != output {y_t.dtype.value}")
    mode, pads = spec.attrs["mode"], [int(p) for p in spec.attrs["pads"]]
    if mode not in PAD_MODES:
        raise ValueError(f"{what}: mode {mode!r} is not one of {list(PAD_MODES)}")
    rank = x_t.rank
    if rank == 0 or len(pads) != 2 * rank or y_t.rank != rank:
        raise ValueError(f"{what}: pads {pads} do not take {x_t} to {y_t}")
    crop = [max(-pads[a], 0) for a in range(rank)]
    lead = [max(pads[a], 0) for a in range(rank)]
    kept = [dim(Expr.of(x_t.shape[a]) - crop[a] - max(-pads[rank + a], 0)) for a in range(rank)]  # the cropped input
    if any(isinstance(k, int) and k < 0 for k in kept):
        raise ValueError(f"{what}: pads {pads} crop more than {x_t} holds")
    if mode != "constant" and 0 in x_t.shape:
        raise ValueError(f"{what}: mode {mode} needs a non-empty input, got {x_t}")
    if mode != "constant" and 0 in kept:
        raise ValueError(f"{what}: mode {mode} cannot pad an axis cropped to nothing ({x_t}, pads {pads})")
    elem = element_type(x_t.dtype.itemsize, what)
    align = min(ALIGN, elem.width // 8)
    fill = ir.Constant(elem, value_bits(spec.attrs.get("value", 0), x_t.dtype.numpy))

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    require_same_dims(dk, [(Expr.of(x_t.shape[a]) + pads[a] + pads[rank + a], y_t.shape[a],
                            f"pads {pads} do not take {x_t} to {y_t} (axis {a})") for a in range(rank)], what)
    _check_sizes(dk, kept, y_t.shape, mode)
    width_d = y_t.shape[-1]
    grid = row_grid(product(y_t.shape[:-1]), width_d)
    src, dst = dk.binding(0), dk.binding(1)
    if grid.rows == 0 or width_d == 0:
        dk.finish()
        return dk.info(workgroup_count=(grid.groups, 1, 1))
    # Every size is lowered before the row loop: a value computed from push constants must dominate its uses.
    axes = [_axis(dk, k, mode) for k in kept]
    row_dims = [dk.dim(d) for d in y_t.shape[:-1]]
    in_strides = [dk.dim(s) for s in row_major(x_t.shape)]
    width = dk.dim(width_d)
    # The middle of a row: output columns [middle_start, middle_stop) read s = col - lead inside the input.
    middle_start_d = dim(call("min", lead[-1], width_d))
    middle_stop_d = dim(call("max", middle_start_d, call("min", Expr.of(kept[-1]) + lead[-1], width_d)))
    middle_d = dim(Expr.of(middle_stop_d) - middle_start_d)
    middle_start, middle_stop, middle = (dk.dim(d) for d in (middle_start_d, middle_stop_d, middle_d))
    start, stop = group_rows(dk, grid)
    if not isinstance(width_d, int):  # an empty row touches nothing (and keeps the modulo of an empty axis away)
        stop = b.select(b.icmp_signed(">", width, const_i64(0)), stop, start)
    with for_range(b, start, stop, name="row") as row:
        src_row = const_i64(0)
        row_inside: ir.Value = ir.Constant(I1, 1)
        rest = row
        for axis in range(rank - 2, -1, -1):
            o = b.urem(rest, row_dims[axis]) if axis else rest
            rest = b.udiv(rest, row_dims[axis]) if axis else rest
            s, inside = map_index(b, b.sub(o, const_i64(lead[axis])), axes[axis], mode)
            src_row = b.add(src_row, b.mul(b.add(s, const_i64(crop[axis])), in_strides[axis]))
            row_inside = b.and_(row_inside, inside)
        src_row = b.add(src_row, const_i64(crop[-1]))
        dst_row = b.mul(row, width)

        def border(lo_d: Dim, lo: ir.Value, hi_d: Dim, hi: ir.Value) -> None:
            """Output columns [lo, hi) of the row (lo_d, hi_d: the same as dims)."""
            if isinstance(lo_d, int) and isinstance(hi_d, int) and lo_d >= hi_d:
                return
            if mode == "constant":  # outside the input on the last axis: the value
                fill_run(b, dst, b.add(dst_row, lo), b.sub(hi, lo), fill)
                return
            with for_range(b, lo, hi, name="border") as col:
                s, _ = map_index(b, b.sub(col, const_i64(lead[-1])), axes[-1], mode)
                v = b.load(element_ptr(b, src, b.add(src_row, s), elem), typ=elem, align=align)
                b.store(v, element_ptr(b, dst, b.add(dst_row, col), elem), align=align)

        def copy_row() -> None:
            border(0, const_i64(0), middle_start_d, middle_start)
            if middle_d != 0:
                emit_contiguous_copy(b, dst, b.add(dst_row, middle_start), src, src_row,
                                     middle_d if isinstance(middle_d, int) else middle, elem, lanes_f32(target))
            border(middle_stop_d, middle_stop, width_d, width)

        if 0 in kept:  # constant mode: nothing of the input is left
            fill_run(b, dst, dst_row, width, fill)
        elif mode == "constant":
            with b.if_else(row_inside) as (then, otherwise):
                with then:
                    copy_row()
                with otherwise:  # the row lies in the padding
                    fill_run(b, dst, dst_row, width, fill)
        else:
            copy_row()
    dk.finish()
    return dk.info(workgroup_count=(grid.groups, 1, 1))
