"""The SPIR-V writer and builder: the checked-in table agrees with spirv-headers' grammar, the
binary encoding, and a shader of every control-flow shape passes spirv-val."""
import importlib.util
import struct
import subprocess
from pathlib import Path

import pytest

from iree_py.codegen.spirv import spirv_table
from iree_py.codegen.spirv.builder import KernelBuilder
from iree_py.codegen.spirv.writer import SpirvModule, encode_instruction, encode_string
from iree_py.ir.symbols import Expr, call

ROOT = Path(__file__).parents[2]
GRAMMAR = Path("/usr/include/spirv/unified1")


def test_table_is_what_the_generator_writes_from_the_grammar():
    spec = importlib.util.spec_from_file_location("gen_spirv_table", ROOT / "scripts" / "gen_spirv_table.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    checked_in = (ROOT / "iree_py" / "codegen" / "spirv" / "spirv_table.py").read_text()
    assert generator.generate(GRAMMAR) == checked_in, "stale: run scripts/gen_spirv_table.py > iree_py/codegen/spirv/spirv_table.py"


def test_strings_are_nul_terminated_and_padded_to_words():
    assert encode_string("abc") == [int.from_bytes(b"abc\0", "little")]
    assert encode_string("abcd") == [int.from_bytes(b"abcd", "little"), 0]


def test_an_instruction_is_its_word_count_and_opcode_then_operands():
    words = encode_instruction("OpTypeInt", (7, 32, 1))
    assert words == [(4 << 16) | spirv_table.OPCODES["OpTypeInt"], 7, 32, 1]


def test_types_and_constants_are_made_once():
    m = SpirvModule()
    assert m.type_int(32, True) == m.type_int(32, True) != m.type_int(32, False)
    i32 = m.type_int(32, True)
    assert m.constant(i32, 5) == m.constant(i32, 5) != m.constant(i32, 6)


def test_header_has_magic_version_and_bound():
    m = SpirvModule()
    m.type_void()
    magic, version, _, bound, schema = struct.unpack("<5I", m.to_bytes()[:20])
    assert (magic, version, bound, schema) == (0x07230203, 0x00010300, m.bound, 0)


def test_loops_ifs_push_constants_and_symbols_pass_spirv_val(tmp_path: Path):
    n = Expr.of("n")
    b = KernelBuilder("every_shape", ["f32", "i32", "f32"], [False, False, True], ("m", "n"), 64)
    with b.for_each(call("ceildiv", n * 3, 2) + Expr.of("m")) as i:
        acc = b.variable("f32", 0.0)
        with b.loop(0, b.dim(n)) as j:
            with b.if_(b.logical_and(j > 1, j < b.dim(call("min", n, 7)))):
                acc.set(acc.get() + b.ext("Exp", b.load(0, i)) * b.to_f32(b.load(1, j)))
        b.store(2, i, b.select(acc.get() > 0.0, acc.get(), -acc.get()))
    path = tmp_path / "every_shape.spv"
    path.write_bytes(b.finish())
    result = subprocess.run(["spirv-val", "--target-env", "vulkan1.2", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
