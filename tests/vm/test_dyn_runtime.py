"""Dynamic shapes in the runtime (docs/dynamic_shapes.md §2, §4): signatures with -1 dims, dims passed
in and returned as i64 values, the pool (buffer_alloc / buffer_free), module messages and peak memory.
The module is hand-built (runtime_c/tests/dynamic_test_modules.py) and run by the host C runtime and,
for one case, by the aarch64 runner under qemu-user."""
from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import iree_py
from iree_py.errors import IreePyError, IreeRuntimeError
from iree_py.module.dump import dump_module
from iree_py.module.reader import read_module
from iree_py.module.writer import write_module
from iree_py.runtime import capi

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "runtime_c" / "tests"))
import dynamic_test_modules as dyn  # noqa: E402

ARENA, POOL = dyn.ARENA_SIZE, dyn.POOL_SIZE


@pytest.fixture(scope="module")
def module():
    return iree_py.load(write_module(dyn.dynamic_module()))


def floats(*shape: int, start: float = 0.0) -> np.ndarray:
    return (np.arange(int(np.prod(shape)), dtype=np.float32) + start).reshape(shape)


@pytest.mark.parametrize("n", [0, 1, 5, 21])
def test_copy_rows_at_several_sizes(module, n):
    x = floats(n, 3)
    y = module.copy_rows(x)
    assert y.shape == (n, 3) and y.dtype == np.float32
    np.testing.assert_array_equal(y, x)


def test_concat_returns_the_summed_dim(module):
    for n, m in [(3, 4), (0, 2), (7, 0), (0, 0), (16, 1)]:
        a, b = floats(n), floats(m, start=100)
        c = module.concat(a, b)
        assert c.shape == (n + m,)
        np.testing.assert_array_equal(c, np.concatenate([a, b]))


def test_freed_block_is_reused_and_peak_counts_the_pool(module):
    a, b = floats(10), floats(10, start=50)
    np.testing.assert_array_equal(module.same_n(a, b), a)
    assert module.peak_bytes == ARENA + 64   # 40 bytes round to one 64-byte block, freed and taken again
    module.copy_rows(floats(20, 3))          # 240 bytes: four blocks of 64
    assert module.peak_bytes == ARENA + 256
    module.copy_rows(floats(0, 3))           # an empty block takes no pool space
    assert module.peak_bytes == ARENA


def test_named_dims_must_agree(module):
    with pytest.raises(IreeRuntimeError, match=r"input 'b' dim 0 \(n\) is 9 but input 'a' dim 0 \(n\) is 7"):
        module.same_n(floats(7), floats(9))


def test_rank_and_static_dims_are_still_checked(module):
    with pytest.raises(IreePyError, match=r"input 0 'x' \[n, 3\] f32 was given shape \[4, 2\]"):
        module.copy_rows(floats(4, 2))
    with pytest.raises(IreePyError, match=r"input 0 'x' \[n, 3\] f32 was given shape \[12\]"):
        module.copy_rows(floats(12))


def test_c_api_checks_the_signature(module):
    """The C checks themselves, with the Python pre-checks bypassed."""
    device, fn = module.device, module.copy_rows.signature
    with pytest.raises(IreeRuntimeError, match=r"input 0 'x' has shape \[4, 2\] but the signature expects \[-1, 3\]"):
        device.call(fn, [floats(4, 2)])
    with pytest.raises(IreeRuntimeError, match=r"input 0 'x' has shape \[12\] but the signature expects \[-1, 3\]"):
        device.call(fn, [floats(12)])
    plan = device._plan(fn)
    x = floats(4, 3)
    view = plan.inputs[0]
    view.dtype, view.rank, view.data, view.length = fn.inputs[0].dtype.module_code, 2, x.ctypes.data, 40
    view.shape[0], view.shape[1] = 4, 3
    status = device.lib.irp_call(device.module, plan.index, plan.inputs, 1, plan.outputs, 1)
    message = device.lib.irp_runtime_error_message(device.runtime).decode()
    assert status == 1 and "input 0 'x' is 40 bytes but its shape needs 48" in message


def test_pool_exhaustion_names_the_bytes(module):
    with pytest.raises(IreeRuntimeError, match=rf"buffer_alloc of 1200 bytes does not fit the {POOL}-byte pool "
                                               rf"\({POOL} bytes free"):
        module.copy_rows(floats(100, 3))
    np.testing.assert_array_equal(module.copy_rows(floats(2, 3)), floats(2, 3))  # the next call starts empty


