"""`iree-py compile --emit-c`: the module as a C array and header, compiled into a program that
loads it with no file system (as firmware does) and matches onnxruntime."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort

from iree_py.module.emit_c import c_identifier
from iree_py.runtime.build import build_runtime

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "small_cnn.onnx"
EXAMPLE_INPUT = ROOT / "examples" / "small_cnn_input.npy"


def test_embedded_module_runs_and_matches_onnxruntime(tmp_path):
    c_file = tmp_path / "model.c"
    r = subprocess.run([sys.executable, "-m", "iree_py.cli.main", "compile", str(EXAMPLE), "--target=host",
                        "--emit-c", "-o", str(c_file)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    header = (tmp_path / "model.h").read_text()
    assert "extern const uint8_t model_module[" in header and "MODEL_MODULE_SIZE" in header
    runtime = build_runtime("host")
    program = tmp_path / "embedded"
    subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'runtime_c' / 'api'}", f"-I{tmp_path}",
                    str(ROOT / "tests" / "embed" / "embed_main.c"), str(c_file), str(runtime / "libiree_py_runtime.a"),
                    "-o", str(program)], check=True)
    x = np.load(EXAMPLE_INPUT)
    run = subprocess.run([str(program)], input=x.tobytes(), capture_output=True)
    assert run.returncode == 0, run.stderr.decode()
    expected = ort.InferenceSession(str(EXAMPLE), providers=["CPUExecutionProvider"]).run(None, {"image": x})[0]
    got = np.frombuffer(run.stdout, dtype=np.float32).reshape(expected.shape)
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_array_names_are_c_identifiers():
    assert c_identifier("small-cnn.v2") == "small_cnn_v2"
    assert c_identifier("3layers") == "m_3layers"
