"""Run a model built with tflite_writer through the TFLite interpreter and through iree-py, compare."""
from __future__ import annotations

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from tflite_writer import TfliteModel

import iree_py

RELATIVE_TOLERANCE = 1e-4       # of the reference's largest magnitude
DEVICE = {"host": "local", "arm64": "qemu"}


def interpreter(data: bytes) -> Interpreter:
    # TFLite's builtin kernels without the XNNPACK delegate (which adds tensors of its own).
    interp = Interpreter(model_content=data, num_threads=1,
                         experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    interp.allocate_tensors()
    return interp


def complete_shapes(m: TfliteModel) -> bytes:
    """The model's bytes with every tensor's shape as the interpreter computes it."""
    interp = interpreter(m.build())
    for detail in interp.get_tensor_details():
        if detail["index"] >= len(m.tensors):
            continue  # the interpreter's own scratch tensors (im2col, ...)
        m.tensors[detail["index"]].shape = [int(d) for d in detail["shape"]]
    return m.build()


def run_tflite(data: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    interp = interpreter(data)
    for detail, x in zip(interp.get_input_details(), inputs):
        interp.set_tensor(detail["index"], x)
    interp.invoke()
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]


def run_iree(data: bytes, inputs: list[np.ndarray], target: str = "host") -> list[np.ndarray]:
    module = iree_py.load(iree_py.compile(data, target=target), device=DEVICE[target])
    return module.main.call(*inputs)


def random_inputs(m: TfliteModel, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(m.tensors[i].shape).astype(np.float32) for i in m.inputs]


def assert_close(actual: list[np.ndarray], expected: list[np.ndarray], tolerance: float = RELATIVE_TOLERANCE) -> None:
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert a.shape == e.shape, f"output {i}: shape {a.shape} != {e.shape}"
        scale = max(float(np.max(np.abs(e))) if e.size else 0.0, 1e-6)
        err = float(np.max(np.abs(a.astype(np.float64) - e))) if e.size else 0.0
        assert err <= tolerance * scale, f"output {i}: max |error| {err:.3g} > {tolerance} x max |ref| {scale:.3g}"


def check(m: TfliteModel, target: str = "host", seed: int = 0) -> bytes:
    """Complete the shapes, run both, compare; returns the model bytes."""
    data = complete_shapes(m)
    inputs = random_inputs(m, seed)
    assert_close(run_iree(data, inputs, target), run_tflite(data, inputs))
    return data
