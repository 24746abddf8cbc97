"""Seed inputs for the Python fuzz harnesses, made fresh (nothing binary is checked in but the
regression inputs): the bundled ONNX examples, small TFLite models of the common builtin ops
(float and int8), modules compiled from them, and .npy files of several dtypes and shapes."""
from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np

import iree_py

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "tflite"))


def tflite_seeds() -> list[bytes]:
    from tflite_harness import complete_shapes
    from tflite_writer import Quant, TfliteModel
    from iree_py.frontends.tflite.schema.Conv2DOptions import Conv2DOptionsT
    from iree_py.frontends.tflite.schema.FullyConnectedOptions import FullyConnectedOptionsT
    rng = np.random.default_rng(0)
    models = []
    m = TfliteModel()
    x = m.input("x", (1, 8, 8, 3))
    w, b = m.const("w", rng.standard_normal((4, 3, 3, 3)).astype(np.float32)), m.const("b", np.zeros(4, np.float32))
    c, r = m.tensor("c"), m.tensor("r")
    conv = Conv2DOptionsT()
    conv.strideH = conv.strideW = 1
    conv.padding = 0
    m.op("CONV_2D", [x, w, b], [c], conv)
    m.op("RELU", [c], [r])
    m.output(r)
    models.append(complete_shapes(m))
    m = TfliteModel()
    x = m.input("x", (2, 16))
    w = m.const("w", rng.standard_normal((8, 16)).astype(np.float32))
    y, s = m.tensor("y"), m.tensor("s")
    m.op("FULLY_CONNECTED", [x, w, -1], [y], FullyConnectedOptionsT())
    m.op("SOFTMAX", [y], [s])
    m.output(s)
    models.append(complete_shapes(m))
    m = TfliteModel()
    q = Quant([0.05], [3])
    x = m.input("x", (1, 6, 6, 2), dtype=np.int8, quant=q)
    w = m.const("w", rng.integers(-100, 100, (3, 3, 3, 2)).astype(np.int8), quant=Quant([0.02], [0]))
    b = m.const("b", np.zeros(3, np.int32), quant=Quant([0.001], [0]))
    y = m.tensor("y", dtype=np.int8, quant=Quant([0.1], [-1]))
    m.op("CONV_2D", [x, w, b], [y], conv)
    m.output(y)
    models.append(complete_shapes(m))
    return models


def model_seeds() -> list[bytes]:
    return [p.read_bytes() for p in sorted((ROOT / "examples").glob("*.onnx"))] + tflite_seeds()


def module_seeds() -> list[bytes]:
    return [iree_py.compile(data, target="host") for data in model_seeds()]


def npy_seeds() -> list[bytes]:
    arrays = [np.load(ROOT / "examples" / "small_cnn_input.npy"), np.zeros((1, 3, 32, 32), np.float64),
              np.zeros((1, 3), np.float32), np.array(1.5, np.float32), np.zeros((1, 3, 32, 32), np.float32)[:, :, ::2],
              np.array(["a", "b"]), np.zeros((0, 3), np.float32)]
    out = []
    for a in arrays:
        buffer = io.BytesIO()
        np.save(buffer, a)
        out.append(buffer.getvalue())
    return out


SEEDS = {"compile": model_seeds, "module": module_seeds, "npy": npy_seeds}
