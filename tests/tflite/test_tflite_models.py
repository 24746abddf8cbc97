"""Small whole models: a MobileNet-like network (host and arm64 under qemu), signatures, the CLI."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from tflite_harness import assert_close, check, complete_shapes, random_inputs, run_tflite
from tflite_writer import TfliteModel

import iree_py
from iree_py.frontends.tflite import import_tflite
from iree_py.frontends.tflite.schema import (
    AddOptions, Conv2DOptions, DepthwiseConv2DOptions, FullyConnectedOptions, Pool2DOptions, SoftmaxOptions)
from iree_py.passes.pipeline import run_pipeline
from test_tflite_ops import options, rand

RELU6, SAME, VALID = 3, 0, 1


def mobilenet_like() -> TfliteModel:
    """conv s2 + relu6 -> depthwise + relu6 -> 1x1 conv -> residual add -> depthwise s2 -> 1x1 conv
    + relu6 -> average pool -> reshape -> fully connected -> softmax, with a signature."""
    m = TfliteModel(signature="serving_default")
    x = m.input("image", (1, 16, 16, 3))

    def conv(src: int, out_c: int, in_c: int, k: int, stride: int, act: int, name: str) -> int:
        y = m.tensor(name)
        opts = options(Conv2DOptions, padding=SAME, strideH=stride, strideW=stride, fusedActivationFunction=act)
        m.op("CONV_2D", [src, m.const(f"{name}_w", rand(out_c, k, k, in_c) * 0.3), m.const(f"{name}_b", rand(out_c))],
             [y], opts)
        return y

    def depthwise(src: int, c: int, stride: int, name: str) -> int:
        y = m.tensor(name)
        opts = options(DepthwiseConv2DOptions, padding=SAME, strideH=stride, strideW=stride, depthMultiplier=1,
                       fusedActivationFunction=RELU6)
        m.op("DEPTHWISE_CONV_2D", [src, m.const(f"{name}_w", rand(1, 3, 3, c) * 0.5), m.const(f"{name}_b", rand(c))],
             [y], opts)
        return y

    stem = conv(x, 8, 3, 3, 2, RELU6, "stem")
    block = conv(depthwise(stem, 8, 1, "dw1"), 8, 8, 1, 1, 0, "pw1")
    added = m.tensor("residual")
    m.op("ADD", [stem, block], [added], options(AddOptions))
    features = conv(depthwise(added, 8, 2, "dw2"), 16, 8, 1, 1, RELU6, "pw2")
    pooled, flat, logits, probs = m.tensor("pooled"), m.tensor("flat"), m.tensor("logits"), m.tensor("probabilities")
    m.op("AVERAGE_POOL_2D", [features], [pooled],
         options(Pool2DOptions, padding=VALID, filterHeight=4, filterWidth=4, strideH=4, strideW=4))
    m.op("RESHAPE", [pooled, m.const("flat_shape", np.array([1, 16], np.int32))], [flat])
    m.op("FULLY_CONNECTED", [flat, m.const("fc_w", rand(10, 16)), m.const("fc_b", rand(10))], [logits],
         options(FullyConnectedOptions))
    m.op("SOFTMAX", [logits], [probs], options(SoftmaxOptions, beta=1.0))
    m.output(probs)
    return m


def test_mobilenet_like_host():
    check(mobilenet_like(), "host")


def test_mobilenet_like_layout_transposes_cancel():
    """Between the convs, depthwise convs and the residual add no NHWC<->NCHW transposes remain."""
    graph = run_pipeline(import_tflite(complete_shapes(mobilenet_like())), print_ir_after=None, out=print)
    transposes = [n for n in graph.nodes if n.op == "Transpose"]
    assert len(transposes) <= 2, [str(n) for n in transposes]   # the input, and the pooled features


def test_signature_keeps_tflite_tensor_names():
    data = complete_shapes(mobilenet_like())
    module = iree_py.load(iree_py.compile(data))
    assert module.main.input_names == ["image"]
    assert module.main.output_names == ["probabilities"]


@pytest.mark.parametrize("seed", [1])
def test_mobilenet_like_arm64(seed):
    check(mobilenet_like(), "arm64", seed=seed)


def test_cli_compiles_a_tflite_file(tmp_path):
    m = mobilenet_like()
    path = tmp_path / "model.tflite"
    path.write_bytes(complete_shapes(m))
    out = tmp_path / "m.vmfb"
    result = subprocess.run([sys.executable, "-m", "iree_py.cli.main", "compile", str(path), "--target=host",
                             "-o", str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    inputs = random_inputs(m, seed=3)
    assert_close(iree_py.load(out.read_bytes()).main.call(*inputs), run_tflite(path.read_bytes(), inputs))
