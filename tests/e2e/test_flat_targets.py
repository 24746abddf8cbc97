"""Flat executables end to end (docs/microcontrollers.md), against onnxruntime (tolerance: the
harness's 1e-4 of the reference's largest magnitude):
- on this host: the x86_64 target with executable_format = "flat", run in-process (the hosted
  runtime copies the image to executable memory): proves the flat loader;
- cortex-m4 and cortex-m7 kernels for real: the armhf Linux runner built as thumbv7em
  (devices.user_mode_stand_in) under `qemu-arm -cpu max`, with device="qemu-user";
- riscv32: every op case compiles to an image that can be used in place (the boards run it);
- refusals: a code_offset out of range or without the Thumb bit is refused at load.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import onnx
import pytest

import iree_py
from harness import assert_close, random_inputs, run_onnxruntime, run_reference
from iree_py.targets import load_target
from iree_py.module.reader import read_module
from iree_py.module.writer import write_module
from test_ops import CASES

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HOST_FLAT = dataclasses.replace(load_target("x86_64"), name="x86_64-flat", executable_format="flat")
THUMB_TARGETS = ["cortex-m4", "cortex-m7"]
# cortex-m7 differs from cortex-m4 only in its FPU and scheduling: every third case is enough.
M7_CASES = sorted(CASES)[::3]


def _check(module_bytes: bytes, case: str, device: str) -> None:
    m = CASES[case]
    inputs = random_inputs(m)
    actual = iree_py.load(module_bytes, device=device).main.call(*inputs)
    assert_close(actual, run_reference(m, inputs))


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_flat_on_host(case: str):
    data = iree_py.compile(CASES[case].SerializeToString(), target=HOST_FLAT)
    assert all(e.format == "flat" for e in read_module(data, payloads=False).executables)
    _check(data, case, "local")


@pytest.mark.parametrize("case,target", [(c, "cortex-m4") for c in sorted(CASES)] + [(c, "cortex-m7") for c in M7_CASES])
def test_op_thumb_under_qemu_user(case: str, target: str):
    _check(iree_py.compile(CASES[case].SerializeToString(), target=target), case, "qemu-user")


@pytest.mark.parametrize("target", THUMB_TARGETS + ["host-flat"])
@pytest.mark.parametrize("name", ["small_cnn", "mlp"])
def test_bundled_examples_flat(name: str, target: str):
    x = np.load(EXAMPLES / f"{name}_input.npy")
    model = onnx.load(str(EXAMPLES / f"{name}.onnx"))
    module = iree_py.compile(EXAMPLES / f"{name}.onnx", target=HOST_FLAT if target == "host-flat" else target)
    actual = iree_py.load(module, device="local" if target == "host-flat" else "qemu-user").main.call(x)
    assert_close(actual, run_onnxruntime(model, [x]))


def test_riscv32_images_can_be_used_in_place():
    """Every op case: format flat, one image, offsets inside the code on 2-byte boundaries (RVC)."""
    for case in sorted(CASES):
        module = read_module(iree_py.compile(CASES[case].SerializeToString(), target="riscv32"))
        (exe,) = module.executables
        assert (exe.arch, exe.format) == ("riscv32", "flat"), case
        assert exe.code[:4] != b"\x7fELF", f"{case}: the flat image is an ELF file"
        offsets = [e.code_offset for e in exe.entry_points]
        assert all(0 <= o < len(exe.code) and o % 2 == 0 for o in offsets), f"{case}: offsets {offsets}"
        assert len(set(offsets)) == len(offsets), f"{case}: two entry points share offset"


def test_thumb_entry_points_have_the_thumb_bit():
    module = read_module(iree_py.compile(EXAMPLES / "small_cnn.onnx", target="cortex-m4"))
    offsets = [e.code_offset for e in module.executables[0].entry_points]
    assert offsets and all(o & 1 for o in offsets), offsets


def _with_offset(data: bytes, entry: int, offset: int) -> bytes:
    module = read_module(data)
    exe = module.executables[0]
    exe.entry_points[entry] = dataclasses.replace(exe.entry_points[entry], code_offset=offset)
    return write_module(module)


def test_code_offset_out_of_range_is_refused_at_load():
    data = iree_py.compile(EXAMPLES / "mlp.onnx", target=HOST_FLAT)
    size = len(read_module(data).executables[0].code)
    bad = _with_offset(data, 1, size + 16)
    with pytest.raises(iree_py.IreeRuntimeError, match=rf"entry point '\w+' at offset {size + 16:#x} is outside "
                                                          rf"its {size} bytes of code"):
        iree_py.load(bad)


def test_thumb_offset_without_the_thumb_bit_is_refused_at_load():
    data = iree_py.compile(EXAMPLES / "mlp.onnx", target="cortex-m4")
    first = read_module(data).executables[0].entry_points[0].code_offset
    bad = _with_offset(data, 0, first & ~1)
    module = iree_py.load(bad, device="qemu-user")
    with pytest.raises(iree_py.IreeRuntimeError, match=r"is not Thumb code \(bit 0 clear\)"):
        module.main(np.load(EXAMPLES / "mlp_input.npy"))
