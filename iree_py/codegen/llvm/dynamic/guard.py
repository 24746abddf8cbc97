"""The entry-point guard of a dynamic kernel (the static one is codegen/llvm/dispatch_guard.py).

Before the kernel runs, the guard reads the symbols from the push constants, computes from them
the workgroup grid and every binding's byte length the kernel will touch, and checks what it was
given against those: push constant and binding counts, grid size, workgroup id, and each binding
at least as long as computed. So a wrong dim in the bytecode can make a kernel fail, never write
out of bounds.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_abi import dispatch_state_layout, workgroup_state_layout
from iree_py.codegen.kernel_spec import KernelInfo
from iree_py.codegen.llvm.common import I8, I32, I64, KERNEL_FN_TYPE, PTR, const_i32, const_i64
from iree_py.codegen.llvm.dispatch_guard import GUARD_FAILED, body_name
from iree_py.codegen.llvm.dynamic.common import DimEmitter, load_symbols
from iree_py.codegen.target import Target
from iree_py.ir.symbols import Expr

U32_MAX = (1 << 32) - 1


def add_dynamic_guard(module: ir.Module, info: KernelInfo, target: Target) -> None:
    body = module.globals[body_name(info.name)]
    guard = ir.Function(module, KERNEL_FN_TYPE, name=info.name)
    guard.linkage = "internal"
    state, workgroup = guard.args
    b = ir.IRBuilder(guard.append_basic_block("entry"))
    fail = guard.append_basic_block("fail")
    layout = dispatch_state_layout(target.pointer_bits)
    word = target.pointer_bits // 8
    size_type = ir.IntType(target.pointer_bits)

    def field(offset: int, typ: ir.Type, align: int) -> ir.Value:
        return b.load(b.gep(state, [const_i64(offset)], source_etype=I8), typ=typ, align=align)

    def all_of(checks: list[ir.Value]) -> ir.Value:
        ok = ir.Constant(ir.IntType(1), 1)
        for c in checks:
            ok = b.and_(ok, c)
        return ok

    names = tuple(str(Expr.of(p)) for p in info.push_constants)
    counts_ok = all_of([
        b.icmp_unsigned("==", field(layout.offsets["push_constant_count"], I32, 4), const_i32(len(names))),
        b.icmp_unsigned("==", field(layout.offsets["binding_count"], I32, 4),
                        const_i32(len(info.binding_min_lengths))),
    ])
    sizes = guard.append_basic_block("sizes")
    b.cbranch(counts_ok, sizes, fail)
    b.position_at_end(sizes)
    dim = DimEmitter(b, load_symbols(b, state, names, target))
    checks: list[ir.Value] = []
    for axis, count in enumerate(info.workgroup_count):
        want = dim(count)
        groups = b.zext(field(layout.offsets["workgroup_count"] + 4 * axis, I32, 4), I64)
        checks.append(b.icmp_signed("==", groups, want))
        wg_offset = workgroup_state_layout(target.pointer_bits).offsets["workgroup_id"] + 4 * axis
        wg = b.load(b.gep(workgroup, [const_i64(wg_offset)], source_etype=I8), typ=I32, align=4)
        checks.append(b.icmp_signed("<", b.zext(wg, I64), want))
    lengths = field(layout.offsets["binding_lengths"], PTR, word)
    for i, need in enumerate(info.binding_min_lengths):
        have = b.load(b.gep(lengths, [const_i64(i)], source_etype=size_type), typ=size_type, align=word)
        need_v = dim(need)
        have64 = b.zext(have, I64) if target.pointer_bits < 64 else have
        # A negative computed length can only come from bad push constants: refuse it.
        checks.append(b.icmp_signed(">=", need_v, const_i64(0)))
        checks.append(b.icmp_unsigned(">=", have64, need_v))
    call = guard.append_basic_block("call")
    b.cbranch(all_of(checks), call, fail)
    b.position_at_end(call)
    b.ret(b.call(body, [state, workgroup]))
    b.position_at_end(fail)
    b.ret(const_i32(GUARD_FAILED))
