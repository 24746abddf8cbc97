"""TFLite's fixed-point helpers and quantize_multiplier (iree_py/ir/quant_math.py) on hand-computed
values, the reference kernels of the quantized ops (ir/ops/quantized.py) on small hand-checked
cases and against float math, and the shape rules' refusals."""
from __future__ import annotations

import numpy as np
import pytest

from iree_py.ir import quant_math as qm
from iree_py.ir.build import NameTable, constant, make_node
from iree_py.ir.graph import Graph, Value
from iree_py.ir.ops import infer_types
from iree_py.ir.reference import KERNELS
from iree_py.ir.text import parse_graph, print_graph
from iree_py.ir.types import DType, TensorType

I32_MIN, I32_MAX = qm.INT32_MIN, qm.INT32_MAX


@pytest.mark.parametrize("a,b,want", [
    (I32_MIN, I32_MIN, I32_MAX),            # the one product that does not fit: saturates
    (I32_MIN, I32_MAX, -I32_MAX),           # 2ab / 2**32 = -(2**31 - 1) exactly
    (1 << 30, 1 << 30, 1 << 29),            # 2 * 2**60 / 2**32
    (3, 1 << 30, 2),                        # 1.5 rounds up (nudge 2**30)
    (-3, 1 << 30, -1),                      # -1.5: nudge 1 - 2**30 then truncating division gives -1
    (5, 1 << 30, 3),                        # 2.5 -> 3
    (-5, 1 << 30, -2),                      # -2.5 -> -2
    (1, 1, 0), (-1, 1, 0), (0, I32_MIN, 0),
    (1000, 1 << 29, 250),                   # 2 * 1000 * 2**29 / 2**32
])
def test_saturating_rounding_doubling_high_mul(a: int, b: int, want: int) -> None:
    assert int(qm.saturating_rounding_doubling_high_mul(a, b)) == want


@pytest.mark.parametrize("x,exponent,want", [
    (5, 1, 3), (-5, 1, -3), (6, 2, 2), (-6, 2, -2), (7, 2, 2), (-7, 2, -2), (4, 2, 1),
    (3, 1, 2), (-3, 1, -2), (1, 1, 1), (-1, 1, -1), (I32_MAX, 31, 1), (I32_MIN, 31, -1), (123, 0, 123),
])
def test_rounding_divide_by_pot_ties_away_from_zero(x: int, exponent: int, want: int) -> None:
    assert int(qm.rounding_divide_by_pot(x, exponent)) == want


def test_multiply_by_quantized_multiplier() -> None:
    half = (1 << 30, 0)       # 0.5
    assert list(qm.multiply_by_quantized_multiplier([1000, -1000, 3, -3, 1], *half)) == [500, -500, 2, -1, 1]
    # 0.75 * 2**2 = 3: left shift first, then the high multiply
    assert list(qm.multiply_by_quantized_multiplier([7, -7], 3 << 29, 2)) == [21, -21]
    # 0.5 * 2**-3 = 1/16: 24/16 = 1.5 -> 2, -24/16 -> -2 (RoundingDivideByPOT ties away from zero)
    assert list(qm.multiply_by_quantized_multiplier([24, -24, 8, -8], 1 << 30, -3)) == [2, -2, 1, -1]
    # per-channel broadcasting
    assert list(qm.multiply_by_quantized_multiplier([100, 100], [1 << 30, 3 << 29], [0, -1])) == [50, 38]
    # the left shift wraps like the int32 multiply of the C code
    assert int(qm.multiply_by_quantized_multiplier(1 << 30, 1 << 30, 2)) == 0
    assert list(qm.multiply_by_quantized_multiplier_smaller_than_one_exp([24, -24], 1 << 30, -3)) == [2, -2]
    with pytest.raises(ValueError, match="left_shift"):
        qm.multiply_by_quantized_multiplier_smaller_than_one_exp(1, 1 << 30, 1)


@pytest.mark.parametrize("real,want", [
    (0.0, (0, 0)),
    (0.5, (1 << 30, 0)),
    (1.0, (1 << 30, 1)),
    (0.75, (3 << 29, 0)),
    (3.0, (3 << 29, 2)),
    (1.0 - 2.0 ** -40, (1 << 30, 1)),   # the mantissa rounds up to 1.0: halved, shift + 1
    (2.0 ** -40, (0, 0)),               # shift below -31: flushed to zero
    (2.0 ** 40, (I32_MAX, 30)),         # shift above 30: clamped
    (0.0123, (1690499128, -6)),
])
def test_quantize_multiplier(real: float, want: tuple[int, int]) -> None:
    assert qm.quantize_multiplier(real) == want


