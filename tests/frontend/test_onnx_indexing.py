"""ONNX indexing ops (iree_py/frontends/onnx/indexing.py) at several opsets: import, evaluate with
the numpy reference, compare exactly with onnxruntime. Index tensors are graph inputs (computed at
run time) unless a case says otherwise; negative indices, i32 and i64 indices, non-f32 data."""
from __future__ import annotations

import numpy as np
import onnx
import onnx.defs
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from iree_py.errors import CompileError
from iree_py.frontends.onnx import import_onnx
from iree_py.ir.reference import evaluate
from iree_py.ir.text import parse_graph, print_graph
from onnx_models import NEWEST

rng = np.random.default_rng(11)


def _elem(dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def build(nodes: list[onnx.NodeProto], feeds: dict[str, np.ndarray], out_dtype, opset: int,
          inits: dict[str, np.ndarray] | None = None, outputs: tuple[str, ...] = ("y",)) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "test", [helper.make_tensor_value_info(n, _elem(a.dtype), a.shape) for n, a in feeds.items()],
        [helper.make_tensor_value_info(n, _elem(out_dtype), None) for n in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in (inits or {}).items()])
    opset_id = helper.make_opsetid("", opset)
    m = helper.make_model(graph, opset_imports=[opset_id])
    m.ir_version = helper.find_min_ir_version_for([opset_id])
    return m


def check(m: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    """Our import evaluated by the numpy reference equals onnxruntime exactly; the text round-trips."""
    expected = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    graph = import_onnx(m)
    text = print_graph(graph)
    assert print_graph(parse_graph(text)) == text
    got = evaluate(graph, feeds)
    for g, e, name in zip(got, expected, graph.output_names, strict=True):
        assert g.dtype == e.dtype, f"output {name}: dtype {g.dtype} != onnxruntime {e.dtype}"
        np.testing.assert_array_equal(g, e, err_msg=f"output {name}")


def data(shape: tuple[int, ...], dtype=np.float32) -> np.ndarray:
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.integers(-50, 50, size=shape).astype(dtype) if np.dtype(dtype).kind in "iu" else \
        rng.standard_normal(shape).astype(dtype)


def indices(shape: tuple[int, ...], dim: int, dtype=np.int64) -> np.ndarray:
    return rng.integers(-dim, dim, size=shape).astype(dtype)


# ------------------------------------------------------------------------------------------ Gather

@pytest.mark.parametrize("opset", [7, 11, 13, NEWEST])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_gather_computed_indices(opset: int, axis: int, index_dtype) -> None:
    x = data((3, 4, 5))
    idx = indices((2, 3), x.shape[axis], index_dtype) if opset >= 11 else \
        rng.integers(0, x.shape[axis], size=(2, 3)).astype(index_dtype)  # negative indices from opset 11
    m = build([helper.make_node("Gather", ["x", "i"], ["y"], axis=axis)], {"x": x, "i": idx}, np.float32, opset)
    check(m, {"x": x, "i": idx})


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.bool_, np.float16, np.uint8])
def test_gather_other_data_types_and_scalar_index(dtype) -> None:
    x = data((4, 3), dtype)
    for idx in (np.array(-2, np.int64), np.array([[3, 0], [-1, 1]], np.int32)):
        m = build([helper.make_node("Gather", ["x", "i"], ["y"], axis=0)], {"x": x, "i": idx}, dtype, 13)
        check(m, {"x": x, "i": idx})


def test_gather_constant_indices_on_computed_data_and_constant_fold() -> None:
    x = data((5, 6))
    m = build([helper.make_node("Gather", ["x", "i"], ["y"], axis=1)], {"x": x}, np.float32, 13,
              {"i": np.array([[5, -6], [2, 2]], np.int64)})
    check(m, {"x": x})
    table = data((4, 3))
    m = build([helper.make_node("Gather", ["t", "i"], ["g"]), helper.make_node("Add", ["g", "x"], ["y"])],
              {"x": data((2, 3))}, np.float32, 13, {"t": table, "i": np.array([3, -4], np.int64)})
    graph = import_onnx(m)
    assert [n.op for n in graph.nodes] == ["Add"]  # the Gather of constants was folded
    check(m, {"x": data((2, 3))})


# --------------------------------------------------------------------------- GatherElements / ND

