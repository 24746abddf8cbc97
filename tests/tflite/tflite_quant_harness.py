"""Build int8/uint8 TFLite models and compare iree-py with TFLite's reference kernels, bit for bit.

The reference is the interpreter with OpResolverType.BUILTIN_REF (TFLite's reference kernels, no
XNNPACK, no optimized kernels): its QUANTIZE divides by the scale and rounds half away from zero,
as iree-py does, while the optimized QUANTIZE multiplies by the reciprocal and rounds half to even
(see test_default_resolver_quantize_differs).
"""
from __future__ import annotations

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from tflite_harness import complete_shapes
from tflite_writer import Quant, TfliteModel

import iree_py
from iree_py.frontends.tflite.importer import import_tflite
from iree_py.ir.reference import evaluate
from tests.e2e.harness import DEVICE, X86_TARGETS
QMIN = {np.dtype(np.int8): -128, np.dtype(np.uint8): 0}


def run_interpreter(data: bytes, inputs: list[np.ndarray],
                    resolver: OpResolverType = OpResolverType.BUILTIN_REF) -> list[np.ndarray]:
    interp = Interpreter(model_content=data, num_threads=1, experimental_op_resolver_type=resolver)
    interp.allocate_tensors()
    for detail, x in zip(interp.get_input_details(), inputs):
        interp.set_tensor(detail["index"], x)
    interp.invoke()
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]


def random_inputs(m: TfliteModel, seed: int = 0) -> list[np.ndarray]:
    """Uniform over the whole range for quantized inputs, N(0, 1) for float ones."""
    from iree_py.frontends.tflite.importer import NUMPY_OF

    rng = np.random.default_rng(seed)
    arrays = []
    for i in m.inputs:
        t = m.tensors[i]
        dtype = np.dtype(NUMPY_OF[t.type])
        if dtype in QMIN:
            low = QMIN[dtype]
            arrays.append(rng.integers(low, low + 256, size=t.shape).astype(dtype))
        else:
            arrays.append(rng.standard_normal(t.shape).astype(dtype))
    return arrays


def assert_equal(actual: list[np.ndarray], expected: list[np.ndarray], what: str) -> None:
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert a.dtype == e.dtype and a.shape == e.shape, f"{what} output {i}: {a.dtype}{a.shape} != {e.dtype}{e.shape}"
        wrong = np.argwhere(a != e)
        assert wrong.size == 0, (f"{what} output {i}: {len(wrong)} of {a.size} elements differ, first at "
                                 f"{tuple(wrong[0])}: {a[tuple(wrong[0])]} != {e[tuple(wrong[0])]}")


TARGETS = ("reference", *X86_TARGETS)  # x86_64 too where this CPU has AVX-512 or VNNI kernels


def check(m: TfliteModel, targets: tuple[str, ...] = TARGETS, seed: int = 0) -> bytes:
    """Complete the shapes, run the interpreter's reference kernels and iree-py (the graph through
    the IR reference kernels, and/or compiled for each target), and require equal outputs."""
    data = complete_shapes(m)
    inputs = random_inputs(m, seed)
    expected = run_interpreter(data, inputs)
    for target in targets:
        if target == "reference":
            actual = [np.asarray(a) for a in evaluate(import_tflite(data), inputs)]
        else:
            module = iree_py.load(iree_py.compile(data, target=target), device=DEVICE[target])
            actual = module.main.call(*inputs)
        assert_equal(actual, expected, target)
    return data


# ------------------------------------------------------------------------------ model building

def qtensor(m: TfliteModel, name: str, scale: float, zero_point: int, dtype=np.int8) -> int:
    return m.tensor(name, dtype=dtype, quant=Quant([scale], [zero_point]))


def qinput(m: TfliteModel, name: str, shape: tuple[int, ...], scale: float, zero_point: int, dtype=np.int8) -> int:
    return m.input(name, shape, dtype, quant=Quant([scale], [zero_point]))


def qweights(m: TfliteModel, name: str, rng: np.random.Generator, shape: tuple[int, ...],
             scales: list[float], axis: int) -> int:
    """Symmetric int8 weights (zero point 0) with per-tensor (one scale) or per-channel scales."""
    w = rng.integers(-127, 128, size=shape).astype(np.int8)
    return m.const(name, w, Quant(scales, [0] * len(scales), axis))


def qbias(m: TfliteModel, name: str, rng: np.random.Generator, count: int, input_scale: float,
          weight_scales: list[float]) -> int:
    """int32 bias with scale input_scale * weight_scale (TFLite checks it for FULLY_CONNECTED)."""
    scales = [float(np.float32(input_scale) * np.float32(s)) for s in weight_scales]
    b = rng.integers(-3000, 3000, size=count).astype(np.int32)
    return m.const(name, b, Quant(scales, [0] * len(scales), 0))