def test_quantize_multiplier_rounds_half_away_from_zero() -> None:
    # a mantissa whose Q31 value is exactly 2**30 + 0.5
    real = (2**30 + 0.5) / 2**31
    assert qm.quantize_multiplier(real) == (2**30 + 1, 0)
    m, s = qm.quantize_multiplier(0.3)
    assert abs(m * 2.0 ** (s - 31) - 0.3) < 2 ** -31


def test_quantize_roundings_and_clamp() -> None:
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 1000.0, -1000.0, np.nan], np.float32)
    attrs = {"axis": -1, "scale": [1.0], "zero_point": [0], "dtype": "i8"}
    even = KERNELS["Quantize"]([x], dict(attrs, rounding="half_even"))
    away = KERNELS["Quantize"]([x], dict(attrs, rounding="half_away"))
    assert even.dtype == np.int8
    assert list(even) == [-2, -2, 0, 0, 2, 2, 127, -128, 0]
    assert list(away) == [-3, -2, -1, 1, 2, 3, 127, -128, 0]
    u8 = KERNELS["Quantize"]([x[:6]], {"axis": -1, "scale": [0.5], "zero_point": [10], "dtype": "u8",
                                       "rounding": "half_even"})
    assert u8.dtype == np.uint8 and list(u8) == [5, 7, 9, 11, 13, 15]


def test_quantize_and_dequantize_per_channel() -> None:
    x = np.array([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]], np.float32)
    q = KERNELS["Quantize"]([x], {"axis": 0, "scale": [1.0, 0.5, 0.25], "zero_point": [0, 1, -1], "dtype": "i8",
                                  "rounding": "half_even"})
    assert q.tolist() == [[1, 2], [3, 5], [3, 7]]
    d = KERNELS["Dequantize"]([q], {"axis": 0, "scale": [1.0, 0.5, 0.25], "zero_point": [0, 1, -1]})
    assert d.dtype == np.float32 and d.tolist() == x.tolist()
    acc = np.array([1000, -7], np.int32)
    assert KERNELS["Dequantize"]([acc], {"axis": -1, "scale": [0.5], "zero_point": [0]}).tolist() == [500.0, -3.5]


def _requant(mode: str, real: float, **over) -> dict:
    attrs = {"x_zero_point": 0, "w_zero_point": [0], "y_zero_point": 0, "out_dtype": "i8", "act_min": -128,
             "act_max": 127, "requant": mode, "multiplier": [], "shift": [], "scale": []}
    if mode == "fixed":
        m, s = qm.quantize_multiplier(real)
        attrs.update(multiplier=[m], shift=[s])
    else:
        attrs["scale"] = [real]
    attrs.update(over)
    return attrs


def test_qmatmul_by_hand() -> None:
    a = np.array([[3, -2]], np.int8)            # minus x_zero_point 1: [2, -3]
    b = np.array([[4, 1], [2, -5]], np.int8)    # minus w_zero_point [0, -1]: [[4, 2], [2, -4]]
    bias = np.array([10, -1], np.int32)
    # acc = [2*4 - 3*2 + 10, 2*2 + 3*4 - 1] = [12, 15]; * 0.5 = [6, 7.5] -> half even 8 / fixed ties away 8
    for mode in ("fixed", "float"):
        attrs = _requant(mode, 0.5, x_zero_point=1, w_zero_point=[0, -1], y_zero_point=-3)
        assert KERNELS["QMatMul"]([a, b, bias], attrs).tolist() == [[3, 5]]
    # 13 * 0.5 = 6.5: float rounds half to even (6), fixed point away from zero (7)
    attrs = _requant("float", 0.5, act_min=-2, act_max=100)
    assert KERNELS["QMatMul"]([np.array([[13]], np.int8), np.array([[1]], np.int8)], attrs).tolist() == [[6]]
    attrs = _requant("fixed", 0.5)
    assert KERNELS["QMatMul"]([np.array([[13]], np.int8), np.array([[1]], np.int8)], attrs).tolist() == [[7]]
    attrs = _requant("fixed", 0.5, act_min=-2, act_max=5)
    column = np.array([[13], [-13]], np.int8)
    assert KERNELS["QMatMul"]([column, np.array([[1]], np.int8)], attrs).tolist() == [[5], [-2]]


