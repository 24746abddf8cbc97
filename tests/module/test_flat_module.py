"""Flat executables in the module: format and code_offset round-trip through the writer and
reader (and flatc reads them with the schema); the dump shows both."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from iree_py.module.dump import dump_module
from iree_py.module.model import EntryPoint, Executable, Function, Module
from iree_py.module.reader import read_module
from iree_py.module.writer import write_module

ROOT = Path(__file__).resolve().parents[2]


def _module(fmt: str, offsets: tuple[int, int]) -> Module:
    entries = [EntryPoint("k0", 1, 0, [16], offsets[0]), EntryPoint("k1", 2, 1, [16, 32], offsets[1])]
    return Module("m", [Function("main", [], [], 1, 1, b"\x01\x00")], executables=[Executable("riscv32", entries, b"\x13\x00" * 8, fmt)])


def test_flat_format_and_offsets_round_trip():
    back = read_module(write_module(_module("flat", (0, 0xA))))
    exe = back.executables[0]
    assert exe.format == "flat" and [e.code_offset for e in exe.entry_points] == [0, 0xA]


def test_kernel_abi_round_trips_and_old_modules_read_as_0():
    exe = _module("flat", (0, 0xA)).executables[0]
    exe.kernel_abi = 2
    assert read_module(write_module(_module("flat", (0, 0xA)))).executables[0].kernel_abi == 0  # not written: 0
    module = _module("flat", (0, 0xA))
    module.executables[0] = exe
    assert read_module(write_module(module)).executables[0].kernel_abi == 2


def test_dump_shows_format_and_offsets():
    text = dump_module(read_module(write_module(_module("flat", (0x1, 0xB)))))
    assert "executable #0 riscv32 flat, 16 bytes of code" in text
    assert "  entry #0 k0 at 0x1: 1 bindings [16] bytes, 0 push constants" in text
    assert "  entry #1 k1 at 0xb: 2 bindings [16, 32] bytes, 1 push constants" in text


def test_elf_dump_shows_no_offsets():
    assert "at 0x" not in dump_module(_module("elf", (0, 0)))


def test_flatc_reads_format_and_code_offset_with_the_schema(tmp_path):
    (tmp_path / "m.vmfb").write_bytes(write_module(_module("flat", (0x1, 0xB))))
    subprocess.run(["flatc", "--json", "--strict-json", "--raw-binary", "-o", str(tmp_path),
                    str(ROOT / "flatbuffers/module.fbs"), "--", str(tmp_path / "m.vmfb")], check=True)
    exe = json.loads((tmp_path / "m.json").read_text())["executables"][0]
    assert exe["format"] == "flat"
    assert [e["code_offset"] for e in exe["entry_points"]] == [1, 0xB]
