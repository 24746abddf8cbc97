"""The Vulkan target end to end on this machine's Vulkan device (lavapipe here): small_cnn against
onnxruntime, every shader through spirv-val, the errors (a kind the backend lacks, no loader, no
device, a corrupt shader), and dump / --extract."""
import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper

import iree_py
from harness import model
from iree_py.errors import CompileError, IreeRuntimeError
from iree_py.module.dump import dump_module, executable_files
from iree_py.module.reader import read_module
from iree_py.module.writer import write_module

ROOT = Path(__file__).parents[2]
SMALL_CNN = ROOT / "examples" / "small_cnn.onnx"


@pytest.fixture(scope="module")
def small_cnn_module() -> bytes:
    return iree_py.compile(str(SMALL_CNN), target="vulkan")


def test_small_cnn_matches_onnxruntime(small_cnn_module: bytes):
    x = np.load(ROOT / "examples" / "small_cnn_input.npy")
    session = ort.InferenceSession(str(SMALL_CNN))
    expected = session.run(None, {session.get_inputs()[0].name: x})[0]
    module = iree_py.load(small_cnn_module, device="vulkan")
    for _ in range(2):  # a second call reuses the arena, pipelines and staging buffer
        np.testing.assert_allclose(module.main(x), expected, rtol=1e-5, atol=1e-6)


def test_inputs_that_outgrow_the_staging_buffer_in_one_dispatch():
    """Two caller-owned inputs of one dispatch that together exceed the staging buffer (64 KiB at
    first; the first input grows it to its own size): the room for both is made before either is
    bound, so making room for the second neither overwrites nor frees the first's copy."""
    m = model([helper.make_node("Sub", ["a", "b"], ["y"])], {"a": (4, 10000), "b": (10000,)}, ["y"])
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="vulkan"), device="vulkan")
    rng = np.random.default_rng(5)
    for _ in range(2):  # the second call finds the grown buffer
        a, b = rng.standard_normal((4, 10000)).astype(np.float32), rng.standard_normal(10000).astype(np.float32)
        a_before, expected = a.copy(), a - b
        np.testing.assert_array_equal(module.main(a, b), expected)
        np.testing.assert_array_equal(a, a_before)  # a staged copy goes back to its caller's buffer


def test_every_shader_passes_spirv_val(small_cnn_module: bytes, tmp_path: Path):
    files = executable_files(read_module(small_cnn_module))
    assert len(files) == 7 and all(name.endswith(".spv") for name in files)
    for name, code in files.items():
        (tmp_path / name).write_bytes(code)
        result = subprocess.run(["spirv-val", "--target-env", "vulkan1.2", str(tmp_path / name)],
                                capture_output=True, text=True)
        assert result.returncode == 0, f"{name}: {result.stderr}"


def test_dump_shows_spirv_executables_and_extract_writes_them(small_cnn_module: bytes, tmp_path: Path):
    text = dump_module(read_module(small_cnn_module))
    assert "executable #0 spirv spirv" in text and "entry #0 k0_conv at 0x0: 4 bindings" in text
    path = tmp_path / "m.vmfb"
    path.write_bytes(small_cnn_module)
    out = subprocess.run([sys.executable, "-m", "iree_py.cli.main", "dump", str(path), "--extract", str(tmp_path / "x")],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "x" / "k6_softmax.spv").read_bytes()[:4] == b"\x03\x02\x23\x07"


def test_a_kind_the_backend_lacks_is_a_compile_error_naming_node_and_kind():
    m = model([helper.make_node("RNN", ["x", "w", "r"], ["y"], name="rec", hidden_size=3)], {"x": (4, 1, 2)},
              ["y"], {"w": np.ones((1, 3, 2), np.float32), "r": np.ones((1, 3, 3), np.float32)})
    with pytest.raises(CompileError, match=r"node 'rec' \(op RNN\): target vulkan \(backend spirv\) "
                                           r"cannot build kernel kind 'rnn': the backend has no builder"):
        iree_py.compile(m.SerializeToString(), target="vulkan")


