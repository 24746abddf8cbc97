"""The "pad" kernel (any element type): Y = X padded by attrs pads [begins..., ends...] (negative
pads crop) in mode constant (attrs value), reflect (mirror without repeating the edge), symmetric (mirror
repeating the edge: TFLite MIRROR_PAD), edge (repeat the edge) or wrap (periodic).

Negative pads crop first; then output index o on an axis reads s = o - max(begin, 0), mapped
into the cropped input by the mode (constant: outside means the value). Each output row (all axes but the last) finds its source row
once; the row's middle, where s is inside the input, is a contiguous copy, and only the border
columns are mapped one by one. Workgroups split the rows.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (ALIGN, I1, begin_kernel, const_i64, element_ptr, for_range, lanes_f32,
                                         max_index, min_index, static_shape)
from iree_py.codegen.llvm.copy_common import element_type, emit_contiguous_copy
from iree_py.ir.ops_resize_pad import PAD_MODES, pad_output_shape

ROW_GROUP_ELEMENTS = 16384


def value_bits(value: float, dtype: np.dtype) -> int:
    """The pad value as the integer with the same bytes in the element type."""
    array = np.array(value).astype(dtype).reshape(1)
    return int(array.view(np.dtype(f"u{dtype.itemsize}"))[0])


def map_index(b: ir.IRBuilder, s: ir.Value, dim: int, mode: str) -> tuple[ir.Value, ir.Value]:
    """(input index, inside?) for the unmapped source index s along an axis of `dim` elements."""
    zero = const_i64(0)
    inside = b.icmp_unsigned("<", s, const_i64(dim))
    if mode == "constant":
        return b.select(inside, s, zero), inside
    true = ir.Constant(I1, 1)
    if mode == "edge":
        return min_index(b, max_index(b, s, zero), const_i64(dim - 1)), true
    if mode == "wrap":
        return b.srem(b.add(b.srem(s, const_i64(dim)), const_i64(dim)), const_i64(dim)), true
    if mode == "symmetric":  # mirror including the edge: period 2 * dim
        period = const_i64(2 * dim)
        t = b.srem(b.add(b.srem(s, period), period), period)
        return b.select(b.icmp_signed("<", t, const_i64(dim)), t, b.sub(const_i64(2 * dim - 1), t)), true
    if dim == 1:
        return zero, true
    period = const_i64(2 * (dim - 1))
    t = b.srem(b.add(b.srem(s, period), period), period)
    return b.select(b.icmp_signed("<", t, const_i64(dim)), t, b.sub(period, t)), true


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    what = f"pad kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    x_t, y_t = spec.inputs[0], spec.outputs[0]
    if x_t.dtype != y_t.dtype:
        raise ValueError(f"{what}: dtype {x_t.dtype.value} != output {y_t.dtype.value}")
    in_shape, out_shape = static_shape(x_t, what), static_shape(y_t, what)
    mode, pads = spec.attrs["mode"], [int(p) for p in spec.attrs["pads"]]
    if mode not in PAD_MODES:
        raise ValueError(f"{what}: mode {mode!r} is not one of {list(PAD_MODES)}")
    if not in_shape or pad_output_shape(in_shape, pads) != out_shape:
        raise ValueError(f"{what}: pads {pads} do not take {in_shape} to {out_shape}")
    if mode != "constant" and 0 in in_shape:
        raise ValueError(f"{what}: mode {mode} needs a non-empty input, got {in_shape}")
    rank = len(out_shape)
    elem = element_type(x_t.dtype.itemsize, what)
    align = min(ALIGN, elem.width // 8)
    fill = ir.Constant(elem, value_bits(spec.attrs.get("value", 0), x_t.dtype.numpy))
    crop = [max(-pads[a], 0) for a in range(rank)]
    kept = [d - crop[a] - max(-pads[rank + a], 0) for a, d in enumerate(in_shape)]  # the cropped input
    lead = [max(pads[a], 0) for a in range(rank)]
    if mode != "constant" and 0 in kept:
        raise ValueError(f"{what}: mode {mode} cannot pad an axis cropped to nothing ({in_shape}, pads {pads})")
    width, dim = out_shape[-1], kept[-1]
    middle_start = lead[-1]
    middle = max(0, min(dim, width - middle_start))
    rows = math.prod(out_shape[:-1])
    rows_per_group = max(1, ROW_GROUP_ELEMENTS // max(width, 1))
    groups = max(1, -(-rows // rows_per_group))
    in_row_strides = [math.prod(in_shape[a + 1:]) for a in range(rank)]

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    if rows and width:
        row_start = b.mul(kb.workgroup_id_index(0), const_i64(rows_per_group))
        row_stop = min_index(b, b.add(row_start, const_i64(rows_per_group)), const_i64(rows))
        with for_range(b, row_start, row_stop, name="row") as row:
            src_row = const_i64(0)
            row_inside = ir.Constant(I1, 1)
            rest = row
            for axis in range(rank - 2, -1, -1):
                o = b.urem(rest, const_i64(out_shape[axis])) if axis else rest
                rest = b.udiv(rest, const_i64(out_shape[axis])) if axis else rest
                s, inside = map_index(b, b.sub(o, const_i64(lead[axis])), kept[axis], mode)
                src_row = b.add(src_row, b.mul(b.add(s, const_i64(crop[axis])), const_i64(in_row_strides[axis])))
                row_inside = b.and_(row_inside, inside)
            src_row = b.add(src_row, const_i64(crop[-1]))
            dst_row = b.mul(row, const_i64(width))

            def border(lo: int, hi: int) -> None:
                if lo >= hi:
                    return
                with for_range(b, lo, hi, name="border") as col:
                    s, inside = map_index(b, b.sub(col, const_i64(middle_start)), dim, mode)
                    v = b.load(element_ptr(b, src, b.add(src_row, s), elem), typ=elem, align=align)
                    v = b.select(b.and_(inside, row_inside), v, fill)
                    b.store(v, element_ptr(b, dst, b.add(dst_row, col), elem), align=align)

            def fill_row() -> None:
                with for_range(b, 0, width, name="fill") as col:
                    b.store(fill, element_ptr(b, dst, b.add(dst_row, col), elem), align=align)

            def copy_row() -> None:
                border(0, middle_start if middle else width)
                if middle:
                    emit_contiguous_copy(b, dst, b.add(dst_row, const_i64(middle_start)), src,
                                         src_row, middle, elem,
                                         lanes_f32(target))
                    border(middle_start + middle, width)

            if 0 in kept:
                fill_row()
            elif mode == "constant":
                with b.if_else(row_inside) as (then, otherwise):
                    with then:
                        copy_row()
                    with otherwise:
                        fill_row()
            else:
                copy_row()
    kb.finish()
    return KernelInfo(spec.name, (groups, 1, 1), (), (x_t.num_bytes, y_t.num_bytes))
