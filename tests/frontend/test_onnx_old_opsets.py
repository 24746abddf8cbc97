"""Models older than opset 7: ops whose definition did not change up to opset 7 import as at opset 7
(and match onnxruntime); ops that changed are refused with the versions named."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from iree_py.errors import CompileError
from iree_py.frontends.onnx import import_onnx
from iree_py.ir.reference import evaluate


def model(node, inputs, output, opset):
    g = h.make_graph([node], "g", [h.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                     [h.make_tensor_value_info(output[0], output[1], output[2])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 3
    return m


@pytest.mark.parametrize("opset", [1, 4, 6])
def test_unchanged_ops_import_from_old_opsets(opset):
    m = model(h.make_node("Not", ["x"], ["y"]), [("x", T.BOOL, [2, 3])], ("y", T.BOOL, [2, 3]), opset)
    x = np.array([[True, False, True], [False, False, True]])
    np.testing.assert_array_equal(evaluate(import_onnx(m), [x])[0], ~x)


def test_changed_ops_are_refused_naming_both_versions():
    m = model(h.make_node("Add", ["a", "b"], ["c"], broadcast=1),
              [("a", T.FLOAT, [2, 3]), ("b", T.FLOAT, [3])], ("c", T.FLOAT, [2, 3]), 6)
    with pytest.raises(CompileError, match=r"node 'Add_0' \(op Add, opset 6\): Add changed between opset 6 "
                                           r"\(version 6\) and 7 \(version 7\); .*upgrade the model"):
        import_onnx(m)