@pytest.mark.parametrize("opset", [11, 13, NEWEST])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_gather_elements(opset: int, axis: int) -> None:
    x = data((3, 4, 5), np.int32)
    shape = tuple(2 if k != axis % 3 else 6 for k in range(3))
    idx = indices(shape, x.shape[axis], np.int32 if axis == 1 else np.int64)
    m = build([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)], {"x": x, "i": idx}, np.int32, opset)
    check(m, {"x": x, "i": idx})


GATHER_ND_CASES = [  # (data shape, indices shape, batch_dims)
    ((3, 4, 5), (2, 1), 0),
    ((3, 4, 5), (2, 3, 2), 0),
    ((3, 4, 5), (4, 3), 0),
    ((3, 4, 5), (3, 2, 1), 1),
    ((3, 4, 5), (3, 2), 1),
    ((2, 3, 4, 5), (2, 3, 2, 1), 2),
]


@pytest.mark.parametrize("opset,case", [(opset, case) for opset in (11, 12, NEWEST)
                                         for case in range(len(GATHER_ND_CASES))
                                         if opset >= 12 or not GATHER_ND_CASES[case][2]])  # batch_dims: opset 12
def test_gather_nd(opset: int, case: int) -> None:
    dshape, ishape, batch_dims = GATHER_ND_CASES[case]
    x = data(dshape)
    k = ishape[-1]
    idx = np.stack([indices(ishape[:-1], dshape[batch_dims + j]) for j in range(k)], axis=-1)
    attrs = {"batch_dims": batch_dims} if batch_dims else {}
    m = build([helper.make_node("GatherND", ["x", "i"], ["y"], **attrs)], {"x": x, "i": idx}, np.float32, opset)
    check(m, {"x": x, "i": idx})


# ---------------------------------------------------------------------------------------- Scatter

def _reductions(opset: int) -> list[str]:
    return ["none"] + (["add", "mul"] if opset >= 16 else []) + (["max", "min"] if opset >= 18 else [])


SCATTER_CASES = [(opset, r) for opset in (11, 13, 16, NEWEST) for r in _reductions(opset)]


@pytest.mark.parametrize("opset,reduction", SCATTER_CASES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements(opset: int, reduction: str, axis: int) -> None:
    x = data((4, 5, 3))
    shape = tuple(2 if k != axis % 3 else 3 for k in range(3))
    # distinct positions along the axis: onnxruntime's order for repeated indices is unspecified
    idx = np.stack([rng.permutation(x.shape[axis])[:shape[axis % 3]] for _ in range(int(np.prod(shape)) // 3)])
    idx = np.moveaxis(idx.reshape(*[s for k, s in enumerate(shape) if k != axis % 3], shape[axis % 3]), -1, axis % 3)
    idx = (idx - x.shape[axis] * (rng.random(idx.shape) < 0.5)).astype(np.int64)  # some negative
    upd = data(shape)
    attrs = {"axis": axis} | ({"reduction": reduction} if reduction != "none" else {})
    m = build([helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], **attrs)], {"x": x, "i": idx, "u": upd},
              np.float32, opset)
    check(m, {"x": x, "i": idx, "u": upd})


@pytest.mark.parametrize("opset", [9, 10])
def test_scatter_opset_9_10(opset: int) -> None:
    x = data((3, 4), np.int64)
    idx = np.array([[1, 0, 3], [2, 3, 0]], np.int64)
    upd = data((2, 3), np.int64)
    m = build([helper.make_node("Scatter", ["x", "i", "u"], ["y"], axis=1)], {"x": x, "i": idx, "u": upd},
              np.int64, opset)
    check(m, {"x": x, "i": idx, "u": upd})


@pytest.mark.parametrize("opset,reduction", SCATTER_CASES)
@pytest.mark.parametrize("index_dtype", [np.int64])
def test_scatter_nd(opset: int, reduction: str, index_dtype) -> None:
    x = data((4, 3, 5))
    idx = np.array([[[1, 2], [-1, 0]], [[0, -3], [2, 1]]], index_dtype)  # [2, 2, 2]: 4 rows of 5
    upd = data((2, 2, 5))
    attrs = {"reduction": reduction} if reduction != "none" else {}
    m = build([helper.make_node("ScatterND", ["x", "i", "u"], ["y"], **attrs)], {"x": x, "i": idx, "u": upd},
              np.float32, opset)
    check(m, {"x": x, "i": idx, "u": upd})


def test_scatter_nd_int_data_full_index() -> None:
    x = data((3, 4), np.int32)
    idx = np.array([[0, 1], [2, -1], [1, 1]], np.int64)
    upd = data((3,), np.int32)
    m = build([helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction="add")], {"x": x, "i": idx, "u": upd},
              np.int32, 16)
    check(m, {"x": x, "i": idx, "u": upd})


def test_reduction_not_in_opset_is_refused() -> None:
    x, idx, upd = data((3, 4)), np.array([[0]], np.int64), data((1, 4))
    m = build([helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction="max")], {"x": x, "i": idx, "u": upd},
              np.float32, 16)
    with pytest.raises(CompileError, match=r"reduction='max'.*opset 16"):
        import_onnx(m)
    x = data((3, 4), np.bool_)
    m = build([helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction="add")],
              {"x": x, "i": idx, "u": data((1, 4), np.bool_)}, np.bool_, 16)
    with pytest.raises(CompileError, match=r"reduction='add'.*bool"):
        import_onnx(m)


