"""The Python writer and flatbuffers/module.fbs agree: flatc reads our bytes back to the same data."""
import json
import subprocess
from pathlib import Path

import pytest

from iree_py.errors import ModuleFormatError
from iree_py.ir.types import DType
from iree_py.module import model as m
from iree_py.module.reader import constant_offsets, read_module
from iree_py.module.writer import write_module
from iree_py.vm.encoder import BytecodeBuilder

ROOT = Path(__file__).resolve().parents[2]


def sample_module() -> m.Module:
    code = BytecodeBuilder()
    code.emit("const_i64", 0, 1)
    code.emit("buffer_arena", 1, 0, 24)
    code.emit("buffer_constant", 2, 1)
    code.emit("dispatch", 0, 0, 0, 0, 0, [], [0, 2, 1])
    code.emit("ret", [1])
    return m.Module(
        name="sample",
        functions=[m.Function("main", [m.TensorSig("x", DType.f32, (2, 3))], [m.TensorSig("y", DType.f32, (2, 3))],
                              1, 3, code.finish())],
        constants=[m.Constant("a", bytes(range(7))), m.Constant("b", b"\x01" * 24)],
        executables=[m.Executable("x86_64", [m.EntryPoint("k0_add", 3, 0, [24, 24, 24])], b"\x7fELF" + bytes(100))],
        memory_plan=m.MemoryPlan(64, [m.PlannedBuffer("y", 0, 64)]),
        debug_info=[m.EntryPointDebug(0, 0, ["add_node", "relu_node"], ["Add", "Relu"])],
    )


def test_round_trip():
    module = sample_module()
    assert read_module(write_module(module)) == module


def test_constants_are_64_byte_aligned():
    data = write_module(sample_module())
    assert [off % 64 for off in constant_offsets(data)] == [0, 0]


def test_flatc_reads_the_module_with_the_schema(tmp_path):
    data = write_module(sample_module())
    (tmp_path / "m.vmfb").write_bytes(data)
    subprocess.run(["flatc", "--json", "--strict-json", "--raw-binary", "-o", str(tmp_path),
                    str(ROOT / "flatbuffers/module.fbs"), "--", str(tmp_path / "m.vmfb")], check=True)
    parsed = json.loads((tmp_path / "m.json").read_text())
    assert parsed["format_version"] == 1
    fn = parsed["functions"][0]
    assert fn["name"] == "main" and fn["exported"] is True
    assert fn["inputs"][0]["name"] == "x" and fn["inputs"][0]["shape"] == [2, 3]
    assert fn["i64_register_count"] == 1 and fn["ref_register_count"] == 3
    assert bytes(parsed["constants"][0]["data"]) == bytes(range(7))
    assert parsed["executables"][0]["entry_points"][0] == {"name": "k0_add", "binding_count": 3,
                                                           "binding_min_lengths": [24, 24, 24]}
    assert parsed["memory_plan"]["arena_size"] == 64
    assert parsed["debug_info"]["entry_points"][0]["source_nodes"] == ["add_node", "relu_node"]
    assert parsed["debug_info"]["entry_points"][0]["source_ops"] == ["Add", "Relu"]


def test_debug_info_without_ops_stores_none_and_reads_back_empty() -> None:
    """source_ops is the last field of EntryPointDebug: without ops (a module written before the
    field existed reads the same way) nothing is stored, and it reads back as [] (the runtime then
    names the nodes without their ops)."""
    module = sample_module()
    module.debug_info = [m.EntryPointDebug(0, 0, ["add_node"])]
    data = write_module(module)
    assert read_module(data).debug_info == [m.EntryPointDebug(0, 0, ["add_node"], [])]
    assert b"Add" not in data


@pytest.mark.parametrize("data, message", [(b"", "too short"), (b"\0" * 16, "file identifier")])
def test_reader_rejects_non_modules(data, message):
    with pytest.raises(ModuleFormatError, match=message):
        read_module(data)
