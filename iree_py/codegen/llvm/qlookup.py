"""The "qlookup" kernel: y[i] = table[x[i] & 0xFF] over i8/u8 tensors (QLookup, iree_py/ir/ops_qlookup.py).

The 256-entry table is a read-only global of bytes; the loop loads a byte, zero-extends it to an
index, loads the table entry and stores it. Integer only: fine for flat images on any target.
"""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import I8, I64, begin_kernel, const_i64, element_ptr, for_range, static_shape
from iree_py.codegen.llvm.requant import QRANGE, constant_table

CHUNK = 4096    # elements per workgroup


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"qlookup kernel {spec.name}: expects 1 input and 1 output")
    if spec.inputs[0].dtype not in QRANGE or spec.outputs[0].dtype not in QRANGE:
        raise ValueError(f"qlookup kernel {spec.name}: wants i8/u8 in and out, got {spec.inputs[0]} -> {spec.outputs[0]}")
    shape = static_shape(spec.inputs[0], f"qlookup kernel {spec.name} input")
    if static_shape(spec.outputs[0], f"qlookup kernel {spec.name} output") != shape:
        raise ValueError(f"qlookup kernel {spec.name}: output {spec.outputs[0]} must have the input's shape")
    table_values = [(int(v) & 0xFF) - ((int(v) & 0x80) << 1) for v in spec.attrs["table"]]   # as signed bytes
    if len(table_values) != 256:
        raise ValueError(f"qlookup kernel {spec.name}: table has {len(table_values)} entries, expected 256")
    count = spec.inputs[0].num_elements
    groups = max(1, -(-count // CHUNK))

    table = constant_table(module, f"{spec.name}_table", table_values, I8)
    kb = begin_kernel(module, spec.name, target)
    b = kb.builder
    src, dst = kb.binding(0), kb.binding(1)
    start = b.mul(kb.workgroup_id_index(0), const_i64(CHUNK))
    stop = b.add(start, const_i64(CHUNK))
    stop = b.select(b.icmp_unsigned("<", stop, const_i64(count)), stop, const_i64(count))
    with for_range(b, start, stop, name="i") as i:
        byte = b.load(element_ptr(b, src, i, I8), typ=I8, align=1)
        entry = b.gep(table, [const_i64(0), b.zext(byte, I64)], source_etype=table.value_type)
        b.store(b.load(entry, typ=I8, align=1), element_ptr(b, dst, i, I8), align=1)
    kb.finish()
    return KernelInfo(spec.name, (groups, 1, 1), (), (spec.inputs[0].num_bytes, spec.outputs[0].num_bytes))
