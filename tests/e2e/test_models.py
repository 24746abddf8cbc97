"""Whole models against onnxruntime: the bundled examples (on this host, and on arm64, riscv64 and
riscv64-rvv under qemu-user), and real architectures from the onnx package's test data (on this
host and on arm64 under qemu-aarch64; the logits are compared beside the saturated softmax)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from harness import RVV_TARGET, TARGETS, assert_close, run_iree, run_onnxruntime
from real_models import data_input, light_model, with_logits

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("target", [*TARGETS, RVV_TARGET])
@pytest.mark.parametrize("name", ["small_cnn", "mlp"])
def test_bundled_examples(name: str, target: str):
    m = onnx.load(str(EXAMPLES / f"{name}.onnx"))
    x = np.load(EXAMPLES / f"{name}_input.npy")
    assert_close(run_iree(m, [x], target), run_onnxruntime(m, [x]))


# Real architectures from the onnx package's test data, on this host and under qemu-aarch64. The real
# pretrained models (tests/real_models) cover what these prove and more, so the default run keeps a
# few that differ in structure (concat-heavy, residual, grouped convs, inception blocks) and the
# rest run with --heavy (tests/conftest.py); VGG-19 takes three minutes under qemu.
REAL_MODELS = ["squeezenet", "resnet50", "bvlc_alexnet", "zfnet512", "vgg19", "inception_v1", "inception_v2",
               "densenet121", "shufflenet"]
IN_DEFAULT_RUN = {"host": {"squeezenet", "resnet50", "inception_v1", "shufflenet"},
                  "arm64": {"squeezenet", "shufflenet"}}


def _real_cases() -> list:
    return [pytest.param(target, n, id=f"{target}-{n}",
                         marks=[] if n in IN_DEFAULT_RUN[target] else [pytest.mark.heavy])
            for target in ("host", "arm64") for n in REAL_MODELS]


@pytest.mark.parametrize("target,name", _real_cases())
def test_real_architecture(name: str, target: str):
    m = with_logits(light_model(name))
    x = data_input(m)
    assert_close(run_iree(m, [x], target), run_onnxruntime(m, [x]))