def test_qconv_matches_float_conv_when_exact() -> None:
    """With scale 1 the requantized result is the float conv of the zero-point-shifted values."""
    rng = np.random.default_rng(0)
    x = rng.integers(-5, 6, (1, 2, 5, 5)).astype(np.int8)
    w = rng.integers(-3, 4, (4, 1, 3, 3)).astype(np.int8)
    attrs = dict(_requant("float", 1.0, x_zero_point=2, w_zero_point=[1, 0, -1, 2]), group=2, strides=[1, 2],
                 pads=[1, 1, 0, 1], dilations=[1, 1])
    got = KERNELS["QConv"]([x, w], attrs)
    conv_attrs = {k: attrs[k] for k in ("group", "strides", "pads", "dilations")}
    xf = x.astype(np.float32) - 2
    xf = np.pad(xf, ((0, 0), (0, 0), (1, 0), (1, 1)))  # padding holds the zero point: 0 after the shift
    wf = w.astype(np.float32) - np.array([1, 0, -1, 2], np.float32).reshape(4, 1, 1, 1)
    want = KERNELS["Conv"]([xf, wf], dict(conv_attrs, pads=[0, 0, 0, 0]))
    assert got.tolist() == np.clip(want, -128, 127).astype(np.int8).tolist()


def test_qadd_by_hand() -> None:
    # left_shift 2 and every multiplier 0.5: ((a - a_zp) * 4 / 2 + (b - b_zp) * 4 / 2) / 2, exact
    attrs = {"a_zero_point": 1, "b_zero_point": -1, "y_zero_point": 5, "left_shift": 2, "a_multiplier": 1 << 30,
             "a_shift": 0, "b_multiplier": 1 << 30, "b_shift": 0, "y_multiplier": 1 << 30, "y_shift": 0,
             "act_min": -128, "act_max": 20, "out_dtype": "i8"}
    a = np.array([9, -7, 101], np.int8)
    b = np.array([[-1], [3]], np.int8)
    # (a - 1) * 4 / 2 + (b + 1) * 4 / 2, then / 2: (a - 1) + (b + 1), + 5, clamped to 20
    want = np.clip((a.astype(int) - 1) + (b.astype(int) + 1) + 5, -128, 20)
    assert KERNELS["QAdd"]([a, b], attrs).tolist() == want.tolist()


def test_qaverage_pool_rounds_as_tflite() -> None:
    x = np.array([[[[1, 2], [2, 2]]]], np.int8)       # sum 7, count 4: (7 + 2) / 4 = 2
    y = np.array([[[[-1, -2], [-2, -2]]]], np.int8)   # (-7 - 2) / 4 = -2 (truncating)
    z = np.array([[[[-1, -1], [0, 0]]]], np.int8)     # (-2 - 2) / 4 = -1
    attrs = {"kernel": [2, 2], "strides": [1, 1], "pads": [0, 0, 0, 0], "ceil_mode": 0, "count_include_pad": 0,
             "act_min": -128, "act_max": 127}
    assert [KERNELS["QAveragePool"]([v], attrs).item() for v in (x, y, z)] == [2, -2, -1]
    assert KERNELS["QAveragePool"]([x], dict(attrs, act_min=3)).item() == 3
    padded = KERNELS["QAveragePool"]([x], dict(attrs, pads=[1, 1, 0, 0]))  # corner: 1 / 1
    assert padded[0, 0, 0, 0] == 1
    assert KERNELS["MaxPool"]([x.astype(np.uint8)], {"kernel": [2, 2], "strides": [1, 1], "pads": [1, 1, 1, 1],
                                                     "dilations": [1, 1], "ceil_mode": 0})[0, 0].tolist() == \
        [[1, 2, 2], [2, 2, 2], [2, 2, 2]]


def _t(dtype: str, *shape: int) -> TensorType:
    return TensorType(DType(dtype), shape)


