"""Pooling on i8/u8 NCHW tensors: "maxpool" with an integer input (pool.py hands it over) and
"qavgpool" (QAveragePool: TFLite's integer average, docs/ir.md "Quantized ops").

The window loops are pool_window.py's, as pool.py's. Window positions outside the input are skipped. The
average divides the window's int32 sum by the element count (counted as AveragePool counts them)
with TFLite's rounding, (sum +- count / 2) / count with a truncating division (`sdiv`: a hardware
instruction on every target, the count is an i32), then clamps to act_min..act_max.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import I32, begin_kernel, static_shape
from iree_py.codegen.llvm.pool_window import Window, WindowAt, for_each_window, window_count
from iree_py.codegen.llvm.requant import QRANGE, clamp_i32, i32, load_q, smax, store_q


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{spec.kind} kernel {spec.name}: expects 1 input and 1 output")
    dtype = spec.inputs[0].dtype
    if dtype not in QRANGE or spec.outputs[0].dtype != dtype:
        raise ValueError(f"{spec.kind} kernel {spec.name}: wants i8/u8 in and out, got {spec.inputs[0]} -> "
                         f"{spec.outputs[0]}")
    n, c, _, _ = static_shape(spec.inputs[0], f"{spec.kind} kernel {spec.name} input")
    is_max = spec.kind == "maxpool"
    win = Window.of(spec, dilated=is_max)
    include_pad = int(spec.attrs.get("count_include_pad", 0))

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)

    def combine(acc: ir.Value, index: ir.Value) -> ir.Value:
        v = load_q(b, src, index, dtype)
        return smax(b, v, acc) if is_max else b.add(acc, v)

    def finish(result: ir.Value, at: WindowAt) -> None:
        if not is_max:
            count = b.trunc(window_count(b, win, at, include_pad), I32)
            half = b.sdiv(count, i32(2))
            positive = b.icmp_signed(">", result, i32(0))
            numerator = b.select(positive, b.add(result, half), b.sub(result, half))
            result = clamp_i32(b, b.sdiv(numerator, count), int(spec.attrs["act_min"]), int(spec.attrs["act_max"]))
        store_q(b, result, dst, at.out_index)

    for_each_window(b, kb.workgroup_id_index(0), win, i32(QRANGE[dtype][0] if is_max else 0), combine, finish)
    kb.finish()
    return KernelInfo(spec.name, (n * c, 1, 1), (), (spec.inputs[0].num_bytes, spec.outputs[0].num_bytes))
