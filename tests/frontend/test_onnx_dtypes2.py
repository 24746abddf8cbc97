"""Narrow element types (bf16, float8, f4e2m1, int4/uint4/int2/uint2): Cast, CastLike, QuantizeLinear
and DequantizeLinear compiled for the host and run, and the numpy reference (iree_py.ir.reference).

References, all compared exactly (bit for bit on the codes; NaN equals NaN):
- decoding (narrow -> f32): every code of every 8-bit type and every bf16 code, against ml_dtypes;
- encoding (f32 -> narrow): values at, between and exactly halfway between neighbouring codes
  (round to nearest even), subnormals, overflow, inf and NaN, against onnxruntime where its CPU
  provider implements the cast (bf16, float8, int4/uint4/int2/uint2: these round half away from
  zero, then wrap), else against the ONNX reference implementation
  (onnx.reference.ReferenceEvaluator: f4e2m1);
- saturate=0 against onnxruntime; quantization against the ONNX reference implementation.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import iree_py
from iree_py.frontends.onnx import import_onnx
from iree_py.ir.reference import evaluate

NARROW = {"bf16": (TensorProto.BFLOAT16, ml_dtypes.bfloat16),
          "f8e4m3fn": (TensorProto.FLOAT8E4M3FN, ml_dtypes.float8_e4m3fn),
          "f8e4m3fnuz": (TensorProto.FLOAT8E4M3FNUZ, ml_dtypes.float8_e4m3fnuz),
          "f8e5m2": (TensorProto.FLOAT8E5M2, ml_dtypes.float8_e5m2),
          "f8e5m2fnuz": (TensorProto.FLOAT8E5M2FNUZ, ml_dtypes.float8_e5m2fnuz),
          "f4e2m1": (TensorProto.FLOAT4E2M1, ml_dtypes.float4_e2m1fn),
          "i4": (TensorProto.INT4, ml_dtypes.int4), "u4": (TensorProto.UINT4, ml_dtypes.uint4),
          "i2": (TensorProto.INT2, ml_dtypes.int2), "u2": (TensorProto.UINT2, ml_dtypes.uint2)}
FLOAT8 = ["f8e4m3fn", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz"]
NARROW_FLOATS = ["bf16", *FLOAT8, "f4e2m1"]
NARROW_INTS = ["i4", "u4", "i2", "u2"]
ORT_CASTS = {"bf16", *FLOAT8, *NARROW_INTS}  # onnxruntime's CPU provider casts f32 to these
WIDE = {"f32": (TensorProto.FLOAT, np.float32), "f16": (TensorProto.FLOAT16, np.float16),
        "i8": (TensorProto.INT8, np.int8), "u8": (TensorProto.UINT8, np.uint8)}
TYPES = {**NARROW, **WIDE}


def _model(nodes: list, inputs: dict[str, tuple[str, tuple[int, ...]]], outputs: dict[str, str], opset: int = 25):
    graph = helper.make_graph(
        nodes, "test", [helper.make_tensor_value_info(n, TYPES[d][0], s) for n, (d, s) in inputs.items()],
        [helper.make_tensor_value_info(n, TYPES[d][0], None) for n, d in outputs.items()])
    opset_id = helper.make_opsetid("", opset)
    m = helper.make_model(graph, opset_imports=[opset_id])
    m.ir_version = 11
    return m


def _run_compiled(m, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target="host"), device="local")
    return list(module.main.call(*feeds.values()))


def _assert_same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Equal values of the same dtype, NaN equal to NaN (codes may differ in the NaN payload)."""
    assert got.dtype == want.dtype and got.shape == want.shape, \
        f"{what}: {got.dtype}{got.shape} != {want.dtype}{want.shape}"
    with np.errstate(all="ignore"):
        g, w = got.astype(np.float64), want.astype(np.float64)
    same = (g == w) | (np.isnan(g) & np.isnan(w))
    same &= (np.signbit(g) == np.signbit(w)) | np.isnan(w)  # -0 stays -0
    bad = np.flatnonzero(~same)
    assert bad.size == 0, \
        f"{what}: {bad.size} differ, first at {bad[0]}: got {got.flat[bad[0]]!r}, want {want.flat[bad[0]]!r}"


