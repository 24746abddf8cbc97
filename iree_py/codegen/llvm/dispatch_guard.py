"""Every entry point checks the dispatch it is given before its kernel touches memory.

Static kernels trust sizes baked into their code; ones with symbolic dims (codegen/llvm/dims.py)
trust the sizes they compute from their push constants. The
runtime checks bindings against the lengths the module declares, but the module is data: a
corrupted file could declare smaller lengths or another grid. So the exported entry point is a
guard that compares what it receives with what its kernel was built for — binding count and
lengths, push constant count, grid size and workgroup id — and returns STATUS_DISPATCH_REFUSED (1,
kernel_abi.py; the runtime reports the entry point as failed) instead of calling the kernel on anything else.

The module also says which buffer each binding is, so a damaged one can bind a constant (used in
place: the caller's module bytes, flash on a board) or a caller's input where the kernel writes. The
runtime marks those bindings in the dispatch state's read_only_bindings bitmap from what each buffer
is, and the guard returns STATUS_READ_ONLY_BINDING when a binding its kernel writes is marked: one
load of the bitmap's pointer, then a load, an and and a compare per 32 bindings that hold an output.
A kernel writes its outputs and nothing else (KernelSpec: bindings are inputs then outputs).
"""
from __future__ import annotations

from collections.abc import Iterable

from llvmlite import ir

from iree_py.codegen.kernel_abi import (STATUS_DISPATCH_REFUSED, STATUS_READ_ONLY_BINDING, dispatch_state_layout,
                                        workgroup_state_layout)
from iree_py.codegen.kernel_spec import KernelInfo
from iree_py.codegen.llvm.common import I8, I32, I64, KERNEL_FN_TYPE, PTR, const_i32, const_i64, load_binding_length
from iree_py.targets import Target

def body_name(name: str) -> str:
    """The kernel is built under this name; `name` itself becomes the guard."""
    return f"{name}_body"


def written_words(written: Iterable[int]) -> dict[int, int]:
    """read_only_bindings word -> the mask of its bits that stand for bindings in `written` (a
    signed i32 value: bit 31 set is negative)."""
    words: dict[int, int] = {}
    for i in written:
        words[i // 32] = words.get(i // 32, 0) | 1 << (i % 32)
    return {w: m - (1 << 32) if m >= 1 << 31 else m for w, m in words.items()}  # as i32 constants


def add_dispatch_guard(module: ir.Module, info: KernelInfo, target: Target, written: Iterable[int]) -> None:
    """Define entry point `info.name`: check the dispatch, then call kernel `body_name(info.name)`.

    Static kernels compare against constants. A dynamic kernel's push constants are the values of
    its symbols (codegen/llvm/dims.py): the guard reads them and computes the grid and the binding
    lengths its kernel will use from them (a negative computed length refuses the dispatch).
    `written`: the bindings the kernel writes; the dispatch is refused when one is read-only."""
    from iree_py.codegen.llvm.dims import DimEmitter, load_symbols

    body = module.globals[body_name(info.name)]
    guard = ir.Function(module, KERNEL_FN_TYPE, name=info.name)
    guard.linkage = "internal"
    state, workgroup = guard.args
    b = ir.IRBuilder(guard.append_basic_block("entry"))
    fail = guard.append_basic_block("fail")
    layout = dispatch_state_layout(target.pointer_bits)

    def field(offset: int, typ: ir.Type, align: int) -> ir.Value:
        return b.load(b.gep(state, [const_i64(offset)], source_etype=I8), typ=typ, align=align)

    def all_of(checks: list[ir.Value]) -> ir.Value:
        ok = checks[0]
        for c in checks[1:]:
            ok = b.and_(ok, c)
        return ok

    # Read the push constants and lengths only once their counts are known to be right.
    counts_ok = all_of([
        b.icmp_unsigned("==", field(layout.offsets["push_constant_count"], I32, 4), const_i32(len(info.push_constants))),
        b.icmp_unsigned("==", field(layout.offsets["binding_count"], I32, 4), const_i32(len(info.binding_min_lengths))),
    ])
    sizes = guard.append_basic_block("sizes")
    words = written_words(written)
    if words:  # the bitmap has a word for each 32 of binding_count, checked above
        writable = guard.append_basic_block("writable")
        read_only = guard.append_basic_block("read_only")
        b.cbranch(counts_ok, writable, fail)
        b.position_at_end(writable)
        bitmap = field(layout.offsets["read_only_bindings"], PTR, target.pointer_bits // 8)
        marked = None
        for word, mask in sorted(words.items()):
            bits = b.load(b.gep(bitmap, [const_i64(word)], source_etype=I32), typ=I32, align=4)
            bits = b.and_(bits, const_i32(mask))
            marked = bits if marked is None else b.or_(marked, bits)
        b.cbranch(b.icmp_unsigned("==", marked, const_i32(0)), sizes, read_only)
        b.position_at_end(read_only)
        b.ret(const_i32(STATUS_READ_ONLY_BINDING))
    else:
        b.cbranch(counts_ok, sizes, fail)
    b.position_at_end(sizes)
    symbolic = any(not isinstance(p, int) for p in info.push_constants)
    names = tuple(str(p) for p in info.push_constants) if symbolic else ()
    dim = DimEmitter(b, load_symbols(b, state, names, target))
    checks: list[ir.Value] = []
    for axis, count in enumerate(info.workgroup_count):
        want = dim(count)
        groups = b.zext(field(layout.offsets["workgroup_count"] + 4 * axis, I32, 4), I64)
        checks.append(b.icmp_signed("==", groups, want))
        wg_offset = workgroup_state_layout(target.pointer_bits).offsets["workgroup_id"] + 4 * axis
        wg = b.load(b.gep(workgroup, [const_i64(wg_offset)], source_etype=I8), typ=I32, align=4)
        checks.append(b.icmp_signed("<", b.zext(wg, I64), want))
    for i, need in enumerate(info.binding_min_lengths):
        have64 = load_binding_length(b, state, i, target.pointer_bits)
        need_v = dim(need)
        if not isinstance(need, int):
            checks.append(b.icmp_signed(">=", need_v, const_i64(0)))
        checks.append(b.icmp_unsigned(">=", have64, need_v))
    call = guard.append_basic_block("call")
    b.cbranch(all_of(checks), call, fail)
    b.position_at_end(call)
    b.ret(b.call(body, [state, workgroup]))
    b.position_at_end(fail)
    b.ret(const_i32(STATUS_DISPATCH_REFUSED))
