"""The example models the device tests run, and their onnxruntime reference."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def onnxruntime_outputs(name: str, x: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(str(EXAMPLES / f"{name}.onnx"))
    return session.run(None, {session.get_inputs()[0].name: x})


def example_input(name: str) -> np.ndarray:
    return np.load(EXAMPLES / f"{name}_input.npy")
