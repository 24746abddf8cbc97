"""Inputs and outputs keep their TFLite names (the SignatureDef's when there is one) and the
quantization of int8/uint8 tensors: in the module (TensorSig scale/zero_point), in `iree-py dump`
(golden text), and in the Python API (`inputs[i].quantization`, int8 arrays in and out, a clear
error for a float array given to an int8 input)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from tflite_harness import complete_shapes
from tflite_quant_harness import qinput, qtensor, run_interpreter
from tflite_writer import TfliteModel

import iree_py
from iree_py.errors import IreePyError
from iree_py.frontends.tflite.schema.SoftmaxOptions import SoftmaxOptionsT
from iree_py.ir.types import DType
from iree_py.module.model import Function, Module, TensorSig
from iree_py.module.reader import read_module
from tests.module.test_dump_golden import masked_dump

GOLDEN = Path(__file__).parent / "golden" / "int8_softmax.dump.txt"


def _int8_softmax(signature: bool) -> bytes:
    """int8 x [2, 5] (scale 0.1, zero point 3) -> SOFTMAX -> int8 [2, 5] (1/256, -128)."""
    m = TfliteModel()
    x = qinput(m, "serving_default_x:0", (2, 5), 0.1, 3)
    y = qtensor(m, "StatefulPartitionedCall:0", 1 / 256, -128)
    opts = SoftmaxOptionsT()
    opts.beta = 1.0
    m.op("SOFTMAX", [x], [y], opts)
    m.output(y)
    if signature:
        m.signature, m.signature_names = "serving_default", {x: "x", y: "probs"}
    return complete_shapes(m)


def test_signature_names_and_quantization_reach_the_api() -> None:
    data = _int8_softmax(signature=True)
    main = iree_py.load(iree_py.compile(data)).main
    assert main.input_names == ["x"] and main.output_names == ["probs"]
    assert main.inputs[0].dtype == DType.i8 and main.inputs[0].quantization == (float(np.float32(0.1)), 3)
    assert main.outputs[0].quantization == (1 / 256, -128)
    x = np.random.default_rng(0).integers(-128, 128, (2, 5)).astype(np.int8)
    (got,) = main.call(x)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, run_interpreter(data, [x])[0])


def test_tensor_names_without_a_signature() -> None:
    main = iree_py.load(iree_py.compile(_int8_softmax(signature=False))).main
    assert main.input_names == ["serving_default_x:0"] and main.output_names == ["StatefulPartitionedCall:0"]
    assert main.inputs[0].quantization is not None


def test_float_array_for_an_int8_input_is_refused_by_name() -> None:
    main = iree_py.load(iree_py.compile(_int8_softmax(signature=True))).main
    with pytest.raises(IreePyError, match=r"input 0 'x' \[2, 5\] i8 is quantized \(scale 0.100000001, zero point 3\) "
                                          r"and was given dtype float32; expected int8"):
        main.call(np.zeros((2, 5), np.float32))


def test_float_tensors_carry_no_quantization() -> None:
    m = TfliteModel()
    x = m.input("x", (3,))
    y = m.tensor("y")
    m.op("RELU", [x], [y])
    m.output(y)
    main = iree_py.load(iree_py.compile(complete_shapes(m))).main
    assert main.inputs[0].quantization is None and main.outputs[0].quantization is None


def test_module_without_quantization_fields_reads() -> None:
    """A TensorSig written without the appended fields (as by older writers) reads as unquantized;
    one with them round-trips."""
    from iree_py.module.writer import write_module

    plain = TensorSig("a", DType.f32, (2,))
    quant = TensorSig("b", DType.u8, (2,), (0.5,), (7,))
    module = Module(name="m", functions=[Function("main", [plain, quant], [], 0, 0, b"")])
    back = read_module(write_module(module)).functions[0].inputs
    assert back[0].scale == () and back[0].quantization is None
    assert back[1].quantization == (0.5, 7)


def test_dump_of_an_int8_model_matches_golden() -> None:
    text = masked_dump(iree_py.compile(_int8_softmax(signature=True), target="x86_64"))
    if os.environ.get("IREE_PY_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()
