"""Build small ONNX models, run them through iree-py (compiler + C runtime) and the reference, compare.

The reference is onnxruntime, except for models with integer products (INTEGER_PRODUCT_OPS): there
onnxruntime's result depends on the CPU (its x86 u8 x s8 kernels on CPUs without VNNI add pairs of
products in 16-bit saturating arithmetic, so large products leave the ONNX specification;
test_integer_oracle.py shows it on an emulated AVX2 CPU), and the oracle is the specification
itself: onnx's reference evaluator, which does the integer math exactly."""
from __future__ import annotations

import numpy as np
import onnx
import onnx.reference
import onnx.version_converter
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import iree_py
from iree_py.codegen.llvm.qconv_packing import x86_vnni_bytes
from iree_py.targets import load_target


def host_differs_from_x86_64() -> bool:
    """Whether this CPU's `host` kernels differ from the portable AVX2 ones of `x86_64`: wider
    vectors (AVX-512) or int8 dot products (VNNI)."""
    host = load_target("host")
    return host.vector_bits != load_target("x86_64").vector_bits or x86_vnni_bytes(host) > 0


# `host` kernels are this CPU's (AVX-512 and VNNI where it has them); where they differ from the AVX2
# ones, the cases also run on `x86_64`, so the AVX2 kernels are tested on every machine (docs/testing.md).
X86_TARGETS = ["host", "x86_64"] if host_differs_from_x86_64() else ["host"]
TARGETS = [*X86_TARGETS, "arm64", "riscv64"]  # arm64, riscv64: the cross-built runtime under qemu-aarch64/-riscv64
RVV_TARGET = "riscv64-rvv"      # riscv64 with vector kernels: run on the cases that vectorize
DEVICE = {"host": "local", "x86_64": "local", "arm64": "qemu", "riscv64": "qemu", RVV_TARGET: "qemu", "vulkan": "vulkan"}
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


INTEGER_PRODUCT_OPS = frozenset({"ConvInteger", "MatMulInteger", "QLinearConv", "QLinearMatMul"})
SPEC_OPSET = 21  # onnx's reference evaluator implements the quantization ops at this opset, not at 10 or 13


def has_integer_products(m: onnx.ModelProto) -> bool:
    return any(n.op_type in INTEGER_PRODUCT_OPS for n in m.graph.node)


def run_spec(m: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The ONNX specification's answer: onnx's reference evaluator (the model upgraded to SPEC_OPSET
    first when it is older, since the evaluator lacks some old versions of the quantization ops)."""
    opset = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), SPEC_OPSET)
    if opset < SPEC_OPSET:
        m = onnx.version_converter.convert_version(m, SPEC_OPSET)
    initializers = {t.name for t in m.graph.initializer}
    names = [i.name for i in m.graph.input if i.name not in initializers]
    return onnx.reference.ReferenceEvaluator(m).run(None, dict(zip(names, inputs)))


def run_reference(m: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The oracle for `m`: the specification for integer products, onnxruntime for the rest."""
    return run_spec(m, inputs) if has_integer_products(m) else run_onnxruntime(m, inputs)


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


def check_against_reference(m: onnx.ModelProto, target: str, seed: int = 0,
                            inputs: list[np.ndarray] | None = None) -> None:
    inputs = inputs if inputs is not None else random_inputs(m, seed)
    assert_close(run_iree(m, inputs, target), run_reference(m, inputs))