def test_a_dtype_the_backend_lacks_is_a_compile_error():
    m = model([helper.make_node("MatMul", ["a", "b"], ["y"], name="matmul")], {"a": (4, 4), "b": (4, 4)}, ["y"])
    for v in [*m.graph.input, *m.graph.output]:
        v.type.tensor_type.elem_type = 11  # double: no f64 matmul on this backend
    with pytest.raises(CompileError, match=r"node 'matmul' \(op MatMul\): target vulkan \(backend spirv\) cannot "
                                           r"build kernel kind 'matmul': dtype f64 \(it takes f32\)"):
        iree_py.compile(m.SerializeToString(), target="vulkan")


def test_a_spirv_module_on_the_cpu_device_says_to_use_vulkan(small_cnn_module: bytes):
    with pytest.raises(iree_py.IreePyError, match="compiled for Vulkan \\(spirv\\): run it with device='vulkan'"):
        iree_py.load(small_cnn_module)


def _load_in_subprocess(module: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    code = f"import iree_py; iree_py.load(open({str(module)!r}, 'rb').read(), device='vulkan')"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env})


def test_no_vulkan_loader_is_a_clear_error(small_cnn_module: bytes, tmp_path: Path):
    (tmp_path / "m.vmfb").write_bytes(small_cnn_module)
    result = _load_in_subprocess(tmp_path / "m.vmfb", {"IRP_VULKAN_LIBRARY": str(tmp_path / "libvulkan.so.1")})
    assert result.returncode != 0
    assert "vulkan: the Vulkan loader" in result.stderr and "could not be opened" in result.stderr


def test_a_shader_needing_a_feature_the_device_lacks_is_refused_at_load(tmp_path: Path):
    m = model([helper.make_node("Add", ["a", "b"], ["y"], name="add")], {"a": (4,), "b": (4,)}, ["y"])
    for v in [*m.graph.input, *m.graph.output]:
        v.type.tensor_type.elem_type = 7  # int64: the shader declares Int64
    (tmp_path / "m.vmfb").write_bytes(iree_py.compile(m.SerializeToString(), target="vulkan"))
    assert _load_in_subprocess(tmp_path / "m.vmfb", {}).returncode == 0
    disabled = {"IRP_VULKAN_DISABLE_FEATURES": "storageBuffer8BitAccess,shaderInt64"}
    result = _load_in_subprocess(tmp_path / "m.vmfb", disabled)
    assert result.returncode != 0
    assert ("needs the device feature shaderInt64 (SPIR-V capability Int64), which this device lacks "
            "(compile for a target with shader_int64 = false)") in result.stderr, result.stderr


def test_a_float64_shader_is_refused_at_load_without_shader_float64(tmp_path: Path):
    """The same refusal for Float64 (f64 cumsum declares it), the capability added after Int64."""
    axis = helper.make_tensor("axis", 7, (), [0])
    m = model([helper.make_node("Constant", [], ["axis"], value=axis),
               helper.make_node("CumSum", ["x", "axis"], ["y"], name="cumsum")], {"x": (8,)}, ["y"])
    for v in [*m.graph.input, *m.graph.output]:
        v.type.tensor_type.elem_type = 11  # double
    (tmp_path / "m.vmfb").write_bytes(iree_py.compile(m.SerializeToString(), target="vulkan"))
    assert _load_in_subprocess(tmp_path / "m.vmfb", {}).returncode == 0
    result = _load_in_subprocess(tmp_path / "m.vmfb", {"IRP_VULKAN_DISABLE_FEATURES": "shaderFloat64"})
    assert result.returncode != 0
    assert ("needs the device feature shaderFloat64 (SPIR-V capability Float64), which this device lacks "
            "(compile for a target with shader_float64 = false)") in result.stderr, result.stderr


def test_no_vulkan_device_is_a_clear_error(small_cnn_module: bytes, tmp_path: Path):
    (tmp_path / "m.vmfb").write_bytes(small_cnn_module)
    result = _load_in_subprocess(tmp_path / "m.vmfb", {"VK_ICD_FILENAMES": str(tmp_path / "none.json"),
                                                       "VK_DRIVER_FILES": str(tmp_path / "none.json")})
    assert result.returncode != 0
    assert "no Vulkan device" in result.stderr