@pytest.mark.parametrize("op,inputs,attrs,message", [
    ("Quantize", [_t("i8", 2)], {"axis": -1, "scale": [1.0], "zero_point": [0], "dtype": "i8", "rounding": "half_even"},
     "must be f32"),
    ("Quantize", [_t("f32", 2, 3)], {"axis": 1, "scale": [1.0, 2.0], "zero_point": [0, 0], "dtype": "i8",
                                     "rounding": "half_even"}, "list of 1 or 3"),
    ("Quantize", [_t("f32", 2)], {"axis": -1, "scale": [1.0], "zero_point": [200], "dtype": "i8",
                                  "rounding": "half_even"}, r"\[-128, 127\]"),
    ("Quantize", [_t("f32", 2)], {"axis": -1, "scale": [0.0], "zero_point": [0], "dtype": "u8",
                                  "rounding": "half_even"}, "positive"),
    ("Quantize", [_t("f32", 2)], {"axis": -1, "scale": [1.0], "zero_point": [0], "dtype": "u8",
                                  "rounding": "up"}, "rounding"),
    ("Dequantize", [_t("f32", 2)], {"axis": -1, "scale": [1.0], "zero_point": [0]}, "i8, u8 or i32"),
    ("QMatMul", [_t("i8", 2, 3), _t("i8", 3, 4), _t("f32", 4)], _requant("fixed", 0.1), "bias must be i32"),
    ("QMatMul", [_t("i8", 2, 3), _t("i8", 3, 4)], _requant("fixed", 0.1, scale=[0.1]), "takes scale"),
    ("QMatMul", [_t("i8", 2, 3), _t("i8", 3, 4)], _requant("float", 0.1, multiplier=[1]), "takes multiplier"),
    ("QMatMul", [_t("i8", 2, 3), _t("i8", 3, 4)], _requant("fixed", 0.1, requant="double"), "requant must be"),
    ("QMatMul", [_t("i8", 2, 3), _t("i8", 3, 4)], _requant("fixed", 0.1, act_min=5, act_max=4), "act_min 5 >"),
    ("QMatMul", [_t("i8", 2, 3), _t("f32", 3, 4)], _requant("fixed", 0.1), "must be i8 or u8"),
    ("QMatMul", [_t("i8", 2, 3), _t("i8", 3, 4)], _requant("float", 0.1, w_zero_point=[0, 0]), "list of 1 or 4"),
    ("QAdd", [_t("i8", 2, 3), _t("i8", 4)], {"a_zero_point": 0, "b_zero_point": 0, "y_zero_point": 0,
                                             "left_shift": 20, "a_multiplier": 1, "a_shift": 0, "b_multiplier": 1,
                                             "b_shift": 0, "y_multiplier": 1, "y_shift": 0, "act_min": -128,
                                             "act_max": 127, "out_dtype": "i8"}, "do not broadcast"),
    ("QAdd", [_t("i8", 2), _t("i8", 2)], {"a_zero_point": 0, "b_zero_point": 0, "y_zero_point": 0,
                                          "left_shift": 20, "a_multiplier": 1, "a_shift": 3, "b_multiplier": 1,
                                          "b_shift": 0, "y_multiplier": 1, "y_shift": 0, "act_min": -128,
                                          "act_max": 127, "out_dtype": "i8"}, "shifts"),
])
def test_shape_rules_refuse(op: str, inputs: list[TensorType], attrs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        infer_types(op, inputs, attrs)


def test_qconv_shape_and_text_round_trip() -> None:
    attrs = dict(_requant("fixed", 0.01, w_zero_point=[0] * 8), group=4, strides=[2, 2], pads=[1, 1, 1, 1],
                 dilations=[1, 1])
    attrs.update(multiplier=[1 << 30] * 8, shift=[-3] * 8)
    out = infer_types("QConv", [_t("u8", 1, 4, 9, 9), _t("i8", 8, 1, 3, 3), _t("i32", 8)], attrs)
    assert out == [_t("i8", 1, 8, 5, 5)]
    names = NameTable()
    x = Value("x", _t("u8", 1, 4, 9, 9))
    w = constant(names, "w", np.ones((8, 1, 3, 3), np.int8))
    node = make_node(names, "QConv", [x, w], attrs, name="qc")
    graph = Graph("main", [x], node.outputs, [node], ["y"])
    printed = print_graph(graph)
    assert print_graph(parse_graph(printed)) == printed
    assert 'requant = "fixed"' in printed and "scale = []" in printed
