"""Write the .vmfb modules the C runtime tests load (runtime_c/tests/runtime_tests.c).

    python3 runtime_c/tests/make_test_modules.py --kernels=K.so --arch=x86_64 --out=DIR

Uses the project's module writer and bytecode encoder. Besides the valid modules it writes one
module per verifier rule, each broken in exactly that way, and lists them in DIR/bad_modules.txt
as `file<TAB>status<TAB>message substring` for the C test to check.
"""
from __future__ import annotations

import argparse
import struct
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from iree_py.codegen.kernel_abi import KERNEL_ABI_VERSION  # noqa: E402
from iree_py.ir.types import DType  # noqa: E402
from iree_py.module.model import (Constant, EntryPoint, Executable, Function, MemoryPlan,  # noqa: E402
                                  Module, TensorSig)
from iree_py.module.writer import write_module  # noqa: E402
from iree_py.vm.encoder import BytecodeBuilder, Label  # noqa: E402
from dynamic_test_modules import dynamic_functions, dynamic_module  # noqa: E402

N = 100  # elements of the add test
F32 = DType.f32
INVALID_MODULE, OUT_OF_MEMORY, UNSUPPORTED = 2, 3, 5
OTHER_ARCH = {"x86_64": "aarch64", "aarch64": "x86_64", "riscv64": "aarch64"}
ELF_MACHINE = {"x86_64": 62, "aarch64": 183, "riscv64": 243}
UNKNOWN_RELOCATION = 0x7ffe  # a relocation type no architecture defines


def entry_points() -> list[EntryPoint]:
    return [EntryPoint("add_f32", 3, 1, [16, 16, 16]),
            EntryPoint("scale_f32", 2, 2, [16, 16]),
            EntryPoint("fail_if_negative", 1, 0, [4])]


def add_function() -> Function:
    """main(a[100], b[100]) -> a + b, with the element count computed by a loop (25 x 4)."""
    code = BytecodeBuilder()
    loop, done = code.label("loop"), code.label("done")
    code.emit("buffer_arena", 2, 0, 4 * N)
    code.emit("const_i64", 0, 0)          # i0 = 0
    code.emit("const_i64", 3, 25)         # i3 = 25
    code.emit("const_i64", 4, N)          # i4 = 100
    code.bind(loop)
    code.emit("add_i64", 0, 0, 3)         # i0 += 25
    code.emit("cmp_lt_i64", 5, 0, 4)      # i5 = i0 < 100
    code.emit("cond_br", 5, loop, done)
    code.bind(done)
    code.emit("const_i64", 1, 2)          # 2 workgroups of 64
    code.emit("const_i64", 2, 1)
    code.emit("dispatch", 0, 0, 1, 2, 2, [0], [0, 1, 2])
    code.emit("ret", [2])
    sig = [TensorSig("a", F32, (N,)), TensorSig("b", F32, (N,))]
    return Function("main", sig, [TensorSig("sum", F32, (N,))], 6, 3, code.finish())


def scaled_function() -> Function:
    """scaled(x[4]) -> ((x + c) * 2.5, copy of it) with c = [1, 2, 3, 4] a constant."""
    code = BytecodeBuilder()
    code.emit("buffer_constant", 1, 0)
    code.emit("buffer_arena", 2, 400, 16)
    code.emit("buffer_arena", 3, 416, 16)
    code.emit("buffer_arena", 4, 432, 16)
    code.emit("const_i64", 0, 4)
    code.emit("const_i64", 1, 1)
    code.emit("const_i64", 2, struct.unpack("<I", struct.pack("<f", 2.5))[0])
    code.emit("dispatch", 0, 0, 1, 1, 1, [0], [0, 1, 2])
    code.emit("dispatch", 0, 1, 1, 1, 1, [0, 2], [2, 3])
    code.emit("buffer_copy", 4, 3)
    code.emit("ret", [3, 4])
    outputs = [TensorSig("y", F32, (4,)), TensorSig("y_copy", F32, (2, 2))]
    return Function("scaled", [TensorSig("x", F32, (4,))], outputs, 3, 5, code.finish())


def simple_function(name: str, emit, inputs=(), outputs=(), i64=4, refs=4) -> Function:
    code = BytecodeBuilder()
    emit(code)
    return Function(name, list(inputs), list(outputs), i64, refs, code.finish())


