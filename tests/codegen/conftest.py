"""Shared helpers for the codegen kernel tests (run through iree_py/codegen/llvm/jit.py)."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

from iree_py.ir.types import DType, TensorType


def f32(*shape: int) -> TensorType:
    return TensorType(DType.f32, tuple(shape))


def assert_close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-5, what: str = "") -> None:
    """|got - want| <= rtol * max|want| everywhere (the kernels' stated tolerance)."""
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    scale = max(float(np.max(np.abs(want))), 1e-30) if want.size else 1.0
    err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if want.size else 0.0
    assert err <= rtol * scale, f"{what}: max abs error {err} > {rtol} * {scale}"


def run_onnx_op(op: str, inputs: dict[str, np.ndarray], opset: int = 19, **attrs) -> np.ndarray:
    """One ONNX node run by onnxruntime: the reference for ops numpy lacks."""
    node = helper.make_node(op, list(inputs), ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, inputs)[0]