# ------------------------------------------------------------------------------- Tile / Expand

@pytest.mark.parametrize("opset", [7, 13, NEWEST])
@pytest.mark.parametrize("repeats", [[2, 1, 3], [1, 1, 1], [1, 4, 1], [3, 2, 2]])
def test_tile(opset: int, repeats: list[int]) -> None:
    x = data((2, 3, 1), np.int64 if opset == 13 else np.float32)
    m = build([helper.make_node("Tile", ["x", "r"], ["y"])], {"x": x}, x.dtype, opset,
              {"r": np.array(repeats, np.int64)})
    check(m, {"x": x})


@pytest.mark.parametrize("opset", [8, 13, NEWEST])
@pytest.mark.parametrize("in_shape,shape", [((3, 1), (2, 3, 4)), ((3, 1), (3, 1)), ((1, 4), (3, 1)),
                                            ((2, 1, 3), (1, 5, 1)), ((4,), (2, 1, 4))])
def test_expand(opset: int, in_shape: tuple, shape: tuple) -> None:
    x = data(in_shape, np.bool_ if opset == 13 else np.float32)
    m = build([helper.make_node("Expand", ["x", "s"], ["y"])], {"x": x}, x.dtype, opset,
              {"s": np.array(shape, np.int64)})
    check(m, {"x": x})


# -------------------------------------------------------------------------------- block layouts

@pytest.mark.parametrize("opset,mode", [(7, None), (11, "DCR"), (11, "CRD"), (NEWEST, "CRD"), (NEWEST, None)])
def test_depth_to_space(opset: int, mode: str | None) -> None:
    x = data((2, 8, 3, 4))
    attrs = {"blocksize": 2} | ({"mode": mode} if mode else {})
    check(build([helper.make_node("DepthToSpace", ["x"], ["y"], **attrs)], {"x": x}, np.float32, opset), {"x": x})


S2D_MODES = ["DCR", "CRD"] if "mode" in onnx.defs.get_schema("SpaceToDepth", NEWEST).attributes else []


@pytest.mark.parametrize("opset,mode", [(7, None), (13, None), (NEWEST, None)] + [(NEWEST, m) for m in S2D_MODES])
@pytest.mark.parametrize("blocksize", [2, 3])
def test_space_to_depth(opset: int, mode: str | None, blocksize: int) -> None:
    x = data((1, 3, 6, 12), np.float64 if opset == 13 else np.float32)
    attrs = {"blocksize": blocksize} | ({"mode": mode} if mode else {})
    m = build([helper.make_node("SpaceToDepth", ["x"], ["y"], **attrs)], {"x": x}, x.dtype, opset)
    check(m, {"x": x})


# ---------------------------------------------------------------------- constant index patterns