def _all_codes(name: str) -> np.ndarray:
    """Every code of the type (bf16: all 65536, others one byte: every valid byte value)."""
    numpy_type = NARROW[name][1]
    if name == "bf16":
        return np.arange(1 << 16, dtype=np.uint16).view(numpy_type)
    width = {"f4e2m1": 4, "i4": 4, "u4": 4, "i2": 2, "u2": 2}.get(name, 8)
    return np.arange(1 << width, dtype=np.uint8).view(numpy_type)


def _probe_values(name: str) -> np.ndarray:
    """f32 values at every finite code, halfway between neighbours (ties), a hair either side of
    each halfway point, beyond the largest value, subnormal f32s, zeros, infinities and NaN."""
    codes = _all_codes(name).astype(np.float32)
    finite = np.unique(codes[np.isfinite(codes)])
    if name == "bf16":
        finite = finite[::97]  # a spread of exponents is enough for the 2-byte type
    mids = ((finite[:-1].astype(np.float64) + finite[1:]) / 2).astype(np.float32)
    extra = np.array([1e-45, -1e-45, 1e-39, -3e-39, 0.0, -0.0, np.inf, -np.inf, np.nan, 3.4e38, -3.4e38,
                      1e6, -1e6, 70000.0, 500.0, 250.0, 7.0, -13.0, 100.0], np.float32)
    values = [finite, mids, np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf)),
              finite * np.float32(1.0001), extra]
    if name in NARROW_INTS:
        values = [np.arange(-20, 21, dtype=np.float32) * np.float32(0.75)]  # wraps; truncates
    return np.concatenate(values).astype(np.float32)


@pytest.mark.parametrize("name", NARROW_FLOATS + NARROW_INTS)
def test_decode_every_code(name: str) -> None:
    """narrow -> f32 (and -> f16, i8 for integers) of every code, compiled and reference."""
    x = _all_codes(name)
    wide = "i8" if name in NARROW_INTS else "f32"
    m = _model([helper.make_node("Cast", ["x"], ["y"], to=WIDE[wide][0]),
                helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16)],
               {"x": (name, x.shape)}, {"y": wide, "h": "f16"})
    with np.errstate(all="ignore"):
        want = [x.astype(WIDE[wide][1]), x.astype(np.float32).astype(np.float16)]
    for got, label in ((_run_compiled(m, {"x": x}), "compiled"), (evaluate(import_onnx(m), {"x": x}), "reference")):
        _assert_same(got[0], want[0], f"{name} -> {wide} ({label})")
        _assert_same(got[1], want[1], f"{name} -> f16 ({label})")


def _expected_cast(m, feeds: dict[str, np.ndarray], name: str, output: str) -> np.ndarray:
    """Output `output` (f32; onnxruntime hands no narrow type back to numpy) of the reference."""
    if name in ORT_CASTS:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        session = ort.InferenceSession(m.SerializeToString(), options, providers=["CPUExecutionProvider"])
        return session.run([output], feeds)[0]
    return ReferenceEvaluator(m).run([output], feeds)[0]


@pytest.mark.parametrize("name", NARROW_FLOATS + NARROW_INTS)
def test_encode_rounds_to_nearest_even(name: str) -> None:
    """f32 -> narrow (saturating), compiled and reference, against onnxruntime / the ONNX reference;
    the second output casts back to f32 inside the same kernel."""
    x = _probe_values(name)
    m = _model([helper.make_node("Cast", ["x"], ["y"], to=NARROW[name][0]),
                helper.make_node("Cast", ["y"], ["back"], to=TensorProto.FLOAT)],
               {"x": ("f32", x.shape)}, {"y": name, "back": "f32"})
    back = _expected_cast(m, {"x": x}, name, "back")
    for got, label in ((_run_compiled(m, {"x": x}), "compiled"), (evaluate(import_onnx(m), {"x": x}), "reference")):
        _assert_same(got[0], back.astype(NARROW[name][1]), f"f32 -> {name} ({label})")
        _assert_same(got[1], back, f"f32 -> {name} -> f32 ({label})")


