"""Why integer products are checked against the specification, not onnxruntime (harness.run_reference).

onnxruntime's x86 u8 x s8 kernels on CPUs without VNNI (AVX2, and AVX-512 before VNNI) add adjacent
pairs of products in 16-bit saturating arithmetic (vpmaddubsw). In a MatMulInteger whose activations
are all 255 and weights all 127, every pair is 2 * 255 * 127 = 64770 and saturates to 32767 however
the kernel pairs them: the specification's answer is DEPTH * 255 * 127 per element, such a CPU's
DEPTH / 2 * 32767. On a CPU with VNNI onnxruntime is exact, so which answer it gives depends on the
machine; the test shows the saturated one on an emulated AVX2 CPU (qemu-x86_64 -cpu Haswell-v4),
and that the spec evaluator and iree-py give the exact one on any CPU."""
from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from harness import run_iree, run_reference, run_spec

DEPTH = 16
EXACT = DEPTH * 255 * 127                 # 518160
SATURATED = DEPTH // 2 * np.iinfo(np.int16).max   # 262136
AVX2_CPU = "Haswell-v4"                   # AVX2 + FMA, no AVX-512, no VNNI

ACTIVATIONS = np.full((4, DEPTH), 255, np.uint8)


def saturating_model() -> onnx.ModelProto:
    weights = numpy_helper.from_array(np.full((DEPTH, 3), 127, np.int8), "b")
    graph = helper.make_graph([helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "pairs_saturate",
                              [helper.make_tensor_value_info("a", TensorProto.UINT8, list(ACTIVATIONS.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, None)], [weights])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)])
    m.ir_version = 7
    return m


ONNXRUNTIME_ON_AVX2 = """
import sys
import numpy as np, onnx, onnxruntime as ort
m = onnx.load_from_string(sys.stdin.buffer.read())
y = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
    None, {"a": np.full((4, %d), 255, np.uint8)})[0]
print(sorted(set(y.reshape(-1).tolist())))
""" % DEPTH


def test_onnxruntime_saturates_on_a_cpu_without_vnni():
    qemu = shutil.which("qemu-x86_64")
    assert qemu, "qemu-x86_64 is missing: scripts/setup.sh installs it (Debian package qemu-user)"
    result = subprocess.run([qemu, "-cpu", AVX2_CPU, sys.executable, "-c", ONNXRUNTIME_ON_AVX2],
                            input=saturating_model().SerializeToString(), capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert result.stdout.decode().strip() == f"[{SATURATED}]"


def test_the_specification_and_iree_py_are_exact():
    m = saturating_model()
    assert np.all(run_spec(m, [ACTIVATIONS])[0] == EXACT)
    assert np.all(run_reference(m, [ACTIVATIONS])[0] == EXACT)


@pytest.mark.parametrize("target", ["host", "x86_64"])
def test_iree_py_is_exact_on_every_x86_target(target: str):
    (y,) = run_iree(saturating_model(), [ACTIVATIONS], target)
    assert y.dtype == np.int32 and np.all(y == EXACT)
