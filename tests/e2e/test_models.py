"""Whole models against onnxruntime: the bundled examples (on this host, and on arm64, riscv64 and
riscv64-rvv under qemu-user), and real architectures from the onnx package's test data (on this
host and on arm64 under qemu-aarch64)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from harness import RVV_TARGET, TARGETS, assert_close, run_iree, run_onnxruntime
from real_models import data_input, light_model

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("target", [*TARGETS, RVV_TARGET])
@pytest.mark.parametrize("name", ["small_cnn", "mlp"])
def test_bundled_examples(name: str, target: str):
    m = onnx.load(str(EXAMPLES / f"{name}.onnx"))
    x = np.load(EXAMPLES / f"{name}_input.npy")
    assert_close(run_iree(m, [x], target), run_onnxruntime(m, [x]))


# Real architectures whose ops are all in the spine. arm64 runs the cheaper ones under qemu.
HOST_MODELS = ["squeezenet", "resnet50", "bvlc_alexnet", "zfnet512", "vgg19", "inception_v1", "inception_v2",
               "densenet121", "shufflenet"]
ARM64_MODELS = ["squeezenet", "inception_v1"]


@pytest.mark.parametrize("target,name", [("host", n) for n in HOST_MODELS] + [("arm64", n) for n in ARM64_MODELS])
def test_real_architecture(name: str, target: str):
    m = light_model(name)
    x = data_input(m)
    assert_close(run_iree(m, [x], target), run_onnxruntime(m, [x]))
