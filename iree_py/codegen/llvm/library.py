"""The kernel library export (kernel_abi.h): a table of entry names and function pointers, and
`irp_kernel_library_query(abi_version)` returning it (NULL when the version differs)."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_abi import KERNEL_ABI_VERSION, LIBRARY_QUERY_SYMBOL
from iree_py.codegen.llvm.common import I8, I32, PTR, const_i32


def _cstring(module: ir.Module, name: str, text: str) -> ir.GlobalVariable:
    data = bytearray(text.encode("utf-8") + b"\0")
    ty = ir.ArrayType(I8, len(data))
    g = ir.GlobalVariable(module, ty, name=name)
    g.initializer = ir.Constant(ty, data)
    g.global_constant = True
    g.linkage = "private"
    g.unnamed_addr = True
    return g


def _constant_global(module: ir.Module, name: str, value: ir.Constant) -> ir.GlobalVariable:
    g = ir.GlobalVariable(module, value.type, name=name)
    g.initializer = value
    g.global_constant = True
    g.linkage = "internal"
    return g


def add_library_export(module: ir.Module, entry_names: list[str], functions: list[ir.Function]) -> None:
    """Add the library table: entry `entry_names[i]` is `functions[i]` (declared or defined in `module`)."""
    names = [_cstring(module, f"irp_entry_name.{i}", name) for i, name in enumerate(entry_names)]
    fns = list(functions)
    array_ty = ir.ArrayType(PTR, len(entry_names))
    names_table = _constant_global(module, "irp_entry_names", ir.Constant(array_ty, names))
    entries_table = _constant_global(module, "irp_entries", ir.Constant(array_ty, fns))
    library_ty = ir.LiteralStructType([I32, I32, PTR, PTR])
    library = _constant_global(module, "irp_library", ir.Constant(library_ty, [
        const_i32(KERNEL_ABI_VERSION), const_i32(len(entry_names)), names_table, entries_table]))

    query = ir.Function(module, ir.FunctionType(PTR, [I32]), name=LIBRARY_QUERY_SYMBOL)
    query.attributes.add("nounwind")
    b = ir.IRBuilder(query.append_basic_block("entry"))
    matches = b.icmp_unsigned("==", query.args[0], const_i32(KERNEL_ABI_VERSION))
    b.ret(b.select(matches, library, ir.Constant(PTR, None)))
