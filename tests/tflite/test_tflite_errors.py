"""Clear errors: not TFLite, a newer schema, unsupported ops and options (named, with their index)."""
from __future__ import annotations

import numpy as np
import pytest
from tflite_harness import complete_shapes
from tflite_writer import TfliteModel

import iree_py
from iree_py.errors import CompileError
from iree_py.frontends.tflite import import_tflite
from iree_py.frontends.tflite.schema import AddOptions, Conv2DOptions, StridedSliceOptions
from test_tflite_ops import options, rand, single_op


def relu_then(code: str) -> TfliteModel:
    m = TfliteModel()
    x = m.input("x", (2, 3))
    r, y = m.tensor("r", (2, 3)), m.tensor("y", (2, 3))
    m.op("RELU", [x], [r])
    m.op(code, [r], [y])
    m.output(y)
    return m


def test_not_tflite_file(tmp_path):
    path = tmp_path / "model.tflite"
    path.write_bytes(b"\x10\x00\x00\x00ONNX" + bytes(32))
    with pytest.raises(CompileError, match=r"model.tflite is not a TFLite model: file identifier b'ONNX', expected b'TFL3'"):
        iree_py.compile(path)


def test_truncated_file():
    data = relu_then("RELU").build()
    with pytest.raises(CompileError, match="not a valid TFLite model"):
        import_tflite(data[:24])


def test_newer_schema_version():
    m = relu_then("RELU")
    m.version = 4
    with pytest.raises(CompileError, match="TFLite schema version 4 is newer than the newest iree-py reads \\(3\\)"):
        iree_py.compile(m.build())


def test_unsupported_op_is_named_with_its_index():
    with pytest.raises(CompileError, match=r"subgraph 0, operator 1 \(SIN\): op not supported by iree-py"):
        iree_py.compile(relu_then("SIN").build())


def test_operator_code_above_127_is_named():
    with pytest.raises(CompileError, match=r"operator 1 \(BROADCAST_TO\): op not supported"):
        import_tflite(relu_then("BROADCAST_TO").build())


@pytest.mark.parametrize("act", [4, 5])   # TANH, SIGN_BIT: TFLite's float kernels do not apply them
def test_fused_tanh_and_sign_bit_are_refused(act):
    m = single_op("ADD", [(2, 3), (2, 3)], opts=options(AddOptions, fusedActivationFunction=act))
    m.tensors[-1].shape = [2, 3]
    with pytest.raises(CompileError, match=r"operator 0 \(ADD\): fused activation"):
        import_tflite(m.build())


def test_computed_dequantize_is_refused():
    m = relu_then("DEQUANTIZE")
    with pytest.raises(CompileError, match=r"operator 1 \(DEQUANTIZE\): only float16 constants"):
        import_tflite(m.build())


def test_declared_output_shape_mismatch():
    m = single_op("CONV_2D", [(1, 5, 5, 2)], [rand(3, 3, 3, 2), rand(3)], options(Conv2DOptions, padding=1,
                                                                                  strideH=1, strideW=1))
    data = complete_shapes(m)
    m.tensors[-1].shape = [1, 5, 5, 3]   # VALID gives 3x3
    with pytest.raises(CompileError, match=r"operator 0 \(CONV_2D\): output 0 \('out0'\) computed as "
                                           r"tensor<1x3x3x3xf32>, the model declares tensor<1x5x5x3xf32>"):
        import_tflite(m.build())
    assert import_tflite(data).outputs[0].type.shape == (1, 3, 3, 3)


def test_variable_tensor_is_refused():
    m = relu_then("RELU")
    m.tensors[0].isVariable = True
    with pytest.raises(CompileError, match=r"tensor 0 \('x'\) is a variable"):
        import_tflite(m.build())


def test_fused_activation_applied_to_concatenation():
    """TFLite's float kernel refuses this; ours applies it (checked against numpy)."""
    from iree_py.frontends.tflite.schema import ConcatenationOptions
    from iree_py.ir.reference import evaluate
    m = single_op("CONCATENATION", [(2, 3), (2, 3)], opts=options(ConcatenationOptions, axis=1,
                                                                   fusedActivationFunction=3))
    m.tensors[-1].shape = [2, 6]
    a, b = rand(2, 3) * 5, rand(2, 3) * 5
    (y,) = evaluate(import_tflite(m.build()), [a, b])
    np.testing.assert_array_equal(y, np.clip(np.concatenate([a, b], axis=1), 0, 6))


def test_strided_slice_ellipsis_mask_is_refused():
    m = single_op("STRIDED_SLICE", [(2, 3, 4)], [np.array(v, np.int32) for v in ([0, 1], [2, 3], [1, 1])],
                  options(StridedSliceOptions, ellipsisMask=1))
    m.tensors[m.outputs[0]].shape = [2, 3, 2]
    with pytest.raises(CompileError, match=r"ellipsis_mask 1 / new_axis_mask 0 are not supported"):
        import_tflite(m.build())
