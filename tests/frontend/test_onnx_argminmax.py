"""ONNX ArgMax/ArgMin (opsets 7, 11, 12, 13: axis, keepdims, select_last_index), CumSum and TopK
(exclusive, reverse; k, largest, ties) against onnxruntime, through the numpy reference and compiled for the host."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from resize_pad_models import check_compiled, one_node

from iree_py.errors import CompileError
from iree_py.frontends.onnx import import_onnx

I64 = (TensorProto.INT64,)


def _with_ties(shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    return {"x": (np.random.default_rng(3).integers(0, 4, size=shape)).astype(np.float32)}


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_axis_keepdims(op: str, axis: int, keepdims: int) -> None:
    check_compiled(one_node(op, {"x": (3, 4, 5)}, 11, axis=axis, keepdims=keepdims, out_dtypes=I64),
                   compile=keepdims == 1)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("select_last_index", [0, 1])
def test_ties(op: str, select_last_index: int) -> None:
    m = one_node(op, {"x": (4, 6)}, 13, axis=1, select_last_index=select_last_index, out_dtypes=I64)
    check_compiled(m, _with_ties((4, 6)))


@pytest.mark.parametrize("opset", [7, 12])
def test_opsets(opset: int) -> None:
    check_compiled(one_node("ArgMax", {"x": (2, 7)}, opset, out_dtypes=I64), compile=False)


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum(axis: int, exclusive: int, reverse: int) -> None:
    m = one_node("CumSum", {"x": (3, 4, 5)}, 14, {"axis": np.array(axis, np.int64)}, exclusive=exclusive,
                 reverse=reverse)
    check_compiled(m, compile=axis == 1)


def test_cumsum_axis_must_be_an_integer() -> None:
    """A run-time axis is supported (tests/frontend/test_onnx_misc_ops.py); a float one is refused."""
    m = one_node("CumSum", {"x": (3, 4), "axis": ()}, 14, dtype=TensorProto.FLOAT)
    with pytest.raises(CompileError, match=r"node 'cumsum_node' \(op CumSum, opset 14\): axis .* must be one int32"):
        import_onnx(m)


@pytest.mark.parametrize("largest", [0, 1])
@pytest.mark.parametrize("axis", [0, -1])
def test_topk(axis: int, largest: int) -> None:
    m = one_node("TopK", {"x": (5, 6)}, 11, {"k": np.array([3], np.int64)}, outputs=2,
                 out_dtypes=(TensorProto.FLOAT, TensorProto.INT64), axis=axis, largest=largest)
    check_compiled(m, _with_ties((5, 6)))


@pytest.mark.parametrize("opset", [7, 10])
def test_topk_old_opsets(opset: int) -> None:
    attrs = {"k": 2} if opset < 10 else {}
    constants = {"k": np.array([2], np.int64)} if opset >= 10 else {}
    m = one_node("TopK", {"x": (3, 7)}, opset, constants, outputs=2, out_dtypes=(TensorProto.FLOAT, TensorProto.INT64),
                 **attrs)
    check_compiled(m, compile=False)


def test_topk_indices_only() -> None:
    m = one_node("TopK", {"x": (4, 9)}, 11, {"k": np.array([4], np.int64)}, outputs=2,
                 out_dtypes=(TensorProto.FLOAT, TensorProto.INT64))
    m.graph.output.pop(0)
    check_compiled(m)


def test_topk_unsorted_gives_the_same_set() -> None:
    """sorted=0 allows any order: compare the chosen values as sets with onnxruntime's."""
    import onnxruntime as ort
    from iree_py.ir.reference import evaluate
    m = one_node("TopK", {"x": (4, 9)}, 11, {"k": np.array([4], np.int64)}, outputs=2,
                 out_dtypes=(TensorProto.FLOAT, TensorProto.INT64), sorted=0)
    x = np.random.default_rng(5).standard_normal((4, 9)).astype(np.float32)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = evaluate(import_onnx(m), {"x": x})
    np.testing.assert_array_equal(np.sort(got[0], axis=1), np.sort(want[0], axis=1))
    np.testing.assert_array_equal(np.sort(got[1], axis=1), np.sort(want[1], axis=1))
