"""The "string_equal" kernel: ONNX Equal on two packed string tensors (docs/strings.md), with numpy
broadcasting, writing bool. A packed tensor of N elements is N+1 little-endian i64 byte offsets then
the bytes; the kernel first checks both inputs' offsets against their binding's real length
(0 <= off[0] <= off[1] <= ... <= off[N] <= length - (N+1)*8) and returns STATUS_STRINGS_MALFORMED (the
dispatch fails) instead of reading outside the buffer. One workgroup does the whole tensor."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_abi import STATUS_STRINGS_MALFORMED
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (I8, I64, KernelBuilder, begin_kernel, const_i32, const_i64, element_ptr,
                                         entry_alloca, for_range, static_shape, strides_of)
from iree_py.ir.types import DType


def _offset(b: ir.IRBuilder, base: ir.Value, index: ir.Value) -> ir.Value:
    return b.load(element_ptr(b, base, index, I64), typ=I64, align=4)  # buffers: 4-byte alignment only


def _check_offsets(kb: KernelBuilder, base: ir.Value, count: int, length: ir.Value, name: str) -> None:
    """Return STATUS_STRINGS_MALFORMED unless off[0] >= 0, the offsets never decrease and off[count] fits."""
    b = kb.builder
    payload = b.sub(length, const_i64((count + 1) * 8))  # >= 0: the guard checked the minimum length
    bad = kb.function.append_basic_block(f"{name}.malformed")
    ok = kb.function.append_basic_block(f"{name}.first_ok")
    b.cbranch(b.icmp_signed(">=", _offset(b, base, const_i64(0)), const_i64(0)), ok, bad)
    b.position_at_end(ok)
    with for_range(b, 0, count, name=f"{name}.k") as k:
        step_ok = kb.function.append_basic_block(f"{name}.step_ok")
        lo, hi = _offset(b, base, k), _offset(b, base, b.add(k, const_i64(1)))
        b.cbranch(b.icmp_signed("<=", lo, hi), step_ok, bad)
        b.position_at_end(step_ok)
    last_ok = kb.function.append_basic_block(f"{name}.last_ok")
    b.cbranch(b.icmp_signed("<=", _offset(b, base, const_i64(count)), payload), last_ok, bad)
    with b.goto_block(bad):
        b.ret(const_i32(STATUS_STRINGS_MALFORMED))
    b.position_at_end(last_ok)


def _bytes_equal(kb: KernelBuilder, starts: list[ir.Value], count: ir.Value, cursor: ir.Value) -> ir.Value:
    """Whether the `count` bytes at starts[0] and starts[1] are equal (an i1): 32 bytes at a time,
    then 8, then the last few one by one, stopping at the first block that differs (one compare per
    32 bytes keeps long equal strings as fast as a vectorized loop). `cursor` is an i64 slot for the
    byte index."""
    b, f = kb.builder, kb.function
    differ, done = f.append_basic_block("bytes.differ"), f.append_basic_block("bytes.done")
    b.store(const_i64(0), cursor)
    same = []
    for width, ty in ((32, ir.IntType(256)), (8, I64), (1, I8)):
        head, body, next_block = (f.append_basic_block(f"bytes{width}.{n}") for n in ("head", "body", "next"))
        b.branch(head)
        b.position_at_end(head)
        j = b.load(cursor, typ=I64)
        b.cbranch(b.icmp_signed("<=", b.add(j, const_i64(width)), count), body, next_block)
        b.position_at_end(body)
        x, y = (b.load(b.gep(p, [j], source_etype=I8), typ=ty, align=1) for p in starts)
        b.store(b.add(j, const_i64(width)), cursor)
        b.cbranch(b.icmp_unsigned("==", x, y), head, differ)
        b.position_at_end(next_block)
        same.append(next_block)
    b.branch(done)
    b.position_at_end(differ)
    b.branch(done)
    b.position_at_end(done)
    result = b.phi(ir.IntType(1), name="bytes.same")
    result.add_incoming(ir.Constant(ir.IntType(1), 1), same[-1])
    result.add_incoming(ir.Constant(ir.IntType(1), 0), differ)
    return result


def _broadcast_strides(shape: tuple[int, ...], out_shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of an operand over the output's axes (0 where it broadcasts)."""
    padded = (1,) * (len(out_shape) - len(shape)) + shape
    return tuple(0 if d == 1 else s for d, s in zip(padded, strides_of(padded)))


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    what = f"string_equal kernel {spec.name}"
    if len(spec.inputs) != 2 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 2 inputs and 1 output")
    a_t, b_t = spec.inputs
    out_t = spec.outputs[0]
    if a_t.dtype != DType.string or b_t.dtype != DType.string or out_t.dtype != DType.bool:
        raise ValueError(f"{what}: wants string, string -> bool, got {a_t}, {b_t} -> {out_t}")
    out_shape = static_shape(out_t, what)
    counts = (a_t.num_elements, b_t.num_elements)
    strides = (_broadcast_strides(static_shape(a_t, what), out_shape),
               _broadcast_strides(static_shape(b_t, what), out_shape))

    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    bases = (kb.binding(0), kb.binding(1))
    out = kb.binding(2)
    for i, (base, count) in enumerate(zip(bases, counts)):
        _check_offsets(kb, base, count, kb.binding_length(i), f"in{i}")
    cursor = entry_alloca(b, I64, "byte")
    with for_range(b, 0, out_t.num_elements, name="o") as o:
        index = [const_i64(0), const_i64(0)]
        rest = o
        for axis in range(len(out_shape) - 1, -1, -1):
            pos = b.urem(rest, const_i64(out_shape[axis])) if axis > 0 else rest
            rest = b.udiv(rest, const_i64(out_shape[axis])) if axis > 0 else rest
            for s in range(2):
                if strides[s][axis]:
                    index[s] = b.add(index[s], b.mul(pos, const_i64(strides[s][axis])))
        starts, lengths = [], []
        for s in range(2):
            lo, hi = _offset(b, bases[s], index[s]), _offset(b, bases[s], b.add(index[s], const_i64(1)))
            starts.append(b.add(lo, const_i64((counts[s] + 1) * 8)))
            lengths.append(b.sub(hi, lo))
        same_length = b.icmp_signed("==", lengths[0], lengths[1])
        count = b.select(same_length, lengths[0], const_i64(0))
        same_bytes = _bytes_equal(kb, [element_ptr(b, base, start, I8) for base, start in zip(bases, starts)], count,
                                  cursor)
        b.store(b.zext(b.and_(same_length, same_bytes), I8), element_ptr(b, out, o, I8), align=1)
    kb.finish()
    return KernelInfo(spec.name, (1, 1, 1), (), ((counts[0] + 1) * 8, (counts[1] + 1) * 8, out_t.num_bytes))
