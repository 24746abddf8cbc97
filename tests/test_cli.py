"""The README's commands, run as a user would: compile, run (local and qemu), dump."""
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "small_cnn.onnx"
EXAMPLE_INPUT = ROOT / "examples" / "small_cnn_input.npy"


def iree_py(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "iree_py.cli.main", *args], capture_output=True, text=True, cwd=ROOT)


def test_version_names_the_release_and_the_module_format():
    from iree_py import __version__
    format_version = tomllib.loads((ROOT / "flatbuffers" / "isa.toml").read_text())["format_version"]
    assert f"#define IRP_VM_FORMAT_VERSION {format_version}u" in (ROOT / "runtime_c/vm/isa_generated.h").read_text()
    r = iree_py("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"iree-py {__version__} (module format version {format_version})\n"


def reference() -> np.ndarray:
    s = ort.InferenceSession(str(EXAMPLE), providers=["CPUExecutionProvider"])
    return s.run(None, {"image": np.load(EXAMPLE_INPUT)})[0]


def test_compile_run_dump_on_host(tmp_path):
    module = tmp_path / "m.vmfb"
    r = iree_py("compile", str(EXAMPLE), "--target=host", "-o", str(module))
    assert r.returncode == 0, r.stderr
    out = tmp_path / "y.npy"
    r = iree_py("run", str(module), f"--input=@{EXAMPLE_INPUT}", f"--output=@{out}")
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(out), reference(), atol=1e-5)
    r = iree_py("dump", str(module))
    assert r.returncode == 0, r.stderr
    assert "func exported @main(%image: 1x3x32x32xf32) -> (%probs: 1x10xf32)" in r.stdout
    assert "memory plan: arena" in r.stdout and "dispatch" in r.stdout and "x86_64 elf" in r.stdout


@pytest.mark.parametrize("target,arch", [("arm64", "aarch64"), ("riscv64", "riscv64"), ("riscv64-rvv", "riscv64")])
def test_cross_target_under_qemu(tmp_path, target: str, arch: str):
    module = tmp_path / f"m_{target}.vmfb"
    assert iree_py("compile", str(EXAMPLE), f"--target={target}", "-o", str(module)).returncode == 0
    out = tmp_path / "y.npy"
    r = iree_py("run", str(module), "--device=qemu", f"--input=@{EXAMPLE_INPUT}", f"--output=@{out}")
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(out), reference(), atol=1e-5)
    assert f"{arch} elf" in iree_py("dump", str(module)).stdout


def test_inline_input_form(tmp_path):
    module = tmp_path / "m.vmfb"
    assert iree_py("compile", str(ROOT / "examples" / "mlp.onnx"), "-o", str(module)).returncode == 0
    r = iree_py("run", str(module), "--input=4x64xf32=0.5")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("y: 4x10xfloat32")
    r = iree_py("run", str(module), "--input=2x2xf32=1,2,3")
    assert r.returncode == 1 and "needs 4 values, got 3" in r.stderr


def test_errors_are_one_line_not_tracebacks(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"garbage")
    r = iree_py("compile", str(bad), "-o", str(tmp_path / "m.vmfb"))
    assert r.returncode == 1 and "not a valid ONNX model" in r.stderr and "Traceback" not in r.stderr
    r = iree_py("run", str(bad))
    assert r.returncode == 1 and "Traceback" not in r.stderr


def test_benchmark_profile_names_each_kernel(tmp_path):
    module = tmp_path / "m.vmfb"
    assert iree_py("compile", str(EXAMPLE), "-o", str(module)).returncode == 0
    r = iree_py("benchmark", str(module), f"--input=@{EXAMPLE_INPUT}", "--repeat=3", "--profile")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("main: 3 runs, median ")
    rows = {line.split()[0]: line.split() for line in r.stdout.splitlines()[3:]}
    # Every kernel ran once per run; fused ops are listed with the kernel they were fused into.
    assert rows["k0_conv"][1] == "1" and rows["k0_conv"][4:] == ["conv1,", "relu1"]
    assert rows["k3_conv"][4:] == ["depthwise,", "relu6,", "residual"]
    assert rows["all"][2] == "7"


def test_benchmark_compares_with_the_peer_on_the_source_model(tmp_path):
    import re
    module = tmp_path / "m.vmfb"
    assert iree_py("compile", str(EXAMPLE), "-o", str(module)).returncode == 0
    for compare in (str(EXAMPLE), f"onnxruntime:{EXAMPLE}"):
        r = iree_py("benchmark", str(module), f"--input=@{EXAMPLE_INPUT}", "--repeat=3", f"--compare={compare}")
        assert r.returncode == 0, r.stderr
        line = r.stdout.splitlines()[1]
        match = re.fullmatch(r"onnxruntime \(small_cnn.onnx\): median ([0-9.]+) ms; iree-py ([0-9.]+) ms \(best median "
                             r"of 4 rounds, \d+ threads? each\): ratio ([0-9.]+) \((faster|slower) than onnxruntime\)", line)
        assert match, line
        peer, ours, ratio = (float(match.group(i)) for i in (1, 2, 3))
        assert peer > 0 and ours > 0 and ratio == pytest.approx(ours / peer, rel=0.2, abs=0.02)
    r = iree_py("benchmark", str(module), f"--input=@{EXAMPLE_INPUT}", f"--compare={tmp_path / 'none.onnx'}")
    assert r.returncode == 1 and "none.onnx does not exist (the peer runs the source model)" in r.stderr
    r = iree_py("benchmark", str(module), f"--input=@{EXAMPLE_INPUT}", "--compare=model.bin")
    assert r.returncode == 1 and "expected onnxruntime:MODEL.onnx, litert:MODEL.tflite" in r.stderr


def test_run_prints_a_sequence_output_and_refuses_to_save_it(tmp_path):
    from onnx import TensorProto, helper, save
    seq = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    g = helper.make_graph([helper.make_node("SplitToSequence", ["x"], ["s"], axis=0, keepdims=0)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2])], [helper.make_value_info("s", seq)])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "split.onnx")
    module = tmp_path / "split.vmfb"
    assert iree_py("compile", str(tmp_path / "split.onnx"), "-o", str(module)).returncode == 0
    x = tmp_path / "x.npy"
    np.save(x, np.arange(6, dtype=np.float32).reshape(3, 2))
    r = iree_py("run", str(module), f"--input=@{x}")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:3] == ["s: sequence of 3", "[0] 2xfloat32", "[0. 1.]"]
    assert "[2] 2xfloat32\n[4. 5.]" in r.stdout
    r = iree_py("run", str(module), f"--input=@{x}", f"--output=@{tmp_path / 'y.npy'}")
    assert r.returncode == 1 and "output 's' is a sequence; --output writes one tensor per .npy file" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "y.npy").exists()
