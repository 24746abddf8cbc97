"""Build small ONNX models, run them through iree-py (compiler + C runtime) and onnxruntime, compare."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import iree_py

TARGETS = ["host", "arm64", "riscv64"]  # arm64, riscv64: the cross-built runtime under qemu-aarch64/-riscv64
RVV_TARGET = "riscv64-rvv"      # riscv64 with vector kernels: run on the cases that vectorize
DEVICE = {"host": "local", "arm64": "qemu", "riscv64": "qemu", RVV_TARGET: "qemu"}
RELATIVE_TOLERANCE = 1e-4       # of the reference's largest magnitude


def model(nodes: list[onnx.NodeProto], inputs: dict[str, tuple[int, ...]], outputs: list[str],
          initializers: dict[str, np.ndarray] | None = None, opset: int = 13) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (initializers or {}).items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = min(m.ir_version, 8)  # old enough for every onnxruntime we test with
    return m


def random_inputs(m: onnx.ModelProto, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    inits = {i.name for i in m.graph.initializer}
    out = []
    for i in m.graph.input:
        if i.name in inits:
            continue
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        elem = i.type.tensor_type.elem_type
        if elem in (TensorProto.INT32, TensorProto.INT64):  # indices: small, some negative
            out.append(rng.integers(-2, 2, shape).astype(helper.tensor_dtype_to_np_dtype(elem)))
            continue
        if elem == TensorProto.BOOL:
            out.append(rng.integers(0, 2, shape).astype(bool))
            continue
        if elem in (TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16):
            out.append(rng.integers(0, 100, shape).astype(helper.tensor_dtype_to_np_dtype(elem)))
            continue
        if elem in (TensorProto.DOUBLE, TensorProto.FLOAT16):
            out.append(rng.standard_normal(shape).astype(helper.tensor_dtype_to_np_dtype(elem)))
            continue
        out.append(rng.standard_normal(shape).astype(np.float32))
    return out


def run_onnxruntime(m: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3  # errors only: the onnx test models trigger a warning per unused initializer
    session = ort.InferenceSession(m.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, inputs)))


def run_iree(m: onnx.ModelProto | bytes, inputs: list[np.ndarray], target: str = "host") -> list[np.ndarray]:
    data = m if isinstance(m, bytes) else m.SerializeToString()
    module = iree_py.load(iree_py.compile(data, target=target), device=DEVICE[target])
    return module.main.call(*inputs)


def assert_close(actual: list[np.ndarray], expected: list[np.ndarray], tolerance: float = RELATIVE_TOLERANCE) -> None:
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        e = np.asarray(e)
        assert a.shape == e.shape, f"output {i}: shape {a.shape} != {e.shape}"
        scale = max(float(np.max(np.abs(e))) if e.size else 0.0, 1e-6)
        err = float(np.max(np.abs(a.astype(np.float64) - e))) if e.size else 0.0
        assert err <= tolerance * scale, f"output {i}: max |error| {err:.3g} > {tolerance} x max |ref| {scale:.3g}"


def check_against_onnxruntime(m: onnx.ModelProto, target: str, seed: int = 0,
                              inputs: list[np.ndarray] | None = None) -> None:
    inputs = inputs if inputs is not None else random_inputs(m, seed)
    assert_close(run_iree(m, inputs, target), run_onnxruntime(m, inputs))
