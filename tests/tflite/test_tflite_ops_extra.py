"""TFLite SPLIT, SPLIT_V, PACK, UNPACK, DEPTH_TO_SPACE (float and int8/uint8) and CAST, against the
TFLite interpreter: exact equality (the five ops only move data; CAST converts values as C's
static_cast)."""
from __future__ import annotations

import numpy as np
import pytest
from tflite_harness import complete_shapes, run_iree, run_tflite
from tflite_writer import Quant, TfliteModel

from iree_py.frontends.tflite.schema.DepthToSpaceOptions import DepthToSpaceOptionsT
from iree_py.frontends.tflite.schema.PackOptions import PackOptionsT
from iree_py.frontends.tflite.schema.SplitOptions import SplitOptionsT
from iree_py.frontends.tflite.schema.SplitVOptions import SplitVOptionsT
from iree_py.frontends.tflite.schema.UnpackOptions import UnpackOptionsT

RNG = np.random.default_rng(11)
DTYPES = [np.float32, np.int8, np.uint8, np.int32]


def _data(shape: tuple[int, ...], dtype) -> np.ndarray:
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(max(info.min, -1000), min(info.max, 1000) + 1, size=shape).astype(dtype)


def _quant(dtype) -> Quant | None:
    return Quant([0.05], [3]) if np.dtype(dtype) in (np.dtype(np.int8), np.dtype(np.uint8)) else None