def test_bad_frees_are_errors(module):
    with pytest.raises(IreeRuntimeError, match="buffer_free of ref register 1, a pool block already freed"):
        module.double_free(floats(3))
    with pytest.raises(IreeRuntimeError, match="buffer_free of ref register 0, which is not a block buffer_alloc"):
        module.free_input(floats(3))


def test_checks_report_module_messages(module):
    np.testing.assert_array_equal(module.checked(floats(8)), floats(8))
    with pytest.raises(IreeRuntimeError, match=r"model check failed: input 'x' dim 0 \(n\) must be at most 8"):
        module.checked(floats(9))
    with pytest.raises(IreeRuntimeError, match="model check failed: the model refused: a fail with a message"):
        module.fail_message()


def test_returned_dims_are_checked(module):
    with pytest.raises(IreeRuntimeError, match=r"output 0 'y' dim 0 \(n\) came back as -1"):
        module.negative_dim(floats(3))
    with pytest.raises(IreeRuntimeError, match=r"output 0 'y' is 12 bytes but its shape \[4\] needs 16"):
        module.wrong_dim(floats(3))


def test_signature_reflection(module):
    lib, device = capi.library(), module.device
    index = device._plan(module.concat.signature).index
    assert lib.irp_function_input_dim_name(device.module, index, 1, 0) == b"m"
    assert lib.irp_function_output_dim_name(device.module, index, 0, 0) == b"n + m"
    assert lib.irp_function_input_dim_name(device.module, index, 1, 1) is None
    view, name = capi.BufferView(), capi.ctypes.c_char_p()
    assert lib.irp_function_input(device.module, index, 0, capi.ctypes.byref(view), capi.ctypes.byref(name)) == 0
    assert view.rank == 1 and view.shape[0] == -1 and view.length == 0
    assert repr(module.concat) == "concat(a: [n] f32, b: [m] f32) -> (c: [n + m] f32)"


def test_module_round_trips_and_dumps():
    data = write_module(dyn.dynamic_module())
    back = read_module(data)
    assert back.messages == dyn.MESSAGES and back.memory_plan.pool_size == POOL
    assert back.functions[1].inputs[1].dim_names == ("m",) and back.functions[1].i64_input_count == 2
    text = dump_module(back)
    assert "func exported @concat(%a: {n}xf32, %b: {m}xf32) -> (%c: {n + m}xf32)" in text
    assert "func exported @copy_rows(%x: {n}x3xf32) -> (%y: {n}x3xf32)" in text
    assert f"memory plan: arena {ARENA} bytes, pool {POOL} bytes" in text
    assert "0x10000: input 'x' dim 0 (n) must be at most 8" in text


def test_i64_count_disagreeing_with_the_signature_fails_to_load():
    bad = dyn.dynamic_module()
    bad.functions[0] = replace(bad.functions[0], i64_input_count=0)
    with pytest.raises(IreeRuntimeError, match="copy_rows: exported with 0 i64 inputs and 1 i64 outputs but its "
                                               "signature has 1 dynamic input dims"):
        iree_py.load(write_module(bad))


def test_dynamic_outputs_under_qemu_aarch64():
    module = iree_py.load(write_module(dyn.dynamic_module()), device="qemu-aarch64")
    a, b = floats(5), floats(2, start=10)
    c = module.concat(a, b)
    assert c.shape == (7,)
    np.testing.assert_array_equal(c, np.concatenate([a, b]))
    assert module.peak_bytes == ARENA + 64
    with pytest.raises(IreeRuntimeError, match=r"input 'b' dim 0 \(n\) is 3 but input 'a' dim 0 \(n\) is 2"):
        module.same_n(floats(2), floats(3))


def test_cli_run_prints_real_shapes_and_stats(tmp_path):
    path = tmp_path / "dynamic.vmfb"
    path.write_bytes(write_module(dyn.dynamic_module()))
    r = subprocess.run([sys.executable, "-m", "iree_py.cli.main", "run", str(path), "--function=concat",
                        "--input=3xf32=1,2,3", "--input=2xf32=4,5", "--stats"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("c: 5xfloat32\n[1. 2. 3. 4. 5.]")
    assert f"peak memory: {ARENA + 64} bytes" in r.stdout
