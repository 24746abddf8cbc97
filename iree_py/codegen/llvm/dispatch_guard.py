"""Every entry point checks the dispatch it is given before its kernel touches memory.

Kernels are specialized to static shapes, so their loops trust sizes baked into the code. The
runtime checks bindings against the lengths the module declares, but the module is data: a
corrupted file could declare smaller lengths or another grid. So the exported entry point is a
guard that compares what it receives with what its kernel was built for — binding count and
lengths, push constant count, grid size and workgroup id — and returns 1 (the runtime reports the
entry point as failed) instead of calling the kernel on anything else.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_abi import dispatch_state_layout, workgroup_state_layout
from iree_py.codegen.kernel_spec import KernelInfo
from iree_py.codegen.llvm.common import I8, I32, KERNEL_FN_TYPE, PTR, const_i32, const_i64
from iree_py.codegen.target import Target

GUARD_FAILED = 1


def body_name(name: str) -> str:
    """The kernel is built under this name; `name` itself becomes the guard."""
    return f"{name}_body"


def add_dispatch_guard(module: ir.Module, info: KernelInfo, target: Target) -> None:
    """Define entry point `info.name`: check the dispatch, then call kernel `body_name(info.name)`."""
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

    checks: list[ir.Value] = []
    for axis, count in enumerate(info.workgroup_count):
        groups = field(layout.offsets["workgroup_count"] + 4 * axis, I32, 4)
        checks.append(b.icmp_unsigned("==", groups, const_i32(count)))
        wg_offset = workgroup_state_layout(target.pointer_bits).offsets["workgroup_id"] + 4 * axis
        wg = b.load(b.gep(workgroup, [const_i64(wg_offset)], source_etype=I8), typ=I32, align=4)
        checks.append(b.icmp_unsigned("<", wg, const_i32(count)))
    checks.append(b.icmp_unsigned("==", field(layout.offsets["push_constant_count"], I32, 4),
                                  const_i32(len(info.push_constants))))
    checks.append(b.icmp_unsigned("==", field(layout.offsets["binding_count"], I32, 4),
                                  const_i32(len(info.binding_min_lengths))))
    lengths = field(layout.offsets["binding_lengths"], PTR, word)
    ok = b.and_(checks[0], checks[1])
    for c in checks[2:]:
        ok = b.and_(ok, c)
    # Read the lengths only once the count is known to be right.
    lengths_block = guard.append_basic_block("lengths")
    b.cbranch(ok, lengths_block, fail)
    b.position_at_end(lengths_block)
    ok = ir.Constant(ir.IntType(1), 1)
    for i, need in enumerate(info.binding_min_lengths):
        have = b.load(b.gep(lengths, [const_i64(i)], source_etype=size_type), typ=size_type, align=word)
        ok = b.and_(ok, b.icmp_unsigned(">=", have, ir.Constant(size_type, need)))
    call = guard.append_basic_block("call")
    b.cbranch(ok, call, fail)
    b.position_at_end(call)
    b.ret(b.call(body, [state, workgroup]))
    b.position_at_end(fail)
    b.ret(const_i32(GUARD_FAILED))
