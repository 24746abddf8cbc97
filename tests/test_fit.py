"""The compile-time fit check: a model too big for the board is refused with the numbers."""
import pytest

from iree_py.compiler import CompileOptions, compile_model
from iree_py.errors import CompileError
from iree_py.fit import parse_size
from tests.test_cli import EXAMPLE, iree_py


@pytest.mark.parametrize("text, expected", [("256K", 262144), ("1M", 1 << 20), ("4096", 4096), ("0x400", 1024),
                                            ("64KiB", 65536), ("2m", 2 << 20)])
def test_sizes(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "12Q", "K", "-5"])
def test_bad_sizes_are_refused(text):
    with pytest.raises(CompileError, match="is not a size"):
        parse_size(text)


def test_too_little_ram_names_the_shortfall():
    with pytest.raises(CompileError) as e:
        compile_model(EXAMPLE, CompileOptions(target="host", ram=64 * 1024))
    message = str(e.value)
    assert "does not fit target host" in message and "RAM: needs" in message and "--ram is 65,536" in message
    needed = int(message.split("RAM: needs ")[1].split(" bytes")[0].replace(",", ""))
    over = int(message.split(": ")[-1].split(" bytes over")[0].replace(",", ""))
    assert needed - 65536 == over > 0
    assert "flash" not in message


def test_enough_memory_compiles():
    assert compile_model(EXAMPLE, CompileOptions(target="host", ram=1 << 20, flash=1 << 20))


def test_cli_reports_flash_shortfall(tmp_path):
    r = iree_py("compile", str(EXAMPLE), "--target=host", "--flash=16K", "-o", str(tmp_path / "m.vmfb"))
    assert r.returncode == 1
    assert "flash: the module needs" in r.stderr and "--flash is 16,384" in r.stderr and "bytes over" in r.stderr
    assert not (tmp_path / "m.vmfb").exists()


def test_modules_with_callees_reserve_a_register_window_per_call_level():
    from iree_py.fit import module_state_bytes
    from iree_py.module.model import Function, Module
    main = Function("main", [], [], 10, 4, b"", exported=True)
    helper = Function("helper", [], [], 10, 4, b"", exported=False)
    flat, with_callee = Module("m", [main]), Module("m", [main, helper])
    one_window = 10 * 8 + 4 * 24
    assert module_state_bytes(with_callee) - module_state_bytes(flat) >= 31 * one_window