def _with_code(data: bytes, change) -> bytes:
    module = read_module(data)
    exe = module.executables[0]
    module.executables[0] = dataclasses.replace(exe, code=change(bytearray(exe.code)))
    return write_module(module)  # (the writer computes the new code's CRC: only the shader check can refuse it)


@pytest.mark.parametrize("change,message", [
    (lambda code: code[:0] + b"\0\0\0\0" + code[4:], "entry point 'k0_conv' is no SPIR-V module \\(bad magic\\)"),
    (lambda code: code.replace(b"k2_conv\0", b"k2_xxxx\0", 1), "its shader for 'k2_conv' has no GLCompute entry point"),
    (lambda code: code[:4] + b"\0\0\x09\0" + code[8:], "is SPIR-V 9.0"),
])
def test_a_corrupt_shader_is_refused_at_load(small_cnn_module: bytes, change, message: str):
    with pytest.raises(IreeRuntimeError, match=message):
        iree_py.load(_with_code(small_cnn_module, change), device="vulkan")


def test_dynamic_dims_reach_the_shaders_as_push_constants():
    x = helper.make_tensor_value_info("x", 1, ["batch", 8])
    y = helper.make_tensor_value_info("y", 1, ["batch", 4])
    weight = helper.make_tensor("W", 1, [8, 4], np.arange(32, dtype=np.float32).tolist())
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
                               helper.make_node("Relu", ["h"], ["r"], name="relu"),
                               helper.make_node("Softmax", ["r"], ["y"], name="sm", axis=1)], "g", [x], [y], [weight])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    data = iree_py.compile(m, target="vulkan")
    assert "1 push constants" in dump_module(read_module(data))
    module, session = iree_py.load(data, device="vulkan"), ort.InferenceSession(m)
    for batch in (1, 3, 100):
        a = np.random.default_rng(batch).standard_normal((batch, 8)).astype(np.float32) * 0.1
        np.testing.assert_allclose(module.main(a), session.run(None, {"x": a})[0], rtol=1e-5, atol=1e-6)


def test_profile_reports_each_kernels_device_time_from_timestamps(small_cnn_module: bytes):
    """On Vulkan a dispatch call only records the kernel; the profile's device times come from
    timestamp queries around each dispatch: every kernel has one, and together they fit inside the
    calls' wall time. A CPU device reports none (its time is the runtime's clock)."""
    import time
    x = np.load(ROOT / "examples" / "small_cnn_input.npy")
    module = iree_py.load(small_cnn_module, device="vulkan")
    module.main(x)
    module.device.set_profiling(True)
    calls = 3
    start = time.perf_counter_ns()
    for _ in range(calls):
        module.main(x)
    wall_ns = time.perf_counter_ns() - start
    module.device.set_profiling(False)
    profile = [p for p in module.device.profile() if p.dispatches]
    assert {p.dispatches for p in profile} == {calls}, profile
    assert all(p.device_nanoseconds > 0 for p in profile), profile
    assert sum(p.device_nanoseconds for p in profile) <= wall_ns, (profile, wall_ns)
    cpu = iree_py.load(iree_py.compile(str(SMALL_CNN), target="host"))
    cpu.device.set_profiling(True)
    cpu.main(x)
    assert [p.device_nanoseconds for p in cpu.device.profile()] == [0] * len(cpu.device.profile())


def test_benchmark_profile_on_vulkan_prints_device_times(tmp_path, small_cnn_module: bytes):
    path = tmp_path / "cnn.vmfb"
    path.write_bytes(small_cnn_module)
    run = subprocess.run([sys.executable, "-m", "iree_py.cli.main", "benchmark", str(path), "--device=vulkan",
                          f"--input=@{ROOT / 'examples' / 'small_cnn_input.npy'}", "--profile", "--repeat", "3"],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert "device ms/run" in run.stdout and "timestamp queries" in run.stdout, run.stdout
    rows = [line.split() for line in run.stdout.splitlines() if re.match(r"k\d", line)]
    assert rows and all(float(row[2]) > 0 for row in rows), run.stdout
