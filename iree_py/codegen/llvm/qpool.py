"""Pooling on i8/u8 NCHW tensors: "maxpool" with an integer input (pool.py hands it over) and
"qavgpool" (QAveragePool: TFLite's integer average, docs/ir.md "Quantized ops").

One workgroup per (n, c) plane, as pool.py. Window positions outside the input are skipped. The
average divides the window's int32 sum by the element count (counted as AveragePool counts them)
with TFLite's rounding, (sum +- count / 2) / count with a truncating division (`sdiv`: a hardware
instruction on every target, the count is an i32), then clamps to act_min..act_max.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (I32, begin_kernel, const_i64, entry_alloca, for_range, max_index,
                                         min_index, static_shape)
from iree_py.codegen.llvm.requant import QRANGE, clamp_i32, i32, load_q, smax, store_q
from iree_py.ir.opdef import pool_output_size


def _ints(spec: KernelSpec, name: str, count: int, default: int) -> tuple[int, ...]:
    values = tuple(int(v) for v in spec.attrs.get(name, (default,) * count))
    if len(values) != count:
        raise ValueError(f"{spec.kind} kernel {spec.name}: attribute {name} needs {count} values, got {values}")
    return values


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{spec.kind} kernel {spec.name}: expects 1 input and 1 output")
    dtype = spec.inputs[0].dtype
    if dtype not in QRANGE or spec.outputs[0].dtype != dtype:
        raise ValueError(f"{spec.kind} kernel {spec.name}: wants i8/u8 in and out, got {spec.inputs[0]} -> "
                         f"{spec.outputs[0]}")
    n, c, h, w = static_shape(spec.inputs[0], f"{spec.kind} kernel {spec.name} input")
    kh, kw = _ints(spec, "kernel", 2, 1)
    sh, sw = _ints(spec, "strides", 2, 1)
    pt, pl, pb, pr = _ints(spec, "pads", 4, 0)
    is_max = spec.kind == "maxpool"
    dh, dw = _ints(spec, "dilations", 2, 1) if is_max else (1, 1)
    ceil_mode = int(spec.attrs.get("ceil_mode", 0))
    oh = pool_output_size(h, kh, sh, pt, pb, dh, ceil_mode)
    ow = pool_output_size(w, kw, sw, pl, pr, dw, ceil_mode)
    if static_shape(spec.outputs[0], f"{spec.kind} kernel {spec.name} output") != (n, c, oh, ow):
        raise ValueError(f"{spec.kind} kernel {spec.name}: output {spec.outputs[0]} should be [{n}, {c}, {oh}, {ow}]")
    include_pad = int(spec.attrs.get("count_include_pad", 0))

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    plane = kb.workgroup_id_index(0)
    src_base = b.mul(plane, const_i64(h * w))
    dst_base = b.mul(plane, const_i64(oh * ow))
    acc = entry_alloca(b, I32)
    zero = const_i64(0)
    with for_range(b, 0, oh, name="oh") as y:
        hs = b.sub(b.mul(y, const_i64(sh)), const_i64(pt))
        with for_range(b, 0, ow, name="ow") as x:
            ws = b.sub(b.mul(x, const_i64(sw)), const_i64(pl))
            b.store(i32(QRANGE[dtype][0] if is_max else 0), acc)
            with for_range(b, 0, kh, name="kh") as i:
                hh = b.add(hs, b.mul(i, const_i64(dh)))
                with b.if_then(b.icmp_unsigned("<", hh, const_i64(h))):
                    with for_range(b, 0, kw, name="kw") as j:
                        ww = b.add(ws, b.mul(j, const_i64(dw)))
                        with b.if_then(b.icmp_unsigned("<", ww, const_i64(w))):
                            v = load_q(b, src, b.add(src_base, b.add(b.mul(hh, const_i64(w)), ww)), dtype)
                            old = b.load(acc)
                            b.store(smax(b, v, old) if is_max else b.add(old, v), acc)
            result = b.load(acc)
            if not is_max:
                if include_pad:
                    rows = b.sub(min_index(b, b.add(hs, const_i64(kh)), const_i64(h + pb)), hs)
                    cols = b.sub(min_index(b, b.add(ws, const_i64(kw)), const_i64(w + pr)), ws)
                else:
                    rows = b.sub(min_index(b, b.add(hs, const_i64(kh)), const_i64(h)), max_index(b, hs, zero))
                    cols = b.sub(min_index(b, b.add(ws, const_i64(kw)), const_i64(w)), max_index(b, ws, zero))
                count = b.trunc(b.mul(rows, cols), I32)
                half = b.sdiv(count, i32(2))
                positive = b.icmp_signed(">", result, i32(0))
                numerator = b.select(positive, b.add(result, half), b.sub(result, half))
                result = clamp_i32(b, b.sdiv(numerator, count), int(spec.attrs["act_min"]),
                                   int(spec.attrs["act_max"]))
            store_q(b, result, dst, b.add(dst_base, b.add(b.mul(y, const_i64(ow)), x)))
    kb.finish()
    return KernelInfo(spec.name, (n * c, 1, 1), (), (spec.inputs[0].num_bytes, spec.outputs[0].num_bytes))