def scale_into(code: BytecodeBuilder, out: int) -> tuple:
    """scale_f32 of x (ref 0) by 2 into ref `out`: its 4 elements, one workgroup."""
    return (code.emit("const_i64", 0, 4), code.emit("const_i64", 1, 1),
            code.emit("const_i64", 2, struct.unpack("<I", struct.pack("<f", 2.0))[0]),
            code.emit("dispatch", 0, 1, 1, 1, 1, [0, 2], [0, out]))


def runtime_failure_functions() -> list[Function]:
    x = TensorSig("x", F32, (4,))
    out = TensorSig("out", F32, (4,))
    return [
        simple_function("fails", lambda c: c.emit("fail", 42)),
        simple_function("kernel_fails", lambda c: (c.emit("const_i64", 0, 1),
                                                   c.emit("dispatch", 0, 2, 0, 0, 0, [], [0]),
                                                   c.emit("ret", [])), inputs=[x]),
        simple_function("short_binding", lambda c: (c.emit("buffer_arena", 1, 0, 8),
                                                    c.emit("const_i64", 0, 1),
                                                    c.emit("dispatch", 0, 0, 0, 0, 0, [0], [0, 1, 0]),
                                                    c.emit("ret", [])), inputs=[x]),
        simple_function("unset_ref", lambda c: (c.emit("const_i64", 0, 1),
                                                c.emit("dispatch", 0, 2, 0, 0, 0, [], [3]),
                                                c.emit("ret", []))),
        simple_function("copy_mismatch", lambda c: (c.emit("buffer_arena", 1, 0, 8),
                                                    c.emit("buffer_copy", 1, 0),
                                                    c.emit("ret", [1])), inputs=[x], outputs=[out]),
        simple_function("copy_to_constant", lambda c: (c.emit("buffer_constant", 1, 0),
                                                       c.emit("buffer_copy", 1, 0),
                                                       c.emit("ret", [])), inputs=[x]),
        # a 0-workgroup grid runs no kernel (fail_if_negative would fail), but bindings are still checked
        simple_function("empty_grid", lambda c: (c.emit("const_i64", 0, 0),
                                                 c.emit("dispatch", 0, 2, 0, 0, 0, [], [0]),
                                                 c.emit("ret", [])), inputs=[x]),
        simple_function("empty_grid_short_binding", lambda c: (c.emit("buffer_arena", 1, 0, 8),
                                                               c.emit("const_i64", 0, 0),
                                                               c.emit("dispatch", 0, 0, 0, 0, 0, [0], [0, 1, 0]),
                                                               c.emit("ret", [])), inputs=[x]),
        # scale_f32 told to write its result into the constant, or into the caller's input x
        simple_function("kernel_writes_constant", lambda c: (c.emit("buffer_constant", 1, 0),
                                                             *scale_into(c, 1), c.emit("ret", [])), inputs=[x]),
        simple_function("kernel_writes_input", lambda c: (*scale_into(c, 0), c.emit("ret", [])), inputs=[x]),
        simple_function("copy_input", lambda c: (c.emit("buffer_arena", 1, 0, 16),
                                                 c.emit("buffer_copy", 1, 0),
                                                 c.emit("ret", [1])), inputs=[x], outputs=[out]),
    ]


def fib_function(own_index: int) -> Function:
    """fib(n: i64) -> i64, recursive and not exported: n < 2 ? n : fib(n - 1) + fib(n - 2), for a
    module where it is function number own_index (tests/vm/test_control_flow.py uses it too)."""
    code = BytecodeBuilder()
    base, recurse = code.label("base"), code.label("recurse")
    code.emit("const_i64", 1, 2)
    code.emit("cmp_lt_i64", 2, 0, 1)
    code.emit("cond_br", 2, base, recurse)
    code.bind(base)
    code.emit("ret_i64", [0], [])
    code.bind(recurse)
    code.emit("const_i64", 1, 1)
    code.emit("sub_i64", 3, 0, 1)
    code.emit("call", own_index, [3], [], [4], [])
    code.emit("sub_i64", 3, 3, 1)
    code.emit("call", own_index, [3], [], [5], [])
    code.emit("add_i64", 6, 4, 5)
    code.emit("ret_i64", [6], [])
    return Function("fib", [], [], 7, 0, code.finish(), exported=False, i64_input_count=1, i64_output_count=1)


