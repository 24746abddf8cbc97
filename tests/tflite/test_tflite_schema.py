"""The generated reader is current, and our schema's numbers are TFLite's (checked against the
TFLite interpreter's own generated schema, a test-only reference)."""
from __future__ import annotations

import filecmp
import shutil
import subprocess
from pathlib import Path

import pytest
from ai_edge_litert import schema_py_generated as ref

from iree_py.frontends.tflite.schema.ActivationFunctionType import ActivationFunctionType
from iree_py.frontends.tflite.schema.BuiltinOperator import BuiltinOperator
from iree_py.frontends.tflite.schema.BuiltinOptions import BuiltinOptions
from iree_py.frontends.tflite.schema.DimensionType import DimensionType
from iree_py.frontends.tflite.schema.Padding import Padding
from iree_py.frontends.tflite.schema.SparseIndexVector import SparseIndexVector
from iree_py.frontends.tflite.schema.TensorType import TensorType

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "iree_py/frontends/tflite/schema"


def members(enum: type) -> dict[str, int]:
    return {k: v for k, v in vars(enum).items() if not k.startswith("_")}


@pytest.mark.skipif(shutil.which("flatc") is None, reason="flatc not installed")
def test_generated_schema_is_current(tmp_path):
    subprocess.run([str(ROOT / "scripts/gen_tflite_schema.sh"), str(tmp_path)], check=True)
    names = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert names == sorted(p.name for p in tmp_path.glob("*.py"))
    stale = [n for n in names if not filecmp.cmp(PACKAGE / n, tmp_path / n, shallow=False)]
    assert not stale, f"regenerate with scripts/gen_tflite_schema.sh: {stale}"


@pytest.mark.parametrize("ours,theirs", [(BuiltinOperator, ref.BuiltinOperator), (BuiltinOptions, ref.BuiltinOptions),
                                         (TensorType, ref.TensorType), (Padding, ref.Padding),
                                         (ActivationFunctionType, ref.ActivationFunctionType),
                                         (DimensionType, ref.DimensionType), (SparseIndexVector, ref.SparseIndexVector)])
def test_enum_values_are_tflite_values(ours, theirs):
    mine, reference = members(ours), members(theirs)
    assert len(mine) > 1
    wrong = {name: (value, reference.get(name)) for name, value in mine.items() if reference.get(name) != value}
    assert not wrong, wrong


def test_field_ids_read_back_by_the_reference_reader():
    """A model with options written by our schema reads back the same through TFLite's reader."""
    import numpy as np
    from tflite_writer import TfliteModel

    from iree_py.frontends.tflite.schema import Conv2DOptions, QuantizationParameters
    m = TfliteModel(signature="sig")
    x = m.input("x", (1, 4, 4, 2))
    w = m.const("w", np.ones((3, 1, 1, 2), np.float32))
    y = m.tensor("y", (1, 2, 2, 3))
    q = QuantizationParameters.QuantizationParametersT()
    q.scale, q.zeroPoint, q.quantizedDimension = [0.5], [3], 2
    m.tensors[w].quantization = q
    opts = Conv2DOptions.Conv2DOptionsT()
    opts.padding, opts.strideW, opts.strideH, opts.fusedActivationFunction = 1, 2, 3, 3
    opts.dilationWFactor, opts.dilationHFactor = 4, 5
    m.op("CONV_2D", [x, w, -1], [y], opts)
    m.output(y)
    model = ref.ModelT.InitFromObj(ref.Model.GetRootAs(m.build(), 0))
    assert model.version == 3 and model.operatorCodes[0].builtinCode == ref.BuiltinOperator.CONV_2D
    sub = model.subgraphs[0]
    assert [t.name for t in sub.tensors] == [b"x", b"w", b"y"] and list(sub.tensors[1].shape) == [3, 1, 1, 2]
    assert bytes(model.buffers[sub.tensors[1].buffer].data) == np.ones((3, 1, 1, 2), np.float32).tobytes()
    quant = sub.tensors[1].quantization
    assert list(quant.scale) == [0.5] and list(quant.zeroPoint) == [3] and quant.quantizedDimension == 2
    op = sub.operators[0]
    assert list(op.inputs) == [0, 1, -1] and op.builtinOptionsType == ref.BuiltinOptions.Conv2DOptions
    o = op.builtinOptions
    assert (o.padding, o.strideW, o.strideH, o.fusedActivationFunction, o.dilationWFactor, o.dilationHFactor) == \
        (1, 2, 3, 3, 4, 5)
    sig = model.signatureDefs[0]
    assert sig.signatureKey == b"sig" and [t.name for t in sig.inputs] == [b"x"] and sig.outputs[0].tensorIndex == 2
