"""TFLite PAD / PADV2 / MIRROR_PAD, ARG_MAX / ARG_MIN and RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR
against the TFLite interpreter, compiled for the host (data movement and argmax exact; bilinear
within 1e-5 of the largest magnitude)."""
from __future__ import annotations

import numpy as np
import pytest
from tflite_harness import complete_shapes, run_iree, run_tflite
from tflite_writer import TfliteModel

from iree_py.frontends.tflite.schema.ArgMaxOptions import ArgMaxOptionsT
from iree_py.frontends.tflite.schema.ArgMinOptions import ArgMinOptionsT
from iree_py.frontends.tflite.schema.MirrorPadOptions import MirrorPadOptionsT
from iree_py.frontends.tflite.schema.ResizeBilinearOptions import ResizeBilinearOptionsT
from iree_py.frontends.tflite.schema.ResizeNearestNeighborOptions import ResizeNearestNeighborOptionsT
from iree_py.frontends.tflite.schema.TensorType import TensorType as TflType

RNG = np.random.default_rng(11)


def _run(m: TfliteModel, inputs: list[np.ndarray], rtol: float = 0.0) -> None:
    data = complete_shapes(m)
    for got, want in zip(run_iree(data, inputs), run_tflite(data, inputs), strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
        if rtol:
            scale = max(float(np.abs(want).max()), 1e-30)
            assert float(np.abs(got.astype(np.float64) - want).max()) <= rtol * scale
        else:
            np.testing.assert_array_equal(got, want)


def _one_op(code: str, x: np.ndarray, consts: list[np.ndarray], options=None, out_dtype=np.float32) -> TfliteModel:
    m = TfliteModel()
    ins = [m.input("x", x.shape, x.dtype)] + [m.const(f"c{i}", c) for i, c in enumerate(consts)]
    out = m.tensor("y", dtype=out_dtype)
    m.op(code, ins, [out], options)
    m.output(out)
    return m


@pytest.mark.parametrize("code", ["PAD", "PADV2"])
@pytest.mark.parametrize("paddings_dtype", [np.int32, np.int64])
def test_pad(code: str, paddings_dtype) -> None:
    x = RNG.standard_normal((1, 3, 4, 2)).astype(np.float32)
    consts = [np.array([[0, 0], [1, 2], [2, 0], [0, 1]], paddings_dtype)]
    if code == "PADV2":
        consts.append(np.array([-2.5], np.float32))
    _run(_one_op(code, x, consts), [x])


@pytest.mark.parametrize("mode", [0, 1])  # REFLECT, SYMMETRIC
def test_mirror_pad(mode: int) -> None:
    opts = MirrorPadOptionsT()
    opts.mode = mode
    x = RNG.standard_normal((2, 4, 5)).astype(np.float32)
    _run(_one_op("MIRROR_PAD", x, [np.array([[1, 0], [2, 3 - mode], [3, 1]], np.int32)], opts), [x])


@pytest.mark.parametrize("code,options", [("ARG_MAX", ArgMaxOptionsT), ("ARG_MIN", ArgMinOptionsT)])
@pytest.mark.parametrize("output_type,out_dtype", [(TflType.INT64, np.int64), (TflType.INT32, np.int32)])
@pytest.mark.parametrize("axis", [1, -1])
def test_arg_max_min(code: str, options: type, output_type: int, out_dtype, axis: int) -> None:
    opts = options()
    opts.outputType = output_type
    x = RNG.integers(0, 5, size=(3, 6, 4)).astype(np.float32)  # ties: the first index wins
    _run(_one_op(code, x, [np.array([axis], np.int32)], opts, out_dtype), [x])


FLAGS = [(False, False), (True, False), (False, True)]  # (align_corners, half_pixel_centers)


@pytest.mark.parametrize("size", [(7, 3), (2, 9), (1, 1)])
@pytest.mark.parametrize("flags", FLAGS)
@pytest.mark.parametrize("code,options", [("RESIZE_BILINEAR", ResizeBilinearOptionsT),
                                          ("RESIZE_NEAREST_NEIGHBOR", ResizeNearestNeighborOptionsT)])
def test_resize(code: str, options: type, flags: tuple[bool, bool], size: tuple[int, int]) -> None:
    opts = options()
    opts.alignCorners, opts.halfPixelCenters = flags
    x = RNG.standard_normal((2, 4, 5, 3)).astype(np.float32)
    _run(_one_op(code, x, [np.array(size, np.int32)], opts), [x], rtol=1e-5 if code == "RESIZE_BILINEAR" else 0.0)
