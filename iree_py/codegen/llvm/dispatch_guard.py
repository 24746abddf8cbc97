"""Every entry point checks the dispatch it is given before its kernel touches memory.

Static kernels trust sizes baked into their code; ones with symbolic dims (codegen/llvm/dims.py)
trust the sizes they compute from their push constants. The
runtime checks bindings against the lengths the module declares, but the module is data: a
corrupted file could declare smaller lengths or another grid. So the exported entry point is a
guard that compares what it receives with what its kernel was built for — binding count and
lengths, push constant count, grid size and workgroup id — and returns STATUS_DISPATCH_REFUSED (1,
kernel_abi.py; the runtime reports the entry point as failed) instead of calling the kernel on anything else.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_abi import STATUS_DISPATCH_REFUSED, dispatch_state_layout, workgroup_state_layout
from iree_py.codegen.kernel_spec import KernelInfo
from iree_py.codegen.llvm.common import I8, I32, I64, KERNEL_FN_TYPE, const_i32, const_i64, load_binding_length
from iree_py.targets import Target

def body_name(name: str) -> str:
    """The kernel is built under this name; `name` itself becomes the guard."""
    return f"{name}_body"


def add_dispatch_guard(module: ir.Module, info: KernelInfo, target: Target) -> None:
    """Define entry point `info.name`: check the dispatch, then call kernel `body_name(info.name)`.

    Static kernels compare against constants. A dynamic kernel's push constants are the values of
    its symbols (codegen/llvm/dims.py): the guard reads them and computes the grid and the binding
    lengths its kernel will use from them (a negative computed length refuses the dispatch)."""
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