@pytest.mark.parametrize("opset", [14, NEWEST])
@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, 0, 2, -1, -7, 9])
def test_trilu(opset: int, upper: int, k: int | None) -> None:
    x = data((2, 4, 5), np.int64 if upper else np.float32)
    x[0, 0, 0] = np.nan if x.dtype == np.float32 else x[0, 0, 0]  # no NaN * 0: masked elements are real zeros
    inits = {} if k is None else {"k": np.array(k, np.int64)}
    m = build([helper.make_node("Trilu", ["x"] + (["k"] if k is not None else []), ["y"], upper=upper)],
              {"x": x}, x.dtype, opset, inits)
    check(m, {"x": x})


@pytest.mark.parametrize("opset", [9, 11, NEWEST])
@pytest.mark.parametrize("axis,condition", [(0, [1, 0, 1]), (1, [0, 1]), (-1, [1, 1, 0, 1, 0]), (None, [0, 1, 1, 0, 1])])
def test_compress(opset: int, axis: int | None, condition: list[int]) -> None:
    if axis == -1 and opset < 11:
        axis = 2
    x = data((3, 2, 5))
    attrs = {} if axis is None else {"axis": axis}
    m = build([helper.make_node("Compress", ["x", "c"], ["y"], **attrs)], {"x": x}, np.float32, opset,
              {"c": np.array(condition, bool)})
    check(m, {"x": x})


@pytest.mark.parametrize("batch_axis,time_axis", [(1, 0), (0, 1)])
def test_reverse_sequence(batch_axis: int, time_axis: int) -> None:
    x = data((4, 4, 3) if batch_axis else (4, 5, 2))
    lens = np.array([4, 1, 3, 0] if batch_axis else [5, 2, 1, 3], np.int64)
    m = build([helper.make_node("ReverseSequence", ["x", "l"], ["y"], batch_axis=batch_axis, time_axis=time_axis)],
              {"x": x}, np.float32, 10, {"l": lens})
    check(m, {"x": x})


@pytest.mark.parametrize("opset", [9, 11, NEWEST])
@pytest.mark.parametrize("axis", [None, 0, 1, -2])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_one_hot_computed_indices(opset: int, axis: int | None, index_dtype) -> None:
    idx = rng.integers(-5 if opset >= 11 else 0, 5, size=(3, 2)).astype(index_dtype)
    attrs = {} if axis is None else {"axis": axis}
    m = build([helper.make_node("OneHot", ["i", "d", "v"], ["y"], **attrs)], {"i": idx}, np.float32, opset,
              {"d": np.array(5, index_dtype), "v": np.array([0.0, 3.5], np.float32)})  # onnxruntime's type pairs
    check(m, {"i": idx})


def test_one_hot_constant_indices_fold() -> None:
    x = data((2, 3, 4))
    m = build([helper.make_node("OneHot", ["i", "d", "v"], ["h"], axis=1), helper.make_node("Add", ["h", "x"], ["y"])],
              {"x": x}, np.float32, 11, {"i": np.array([[0, -1, 7, 3], [1, 2, 2, -4]], np.int64),
                                         "d": np.array(3, np.int64), "v": np.array([-1, 2], np.float32)})
    check(m, {"x": x})


@pytest.mark.parametrize("axis", [-1, 0])
def test_one_hot_computed_indices_out_of_range_give_off_values(axis: int) -> None:
    """ONNX: an index outside [-depth, depth) gives a row of off values (onnxruntime agrees); the
    off value need not be 0."""
    idx = np.array([[1, -3, 3], [-4, 9, -1]], np.int64)
    m = build([helper.make_node("OneHot", ["i", "d", "v"], ["y"], axis=axis)], {"i": idx}, np.float32, 11,
              {"d": np.array(3, np.int64), "v": np.array([-1.5, 2], np.float32)})
    check(m, {"i": idx})


@pytest.mark.parametrize("dtype,k", [(None, 0), (1, 1), (7, -2)])
def test_eye_like_and_size(dtype: int | None, k: int) -> None:
    x = data((3, 4))
    attrs = {"k": k} | ({"dtype": dtype} if dtype is not None else {})
    out = np.float32 if dtype in (None, 1) else np.int64
    nodes = [helper.make_node("EyeLike", ["x"], ["e"], **attrs), helper.make_node("Size", ["x"], ["s"]),
             helper.make_node("Identity", ["e"], ["y"])]
    m = build(nodes, {"x": x}, out, 13, outputs=("y",))
    check(m, {"x": x})
    graph = import_onnx(m)
    assert graph.outputs[0].is_const
