"""Bad input gets a clear error naming what was wrong, from the compiler and from the C runtime."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import iree_py
from harness import model
from iree_py.module.reader import read_module
from iree_py.runtime.devices import LocalDevice


def two_input_module() -> bytes:
    m = model([helper.make_node("Add", ["a", "b"], ["y"], name="add")], {"a": (2, 3), "b": (2, 3)}, ["y"])
    return iree_py.compile(m.SerializeToString())


def test_unsupported_op_names_node_op_and_opset():
    m = model([helper.make_node("ImageDecoder", ["x"], ["y"], name="decode_1")], {"x": (16,)}, ["y"], opset=20)
    with pytest.raises(iree_py.CompileError) as e:
        iree_py.compile(m.SerializeToString())
    assert "decode_1" in str(e.value) and "ImageDecoder" in str(e.value) and "20" in str(e.value)


def test_non_onnx_file_is_rejected(tmp_path):
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"this is not a protobuf \xff\xfe")
    with pytest.raises(iree_py.CompileError, match="not a valid ONNX model"):
        iree_py.compile(str(bad))


def test_missing_file_is_rejected(tmp_path):
    with pytest.raises((iree_py.CompileError, FileNotFoundError)):
        iree_py.compile(str(tmp_path / "missing.onnx"))


def test_wrong_input_count_shape_dtype_in_python():
    m = iree_py.load(two_input_module())
    a = np.zeros((2, 3), np.float32)
    with pytest.raises(iree_py.IreePyError, match=r"expected 2 inputs .*'a' \[2, 3\] f32.*got 1"):
        m.main(a)
    with pytest.raises(iree_py.IreePyError, match=r"input 1 'b' \[2, 3\] f32 was given shape \[3, 2\]"):
        m.main(a, np.zeros((3, 2), np.float32))
    with pytest.raises(iree_py.IreePyError, match=r"input 0 'a' .* dtype float64"):
        m.main(np.zeros((2, 3)), a)


def test_c_runtime_checks_inputs_itself():
    """The C API must not trust its caller: skip the Python checks and hand it wrong inputs."""
    data = two_input_module()
    fn = read_module(data).functions[0]
    device = LocalDevice(data)
    a = np.zeros((2, 3), np.float32)
    with pytest.raises(iree_py.IreeRuntimeError, match="expected 2 inputs"):
        device.call(fn, [a])
    with pytest.raises(iree_py.IreeRuntimeError, match=r"input 1 'b'.*\[3, 2\].*\[2, 3\]"):
        device.call(fn, [a, np.zeros((3, 2), np.float32)])
    assert device.call(fn, [a, a + 1])[0].tolist() == (a + 1).tolist()


def test_arm64_module_on_host_device_says_use_qemu():
    m = model([helper.make_node("Relu", ["x"], ["y"])], {"x": (2,)}, ["y"])
    with pytest.raises(iree_py.IreePyError, match="qemu"):
        iree_py.load(iree_py.compile(m.SerializeToString(), target="arm64"))


def test_corrupt_module_raises():
    data = bytearray(two_input_module())
    data[4:8] = b"XXXX"
    with pytest.raises(iree_py.IreePyError):
        iree_py.load(bytes(data))


def test_flipped_kernel_byte_is_refused_at_load():
    data = two_input_module()
    code = read_module(data).executables[0].code
    at = data.find(code) + len(code) // 2
    corrupt = data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1:]
    with pytest.raises(iree_py.IreeRuntimeError, match=r"executable for x86_64 is corrupt: its code has CRC-32"):
        iree_py.load(corrupt)


def test_rank0_input_keeps_rank0():
    m = model([helper.make_node("Add", ["a", "b"], ["y"])], {"a": (), "b": ()}, ["y"])
    module = iree_py.load(iree_py.compile(m.SerializeToString()))
    assert module.main(np.float32(2), np.float32(3)) == np.float32(5)
