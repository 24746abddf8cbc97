"""int8/uint8 SOFTMAX against TFLite's reference kernel (OpResolverType.BUILTIN_REF), bit for bit:
through the IR reference (QSoftmax in iree_py/ir/ops/qsoftmax.py) and compiled for the host."""
from __future__ import annotations

import numpy as np
import pytest
from tflite_quant_harness import check, qinput, qtensor
from tflite_writer import TfliteModel

import iree_py
from iree_py.errors import CompileError
from iree_py.frontends.tflite.importer import import_tflite
from iree_py.frontends.tflite.schema.SoftmaxOptions import SoftmaxOptionsT
from tflite_harness import complete_shapes

OUTPUT_ZERO_POINT = {np.int8: -128, np.uint8: 0}


def _softmax_model(dtype, shape: tuple[int, ...], scale: float, zero_point: int, beta: float,
                   out_scale: float = 1 / 256, out_zero_point: int | None = None) -> TfliteModel:
    m = TfliteModel()
    x = qinput(m, "x", shape, scale, zero_point, dtype)
    y = qtensor(m, "y", out_scale, OUTPUT_ZERO_POINT[dtype] if out_zero_point is None else out_zero_point, dtype)
    opts = SoftmaxOptionsT()
    opts.beta = beta
    m.op("SOFTMAX", [x], [y], opts)
    m.output(y)
    return m


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("shape,scale,beta", [
    ((4, 10), 0.1, 1.0),
    ((2, 3, 33), 0.05, 1.0),
    ((3, 7), 1.0, 1.0),          # coarse input: diff_min drops most entries
    ((5, 300), 0.01, 0.5),       # long rows
    ((1, 2, 2, 17), 0.3, 2.0),   # rank 4 (NHWC): still over the last axis
    ((6,), 0.125, 1.0),          # rank 1
])
def test_quantized_softmax_matches_reference_kernel(dtype, shape: tuple[int, ...], scale: float, beta: float) -> None:
    m = _softmax_model(dtype, shape, scale, 3 if dtype == np.int8 else 130, beta)
    for seed in range(2):
        check(m, seed=seed)


def test_quantized_softmax_of_constant_rows() -> None:
    """Equal entries (every difference 0) and a single dominant entry per row."""
    m = _softmax_model(np.int8, (3, 5), 0.07, 0, 1.0)
    data = complete_shapes(m)
    x = np.array([[4] * 5, [127, -128, -128, -128, -128], [-128] * 5], np.int8)
    from tflite_quant_harness import run_interpreter
    from iree_py.ir.reference import evaluate

    expected = run_interpreter(data, [x])[0]
    np.testing.assert_array_equal(np.asarray(evaluate(import_tflite(data), [x])[0]), expected)


def test_quantized_softmax_refuses_other_output_parameters() -> None:
    m = _softmax_model(np.int8, (2, 4), 0.1, 0, 1.0, out_scale=1 / 128, out_zero_point=0)
    with pytest.raises(CompileError, match=r"SOFTMAX.*1/256 and -128"):
        import_tflite(m.build())


LUT_OUTPUT = {"LOGISTIC": {np.int8: (1 / 256, -128), np.uint8: (1 / 256, 0)},
              "TANH": {np.int8: (1 / 128, 0), np.uint8: (1 / 128, 128)}}


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
@pytest.mark.parametrize("dtype,zero_point", [(np.int8, 0), (np.int8, -20), (np.uint8, 128), (np.uint8, 7)])
@pytest.mark.parametrize("scale", [0.0078125, 0.0234, 0.1, 0.3])
def test_quantized_logistic_and_tanh_match_reference_kernel(op: str, dtype, zero_point: int, scale: float) -> None:
    """Every one of the 256 input values, through TFLite's table (filled in float32 at Prepare)."""
    m = TfliteModel()
    x = qinput(m, "x", (2, 128), scale, zero_point, dtype)
    y = qtensor(m, "y", *LUT_OUTPUT[op][dtype], dtype)
    m.op(op, [x], [y])
    m.output(y)
    data = complete_shapes(m)
    low = -128 if dtype == np.int8 else 0
    xs = (np.arange(256) + low).astype(dtype).reshape(2, 128)
    from tflite_quant_harness import run_interpreter
    from iree_py.ir.reference import evaluate

    expected = run_interpreter(data, [xs])[0]
    np.testing.assert_array_equal(np.asarray(evaluate(import_tflite(data), [xs])[0]), expected)
    if scale == 0.1:
        (got,) = iree_py.load(iree_py.compile(data)).main.call(xs)
        np.testing.assert_array_equal(got, expected)


def test_quantized_tanh_refuses_other_output_parameters() -> None:
    m = TfliteModel()
    x = qinput(m, "x", (4,), 0.1, 0)
    y = qtensor(m, "y", 1 / 256, -128)
    m.op("TANH", [x], [y])
    m.output(y)
    with pytest.raises(CompileError, match=r"TANH.*1/128 and 0"):
        import_tflite(m.build())