@pytest.mark.parametrize("name", FLOAT8)
@pytest.mark.parametrize("source", ["f32", "f16"])
def test_cast_without_saturation(name: str, source: str) -> None:
    """saturate=0: overflow gives inf (e5m2) or NaN; against onnxruntime (opset 21)."""
    with np.errstate(over="ignore"):
        x = _probe_values(name).astype(WIDE[source][1])
    m = _model([helper.make_node("Cast", ["x"], ["y"], to=NARROW[name][0], saturate=0),
                helper.make_node("Cast", ["y"], ["back"], to=TensorProto.FLOAT)],
               {"x": (source, x.shape)}, {"y": name, "back": "f32"})
    back = _expected_cast(m, {"x": x}, name, "back")
    for got, label in ((_run_compiled(m, {"x": x}), "compiled"), (evaluate(import_onnx(m), {"x": x}), "reference")):
        _assert_same(got[0], back.astype(NARROW[name][1]), f"{source} -> {name} saturate=0 ({label})")
        _assert_same(got[1], back, f"{source} -> {name} saturate=0 -> f32 ({label})")


@pytest.mark.parametrize("name", FLOAT8 + ["f4e2m1"] + NARROW_INTS)
def test_quantize_dequantize_round_trip(name: str) -> None:
    """QuantizeLinear with per-axis scale and zero point as graph inputs, then DequantizeLinear, against
    the ONNX reference implementation."""
    rng = np.random.default_rng(len(name))
    x = (rng.standard_normal((3, 8)) * 6).astype(np.float32)
    scale = np.array([0.5, 1.0, 3.0], np.float32)
    zero = np.array([0, 1, 0] if name in NARROW_INTS else [0, 0, 0], np.float32).astype(NARROW[name][1])
    m = _model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=0),
                helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=0)],
               {"x": ("f32", x.shape), "s": ("f32", (3,)), "z": (name, (3,))}, {"q": name, "y": "f32"})
    feeds = {"x": x, "s": scale, "z": zero}
    want = ReferenceEvaluator(m).run(None, feeds)
    for got, label in ((_run_compiled(m, feeds), "compiled"), (evaluate(import_onnx(m), feeds), "reference")):
        _assert_same(got[0], want[0], f"QuantizeLinear to {name} ({label})")
        _assert_same(got[1], want[1], f"DequantizeLinear of {name} ({label})")


@pytest.mark.parametrize("name", ["f8e4m3fn", "f8e5m2"])
def test_quantize_to_float8_by_output_dtype_without_saturation(name: str) -> None:
    """No zero point: output_dtype names the type; saturate=0 lets large values overflow."""
    x = np.array([0.3, -1.7, 900.0, -5e5, 60.0, np.inf, -np.inf, 0.0], np.float32)
    m = _model([helper.make_node("QuantizeLinear", ["x", "s"], ["q"], output_dtype=NARROW[name][0], saturate=0),
                helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT)],
               {"x": ("f32", x.shape), "s": ("f32", ())}, {"q": name, "y": "f32"})
    feeds = {"x": x, "s": np.array(0.5, np.float32)}
    want = ReferenceEvaluator(m).run(None, feeds)
    for got, label in ((_run_compiled(m, feeds), "compiled"), (evaluate(import_onnx(m), feeds), "reference")):
        _assert_same(got[0], want[0], f"QuantizeLinear to {name}, saturate=0 ({label})")
        _assert_same(got[1], want[1], f"QuantizeLinear to {name}, saturate=0, back to f32 ({label})")