def call_functions() -> list[Function]:
    """Exported callers of fib (the last function of good_module, at FIB_INDEX)."""
    def call_fib(n: int, expected: int):
        def emit(c: BytecodeBuilder) -> None:
            c.emit("const_i64", 0, n)
            c.emit("call", FIB_INDEX, [0], [], [1], [])
            c.emit("const_i64", 2, expected)
            c.emit("cmp_eq_i64", 3, 1, 2)
            c.emit("check", 3, 99)             # reached with a wrong value only if fib is wrong
            c.emit("ret", [])
        return emit
    return [
        simple_function("fib_20", call_fib(20, 6765), i64=4),
        simple_function("too_deep", call_fib(40, 0), i64=4),
        simple_function("div_zero", lambda c: (c.emit("const_i64", 0, 7), c.emit("const_i64", 1, 0),
                                               c.emit("div_i64", 2, 0, 1), c.emit("ret", []))),
        fib_function(FIB_INDEX),
    ]


FIB_INDEX = 2 + len(runtime_failure_functions()) + 3


def good_module(arch: str, kernels: bytes) -> Module:
    constant = Constant("c", struct.pack("<4f", 1, 2, 3, 4))
    functions = [add_function(), scaled_function(), *runtime_failure_functions(), *call_functions()]
    assert functions[FIB_INDEX].name == "fib"
    return Module("test", functions, [constant], [Executable(arch, entry_points(), kernels, "elf", KERNEL_ABI_VERSION)],
                  MemoryPlan(448))


def small_module(arch: str, kernels: bytes) -> Module:
    """The corruption test's module: one function, one constant, the kernel library."""
    module = good_module(arch, kernels)
    return replace(module, functions=[module.functions[1]])


def with_function(module: Module, function: Function) -> Module:
    return replace(module, functions=[function])


def bytecode_case(module: Module, emit, i64=4, refs=4, inputs=(), outputs=()) -> Module:
    return with_function(module, simple_function("f", emit, inputs, outputs, i64, refs))


def bad_bytecode(module: Module, raw: bytes) -> Module:
    return with_function(module, Function("f", [], [], 4, 4, raw))


def with_entry_points(module: Module, entries: list[EntryPoint]) -> Module:
    return replace(module, executables=[replace(module.executables[0], entry_points=entries)])


def with_code(module: Module, code: bytes) -> Module:
    return replace(module, executables=[replace(module.executables[0], code=code)])


def patched(data: bytes, offset: int, value: bytes) -> bytes:
    return data[:offset] + value + data[offset + len(value):]


def with_relocation_type(kernels: bytes, relocation_type: int) -> bytes:
    """`kernels` with the type of its first dynamic (SHT_RELA) relocation replaced."""
    shoff, = struct.unpack_from("<Q", kernels, 40)
    shentsize, shnum = struct.unpack_from("<HH", kernels, 58)
    for i in range(shnum):
        header = shoff + i * shentsize
        sh_type, = struct.unpack_from("<I", kernels, header + 4)
        sh_offset, sh_size = struct.unpack_from("<QQ", kernels, header + 24)
        if sh_type == 4 and sh_size > 0:  # SHT_RELA
            return patched(kernels, sh_offset + 8, struct.pack("<I", relocation_type))
    raise ValueError("the test kernel library has no RELA relocations to patch")


RELATIVE_TYPE = {"x86_64": 8, "aarch64": 1027, "riscv64": 3}  # R_*_RELATIVE
ABS64_TYPE = {"x86_64": 1, "aarch64": 257, "riscv64": 2}       # R_X86_64_64, R_AARCH64_ABS64, R_RISCV_64