def _check(m: TfliteModel, inputs: list[np.ndarray]) -> None:
    data = complete_shapes(m)
    got, want = run_iree(data, inputs), run_tflite(data, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, f"{g.dtype}{g.shape} != {w.dtype}{w.shape}"
        np.testing.assert_array_equal(g, w)


def _options(kind, **fields):
    opts = kind()
    for name, value in fields.items():
        setattr(opts, name, value)
    return opts


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis,count", [((2, 6, 3), 1, 3), ((4, 5), 0, 2), ((1, 4, 4, 6), -1, 3), ((3, 2), 1, 1)])
def test_split(dtype, shape: tuple[int, ...], axis: int, count: int) -> None:
    x = _data(shape, dtype)
    m = TfliteModel()
    ins = [m.const("axis", np.array([axis], np.int32)), m.input("x", shape, dtype, quant=_quant(dtype))]
    outs = [m.tensor(f"y{i}", dtype=dtype, quant=_quant(dtype)) for i in range(count)]
    m.op("SPLIT", ins, outs, _options(SplitOptionsT, numSplits=count))
    for o in outs:
        m.output(o)
    _check(m, [x])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis,sizes", [((2, 7, 3), 1, [2, -1, 1]), ((5, 4), 0, [5]), ((1, 3, 3, 8), 3, [3, 0, 5])])
def test_split_v(dtype, shape: tuple[int, ...], axis: int, sizes: list[int]) -> None:
    x = _data(shape, dtype)
    m = TfliteModel()
    ins = [m.input("x", shape, dtype, quant=_quant(dtype)), m.const("sizes", np.array(sizes, np.int32)),
           m.const("axis", np.array(axis, np.int32))]
    outs = [m.tensor(f"y{i}", dtype=dtype, quant=_quant(dtype)) for i in range(len(sizes))]
    m.op("SPLIT_V", ins, outs, _options(SplitVOptionsT, numSplits=len(sizes)))
    for o in outs:
        m.output(o)
    _check(m, [x])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis,count", [((2, 3), 0, 3), ((2, 3), 1, 2), ((2, 3), 2, 4), ((4,), -1, 1), ((1, 2, 2, 3), 3, 2)])
def test_pack(dtype, shape: tuple[int, ...], axis: int, count: int) -> None:
    xs = [_data(shape, dtype) for _ in range(count)]
    m = TfliteModel()
    ins = [m.input(f"x{i}", shape, dtype, quant=_quant(dtype)) for i in range(count)]
    out = m.tensor("y", dtype=dtype, quant=_quant(dtype))
    m.op("PACK", ins, [out], _options(PackOptionsT, valuesCount=count, axis=axis))
    m.output(out)
    _check(m, xs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis", [((3, 2, 4), 0), ((3, 2, 4), 1), ((3, 2, 4), -1), ((1, 5), 0)])
def test_unpack(dtype, shape: tuple[int, ...], axis: int) -> None:
    x = _data(shape, dtype)
    m = TfliteModel()
    xi = m.input("x", shape, dtype, quant=_quant(dtype))
    count = shape[axis]
    outs = [m.tensor(f"y{i}", dtype=dtype, quant=_quant(dtype)) for i in range(count)]
    m.op("UNPACK", [xi], outs, _options(UnpackOptionsT, num=count, axis=axis))
    for o in outs:
        m.output(o)
    _check(m, [x])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,block", [((1, 2, 3, 8), 2), ((2, 3, 2, 18), 3), ((1, 4, 4, 5), 1), ((1, 1, 2, 16), 4)])
def test_depth_to_space(dtype, shape: tuple[int, ...], block: int) -> None:
    m = TfliteModel()
    xi = m.input("x", shape, dtype, quant=_quant(dtype))
    y = m.tensor("y", dtype=dtype, quant=_quant(dtype))
    m.op("DEPTH_TO_SPACE", [xi], [y], _options(DepthToSpaceOptionsT, blockSize=block))
    m.output(y)
    _check(m, [_data(shape, dtype)])


def test_depth_to_space_refuses_a_block_that_does_not_divide_the_channels() -> None:
    import iree_py
    from iree_py.errors import CompileError
    m = TfliteModel()
    xi = m.input("x", (1, 2, 2, 6))
    y = m.tensor("y", (1, 4, 4, 1))
    m.op("DEPTH_TO_SPACE", [xi], [y], _options(DepthToSpaceOptionsT, blockSize=2))
    m.output(y)
    with pytest.raises(CompileError, match=r"operator 0 \(DEPTH_TO_SPACE\): block_size 2 must be >= 1 with "
                                           r"block_size\^2 dividing the 6 channels"):
        iree_py.compile(m.build())


def _cast_input(src, dst) -> np.ndarray:
    """Values every pair converts without C undefined behaviour (in range of the destination)."""
    src, dst = np.dtype(src), np.dtype(dst)
    if src == np.dtype(np.bool_):
        return RNG.integers(0, 2, size=(3, 7)).astype(np.bool_)
    low, high = -100.0, 100.0
    for t in (src, dst):
        if t.kind in "iu":
            low, high = max(low, float(np.iinfo(t).min)), min(high, float(np.iinfo(t).max))
    x = RNG.uniform(low, high, size=(3, 7))
    x[0, :3] = [0.0, low, high]
    if src.kind == "f":
        x[1, :4] = [-0.75, 0.75, 2.5, -2.5]    # truncation toward zero, not rounding
        x[1, :4] = np.clip(x[1, :4], low, high)
        return x.astype(src)
    return np.trunc(x).astype(src)


CAST_PAIRS = [(a, b) for a in (np.float32, np.int32, np.int64, np.uint8, np.int8, np.bool_, np.float16)
              for b in (np.float32, np.int32, np.int64, np.uint8, np.int8, np.bool_, np.float16)
              if a != b and not (a == np.float16 and b != np.float32)]


@pytest.mark.parametrize("src,dst", CAST_PAIRS, ids=lambda t: np.dtype(t).name)
def test_cast(src, dst) -> None:
    x = _cast_input(src, dst)
    m = TfliteModel()
    xi = m.input("x", x.shape, src)
    out = m.tensor("y", x.shape, dst)
    m.op("CAST", [xi], [out])
    m.output(out)
    _check(m, [x])


def test_split_feeds_pack() -> None:
    """SPLIT's outputs used by a later operator, in reverse order."""
    x = _data((2, 6), np.float32)
    m = TfliteModel()
    ins = [m.const("axis", np.array([1], np.int32)), m.input("x", (2, 6))]
    parts = [m.tensor(f"p{i}") for i in range(3)]
    m.op("SPLIT", ins, parts, _options(SplitOptionsT, numSplits=3))
    out = m.tensor("y")
    m.op("PACK", parts[::-1], [out], _options(PackOptionsT, valuesCount=3, axis=0))
    m.output(out)
    _check(m, [x])


def test_float16_quantized_model() -> None:
    """TFLite's "float16 quantization": every weight and bias stored as float16 behind a DEQUANTIZE.
    The DEQUANTIZEs fold at import (float32 constants, no node left) and the model matches the
    interpreter to float32 accuracy."""
    from tflite_harness import check as check_float

    from iree_py.frontends.tflite.importer import import_tflite
    from iree_py.frontends.tflite.schema.Conv2DOptions import Conv2DOptionsT
    from iree_py.frontends.tflite.schema.DepthwiseConv2DOptions import DepthwiseConv2DOptionsT

    m = TfliteModel()
    x = m.input("x", (1, 6, 6, 3))

    def f16(name: str, shape: tuple[int, ...]) -> int:
        half = m.const(f"{name}_f16", RNG.standard_normal(shape).astype(np.float16))
        full = m.tensor(name, shape)
        m.op("DEQUANTIZE", [half], [full])
        return full

    c = m.tensor("conv")
    m.op("CONV_2D", [x, f16("w", (4, 3, 3, 3)), f16("b", (4,))], [c],
         _options(Conv2DOptionsT, strideH=1, strideW=1, dilationHFactor=1, dilationWFactor=1, padding=0))
    d = m.tensor("dw")
    m.op("DEPTHWISE_CONV_2D", [c, f16("dw_w", (1, 3, 3, 4)), f16("dw_b", (4,))], [d],
         _options(DepthwiseConv2DOptionsT, strideH=1, strideW=1, dilationHFactor=1, dilationWFactor=1,
                  depthMultiplier=1, padding=1))
    y = m.tensor("y")
    m.op("ADD", [d, f16("shift", (4,))], [y])
    m.output(y)
    data = check_float(m)
    graph = import_tflite(data)
    assert not [n for n in graph.nodes if n.op in ("Dequantize", "Cast")]
    assert all(v.const.dtype == np.float32 for v in graph.values() if v.is_const and v.const.ndim > 0)
