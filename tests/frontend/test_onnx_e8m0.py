"""f8e8m0 (exponent-only MX scale type, iree_py/ir/narrow_types.py) through Cast, compiled for the host
and run, and the numpy reference (iree_py.ir.reference), compared bit for bit on the codes:
- decoding: every one of the 256 codes to f32 and to f16, against ml_dtypes;
- encoding (Cast's default round_mode="up", saturate=1) from f32 and f16: powers of two, values a
  hair above and below them, zero, subnormals, the top of the range, inf and NaN, against
  onnx.numpy_helper.to_float8e8m0 (what the ONNX tests' expected data comes from);
- the other round modes and saturate=0 refused at compile time, naming node, op and opset.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import iree_py
from iree_py.errors import CompileError
from iree_py.frontends.onnx import import_onnx
from iree_py.ir.reference import evaluate

E8M0 = ml_dtypes.float8_e8m0fnu
ELEM = {"e8m0": TensorProto.FLOAT8E8M0, "f32": TensorProto.FLOAT, "f16": TensorProto.FLOAT16}


def _model(nodes: list, inputs: dict[str, tuple[str, tuple[int, ...]]], outputs: dict[str, str]):
    graph = helper.make_graph(nodes, "e8m0", [helper.make_tensor_value_info(n, ELEM[d], s) for n, (d, s) in inputs.items()],
                              [helper.make_tensor_value_info(n, ELEM[d], None) for n, d in outputs.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
    m.ir_version = 11
    return m


def _both(m, feeds: dict[str, np.ndarray]) -> list[tuple[str, list[np.ndarray]]]:
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device="local")
    return [("compiled", list(module.main.call(*feeds.values()))), ("reference", evaluate(import_onnx(m), feeds))]


def _same_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, f"{what}: {got.dtype}{got.shape}"
    g, w = got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}")
    if got.dtype.kind == "f":  # any NaN payload
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan), what
        g, w = g[~nan], w[~nan]
    bad = np.flatnonzero(g != w)
    assert bad.size == 0, f"{what}: {bad.size} differ, first at {bad[0]}: {got.flat[bad[0]]!r} vs {want.flat[bad[0]]!r}"


def test_decode_every_code() -> None:
    x = np.arange(256, dtype=np.uint8).view(E8M0)
    m = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT),
                helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16)], {"x": ("e8m0", (256,))},
               {"y": "f32", "h": "f16"})
    with np.errstate(all="ignore"):
        want = [x.astype(np.float32), x.astype(np.float32).astype(np.float16)]
    for label, got in _both(m, {"x": x}):
        _same_bits(got[0], want[0], f"e8m0 -> f32 ({label})")
        _same_bits(got[1], want[1], f"e8m0 -> f16 ({label})")


def _probe() -> np.ndarray:
    powers = np.ldexp(np.float32(1.0), np.arange(-149, 128)).astype(np.float32)
    return np.concatenate([powers, np.nextafter(powers, np.float32(np.inf)), np.nextafter(powers, np.float32(0)),
                           powers * np.float32(1.5), np.array([0.0, 0.124, 1.1, 3.4e38, np.finfo(np.float32).max,
                                                               np.inf, np.nan, 1e-45, 5.9e-39], np.float32)])


@pytest.mark.parametrize("source", ["f32", "f16"])
def test_encode_rounds_up_and_saturates(source: str) -> None:
    with np.errstate(over="ignore"):
        x = _probe().astype(np.float16 if source == "f16" else np.float32)
    m = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E8M0),
                helper.make_node("Cast", ["y"], ["back"], to=TensorProto.FLOAT)],
               {"x": (source, x.shape)}, {"y": "e8m0", "back": "f32"})
    want = numpy_helper.to_float8e8m0(x, saturate=True, round_mode="up")
    for label, got in _both(m, {"x": x}):
        _same_bits(got[0], want, f"{source} -> e8m0 ({label})")
        _same_bits(got[1], want.astype(np.float32), f"{source} -> e8m0 -> f32 ({label})")


@pytest.mark.parametrize("attrs,reason", [({"round_mode": "nearest"}, "round_mode='nearest'"),
                                          ({"round_mode": "down"}, "round_mode='down'"),
                                          ({"saturate": 0}, "saturate=0")])
def test_other_modes_are_refused(attrs: dict, reason: str) -> None:
    m = _model([helper.make_node("Cast", ["x"], ["y"], name="c", to=TensorProto.FLOAT8E8M0, **attrs)],
               {"x": ("f32", (3,))}, {"y": "e8m0"})
    with pytest.raises(CompileError, match=rf"node 'c' \(op Cast, opset 25\): attribute {reason}"):
        import_onnx(m)