def with_symbolic_relocations(kernels: bytes, arch: str) -> bytes:
    """`kernels` with every RELATIVE relocation rewritten as the 64-bit symbolic one against the
    exported query function, addend adjusted: the loaded image is the same, reached the other way."""
    shoff, = struct.unpack_from("<Q", kernels, 40)
    shentsize, shnum = struct.unpack_from("<HH", kernels, 58)
    sections = [struct.unpack_from("<IIQQQQII", kernels, shoff + i * shentsize) for i in range(shnum)]
    dynsym = next(s for s in sections if s[1] == 11)  # SHT_DYNSYM
    strtab_offset = sections[dynsym[6]][4]             # its sh_link: the string table
    index, value = next((i, struct.unpack_from("<Q", kernels, dynsym[4] + 24 * i + 8)[0])
                        for i in range(dynsym[5] // 24)
                        if kernels[strtab_offset + struct.unpack_from("<I", kernels, dynsym[4] + 24 * i)[0]:]
                        .startswith(b"irp_kernel_library_query\0"))
    out = bytearray(kernels)
    rela = next(s for s in sections if s[1] == 4)  # SHT_RELA
    for at in range(rela[4], rela[4] + rela[5], 24):
        info, addend = struct.unpack_from("<Qq", out, at + 8)
        if info & 0xFFFFFFFF == RELATIVE_TYPE[arch]:
            struct.pack_into("<Qq", out, at + 8, (index << 32) | ABS64_TYPE[arch], addend - value)
    return bytes(out)


def call_chain(length: int) -> list[Function]:
    """c0 calls c1 calls ... c{length}: length + 1 functions nested (c0 exported)."""
    functions = []
    for i in range(length + 1):
        code = BytecodeBuilder()
        if i < length:
            code.emit("call", i + 1, [], [], [], [])
        code.emit("ret", [])
        functions.append(Function(f"c{i}", [], [], 0, 0, code.finish(), exported=i == 0))
    return functions


def huge_registers_module(arch: str, kernels: bytes) -> Module:
    """good_module with a recursive function of 65535 ref registers: 32 register windows of them
    (about 50 MB) that the C test's memory limit refuses (runtime_tests.c, test_memory_limit)."""
    module = good_module(arch, kernels)
    functions = list(module.functions)
    functions[FIB_INDEX] = replace(functions[FIB_INDEX], ref_register_count=65535)
    return replace(module, functions=functions)


def bad_modules(arch: str, kernels: bytes, undefined_kernels: bytes | None) -> list[tuple[str, object, int, str]]:
    base = small_module(arch, kernels)
    x = TensorSig("x", F32, (4,))
    eps = entry_points()
    cases: list[tuple[str, object, int, str]] = [
        ("version", replace(base, format_version=2), INVALID_MODULE, "format version is 2"),
        ("unknown_opcode", bad_bytecode(base, b"\x7f\x01\x00"), INVALID_MODULE, "unknown opcode 0x7f"),
        ("i64_register", bytecode_case(base, lambda c: (c.emit("const_i64", 5, 1), c.emit("ret", []))),
         INVALID_MODULE, "const_i64 uses i64 register 5 but the function has 4"),
        ("ref_register", bytecode_case(base, lambda c: (c.emit("buffer_constant", 4, 0), c.emit("ret", []))),
         INVALID_MODULE, "buffer_constant uses ref register 4 but the function has 4"),
        ("list_register", bytecode_case(base, lambda c: c.emit("ret", [9]), outputs=[x]),
         INVALID_MODULE, "ret uses ref register 9"),
        ("branch_mid", bytecode_case(base, lambda c: (c.emit("nop"), c.emit("br", Label("x", 3)))),
         INVALID_MODULE, "br target 3 is not the start of an instruction"),
        ("branch_past_end", bytecode_case(base, lambda c: c.emit("br", Label("x", 1000))),
         INVALID_MODULE, "br target 1000 is not the start"),
        ("cond_branch", bytecode_case(base, lambda c: (c.emit("cond_br", 0, Label("a", 0), Label("b", 2)))),
         INVALID_MODULE, "cond_br target 2 is not the start"),
        ("no_terminator", bytecode_case(base, lambda c: c.emit("const_i64", 0, 1)),
         INVALID_MODULE, "the last instruction is not a terminator"),
        ("empty_bytecode", bad_bytecode(base, b""), INVALID_MODULE, "the bytecode is empty"),
        ("truncated_operand", bad_bytecode(base, b"\x10\x00"), INVALID_MODULE, "const_i64 operand 0 runs past the end"),
        ("truncated_list", bad_bytecode(base, b"\x01\x05\x00\x00"), INVALID_MODULE, "ret register list of 5 runs past the end"),
        ("arena_past_plan", bytecode_case(base, lambda c: (c.emit("buffer_arena", 0, 400, 49), c.emit("ret", []))),
         INVALID_MODULE, "buffer_arena [400, +49) is outside the 448-byte arena"),
        ("arena_negative", bytecode_case(base, lambda c: (c.emit("buffer_arena", 0, -8, 8), c.emit("ret", []))),
         INVALID_MODULE, "buffer_arena [-8, +8) is outside"),
        ("arena_overflow", bytecode_case(base, lambda c: (c.emit("buffer_arena", 0, 8, (1 << 63) - 1), c.emit("ret", []))),
         INVALID_MODULE, "is outside the 448-byte arena"),
        ("constant_index", bytecode_case(base, lambda c: (c.emit("buffer_constant", 0, 3), c.emit("ret", []))),
         INVALID_MODULE, "buffer_constant 3 but the module has 1 constants"),
        ("dispatch_executable", bytecode_case(base, lambda c: (c.emit("dispatch", 1, 0, 0, 0, 0, [0], [0, 1, 2]), c.emit("ret", []))),
         INVALID_MODULE, "dispatch of executable 1 but the module has 1"),
        ("dispatch_entry", bytecode_case(base, lambda c: (c.emit("dispatch", 0, 5, 0, 0, 0, [0], [0, 1, 2]), c.emit("ret", []))),
         INVALID_MODULE, "dispatch of entry point 5 but executable 0 has 3"),
        ("dispatch_bindings", bytecode_case(base, lambda c: (c.emit("dispatch", 0, 0, 0, 0, 0, [0], [0, 1]), c.emit("ret", []))),
         INVALID_MODULE, "dispatch of 'add_f32' passes 2 bindings, the entry point takes 3"),
        ("dispatch_push_constants", bytecode_case(base, lambda c: (c.emit("dispatch", 0, 0, 0, 0, 0, [], [0, 1, 2]), c.emit("ret", []))),
         INVALID_MODULE, "dispatch of 'add_f32' passes 0 push constants, the entry point takes 1"),
        ("ret_count", bytecode_case(base, lambda c: c.emit("ret", []), outputs=[x]),
         INVALID_MODULE, "ret returns 0 values but the function has 1 outputs"),
        ("call_callee", bytecode_case(base, lambda c: (c.emit("call", 7, [], [], [], []), c.emit("ret", []))),
         INVALID_MODULE, "f: bytecode at 0: call of function 7 but the module has 1"),
        ("call_i64_args", bytecode_case(base, lambda c: (c.emit("call", 0, [1], [], [], []), c.emit("ret", []))),
         INVALID_MODULE, "f: bytecode at 0: call of f passes 1 i64 arguments, expected 0"),
        ("call_results", bytecode_case(base, lambda c: (c.emit("call", 0, [], [], [], [2]), c.emit("ret", []))),
         INVALID_MODULE, "f: bytecode at 0: call of f passes 1 buffer results, expected 0"),
        ("ret_i64_count", with_function(base, Function("f", [], [], 2, 0, b"\x06\x00\x00", exported=False,
                                                       i64_output_count=1)),
         INVALID_MODULE, "f: bytecode at 0: ret_i64 passes 0 i64 results, expected 1"),
        ("exported_i64", with_function(base, Function("f", [], [], 2, 0, b"\x06\x01\x00\x00\x00",
                                                      i64_input_count=1, i64_output_count=1)),
         INVALID_MODULE, "f: exported with 1 i64 inputs and 1 i64 outputs but its signature has 0 dynamic input "
                         "dims and 0 dynamic output dims"),
        ("dynamic_i64_count", with_function(base, replace(dynamic_functions()[0], i64_input_count=0)),
         INVALID_MODULE, "copy_rows: exported with 0 i64 inputs and 1 i64 outputs but its signature has 1 dynamic "
                         "input dims and 1 dynamic output dims"),
        ("dynamic_out_count", with_function(base, replace(dynamic_functions()[1], i64_output_count=2)),
         INVALID_MODULE, "concat: exported with 2 i64 inputs and 2 i64 outputs but its signature has 2 dynamic "
                         "input dims and 1 dynamic output dims"),
        ("static_dim_named", bytecode_case(base, lambda c: c.emit("ret", []),
                                           inputs=[TensorSig("d", F32, (2, 3), dim_names=("", "k"))]),
         INVALID_MODULE, "input 0 'd' dim 1 is static (3) but named 'k'"),
        ("inputs_exceed_refs", bytecode_case(base, lambda c: c.emit("ret", []), inputs=[x] * 5),
         INVALID_MODULE, "5 inputs do not fit its 4 ref registers"),
        ("rank", bytecode_case(base, lambda c: c.emit("ret", []), inputs=[TensorSig("big", F32, (1,) * 9)]),
         INVALID_MODULE, "input 0 'big' has rank 9, more than the maximum 8"),
        ("negative_dim", bytecode_case(base, lambda c: c.emit("ret", []), inputs=[TensorSig("d", F32, (2, -2))]),
         INVALID_MODULE, "input 0 'd' has negative dim -2 at axis 1 (only -1, dynamic, is allowed)"),
        ("min_lengths", with_entry_points(base, [EntryPoint("add_f32", 3, 1, [16]), *eps[1:]]),
         INVALID_MODULE, "entry point 'add_f32' has 1 binding_min_lengths for 3 bindings"),
        ("no_arch", replace(base, executables=[replace(base.executables[0], arch=OTHER_ARCH[arch])]),
         UNSUPPORTED, f"module 'test' has executables for [{OTHER_ARCH[arch]}] but this runtime runs {arch}"),
        ("elf_not_elf", with_code(base, b"not an elf at all, just bytes" * 4), INVALID_MODULE,
         f"kernel library for {arch} is not an ELF file"),
        ("elf_truncated", with_code(base, kernels[:200]), INVALID_MODULE, "run past the"),
        ("elf_machine", with_code(base, patched(kernels, 18, struct.pack("<H", ELF_MACHINE[OTHER_ARCH[arch]]))),
         INVALID_MODULE, f"has ELF machine {ELF_MACHINE[OTHER_ARCH[arch]]}, expected {ELF_MACHINE[arch]}"),
        ("elf_relocation_type", with_code(base, with_relocation_type(kernels, UNKNOWN_RELOCATION)), UNSUPPORTED,
         f"has relocation type {UNKNOWN_RELOCATION} at"),
        ("elf_type", with_code(base, patched(kernels, 16, struct.pack("<H", 2))), INVALID_MODULE,
         "has ELF type 2, not a shared object"),
        ("elf_entry", with_code(base, patched(kernels, 24, struct.pack("<Q", struct.unpack_from("<Q", kernels, 24)[0] + 1))),
         INVALID_MODULE, "is not the exported irp_kernel_library_query"),
        ("elf_entry_count", with_entry_points(base, eps[:2]), INVALID_MODULE,
         "has 3 entry points but the module declares 2"),
        ("elf_entry_name", with_entry_points(base, [eps[0], replace(eps[1], name="scale"), eps[2]]),
         INVALID_MODULE, "entry 1 is not named 'scale' as the module says"),
    ]
    # Resource bounds at load: more memory than the machine has, a call chain deeper than the runtime
    # allows (IRP_MAX_CALL_DEPTH, 32; only recursion may go deeper and fail at run time).
    cases += [
        ("arena_too_big", replace(base, memory_plan=MemoryPlan(1 << 60)), OUT_OF_MEMORY,
         "out of memory: module 'test' needs 1152921504606847"),
        ("pool_too_big", replace(base, memory_plan=MemoryPlan(448, pool_size=1 << 58)), OUT_OF_MEMORY,
         "(arena 448, pool 288230376151711744, registers 1 x 3 i64 + 5 ref)"),
        ("deep_calls", replace(base, functions=call_chain(33)), UNSUPPORTED,
         "module 'test': more than 32 nested calls"),
    ]
    if undefined_kernels is not None:
        cases.append(("elf_undefined_symbol", with_code(base, undefined_kernels), UNSUPPORTED,
                      "refers to undefined symbol 'external_helper'"))
    return cases


# Instruction alignment of flat entry points, as runtime_c/vm/module.c checks it (x86_64: none).
FLAT_ENTRY_ALIGNMENT = {"aarch64": 4, "riscv64": 2, "riscv32": 2}


def write_flat_modules(out: Path, arch: str, kernels_object: bytes) -> list[str]:
    """flat_good.vmfb (good_module with the kernels as a flat image) and the flat modules the
    runtime must refuse; returns their bad_modules.txt lines."""
    from iree_py.codegen.llvm.flat_image import link_flat_image
    names = [e.name for e in entry_points()]
    image = link_flat_image([kernels_object], names, None, "the flat test kernels")
    eps = [replace(e, code_offset=o) for e, o in zip(entry_points(), image.entry_offsets)]
    good = good_module(arch, image.code)
    good = replace(good, executables=[Executable(arch, eps, image.code, "flat", KERNEL_ABI_VERSION)])
    (out / "flat_good.vmfb").write_bytes(write_module(good))
    base = small_module(arch, image.code)
    base = replace(base, executables=[Executable(arch, eps, image.code, "flat", KERNEL_ABI_VERSION)])
    size = len(image.code)
    cases = [
        ("flat_offset_at_end", with_entry_points(base, [eps[0], replace(eps[1], code_offset=size), eps[2]]),
         INVALID_MODULE, f"entry point 'scale_f32' at offset {size:#x} is outside its {size} bytes of code"),
        ("flat_offset_huge", with_entry_points(base, [eps[0], eps[1], replace(eps[2], code_offset=0xFFFFFFF0)]),
         INVALID_MODULE, "entry point 'fail_if_negative' at offset 0xfffffff0 is outside"),
        ("flat_no_code", with_code(base, b""), INVALID_MODULE, "is outside its 0 bytes of code"),
        # A flat image has no library query to ask: the module's kernel_abi says what its code reads.
        ("flat_old_abi", replace(base, executables=[replace(base.executables[0], kernel_abi=0)]), UNSUPPORTED,
         f"was built for kernel ABI 1; this runtime runs ABI {KERNEL_ABI_VERSION}"),
        ("flat_newer_abi", replace(base, executables=[replace(base.executables[0], kernel_abi=KERNEL_ABI_VERSION + 1)]),
         UNSUPPORTED, f"was built for kernel ABI {KERNEL_ABI_VERSION + 1}"),
    ]
    alignment = FLAT_ENTRY_ALIGNMENT.get(arch, 1)
    if alignment > 1:
        odd = eps[0].code_offset + 1
        cases.append(("flat_misaligned", with_entry_points(base, [replace(eps[0], code_offset=odd), *eps[1:]]),
                      INVALID_MODULE, f"entry point 'add_f32' at offset {odd:#x} is not {alignment}-byte aligned"))
    lines = []
    for name, module, status, message in cases:
        (out / f"bad_{name}.vmfb").write_bytes(write_module(module))
        lines.append(f"bad_{name}.vmfb\t{status}\t{message}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kernels", required=True, help="the test kernel library (.so)")
    parser.add_argument("--undefined-kernels", help="a kernel library that imports a symbol")
    parser.add_argument("--flat-kernels", help="the test kernels as an object file, for the flat modules")
    parser.add_argument("--arch", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    kernels = Path(args.kernels).read_bytes()
    undefined = Path(args.undefined_kernels).read_bytes() if args.undefined_kernels else None
    (out / "good.vmfb").write_bytes(write_module(good_module(args.arch, kernels)))
    (out / "dynamic.vmfb").write_bytes(write_module(dynamic_module()))
    symbolic = with_symbolic_relocations(kernels, args.arch)
    (out / "symbolic_good.vmfb").write_bytes(write_module(good_module(args.arch, symbolic)))
    (out / "huge_registers.vmfb").write_bytes(write_module(huge_registers_module(args.arch, kernels)))
    small = write_module(small_module(args.arch, kernels))
    (out / "small.vmfb").write_bytes(small)
    # Where the kernel code lies in small.vmfb: the corruption test treats its bytes specially.
    at = small.find(kernels)
    assert at > 0 and small.find(kernels, at + 1) < 0, "kernel library not found once in small.vmfb"
    (out / "small.code").write_text(f"{at} {len(kernels)}\n")
    bad_identifier = bytearray(small)
    bad_identifier[4:8] = b"NOPE"
    (out / "identifier.vmfb").write_bytes(bytes(bad_identifier))
    lines = ["identifier.vmfb\t2\tfile identifier is not 'IRPY'"]
    for name, module, status, message in bad_modules(args.arch, kernels, undefined):
        (out / f"bad_{name}.vmfb").write_bytes(write_module(module))
        lines.append(f"bad_{name}.vmfb\t{status}\t{message}")
    if args.flat_kernels:
        lines += write_flat_modules(out, args.arch, Path(args.flat_kernels).read_bytes())
    (out / "bad_modules.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
