"""The resize_rt kernel (codegen/llvm/resize.py, build_runtime) against its numpy twin
(ops_rt_resize.rt_resize_reference, built on the compile-time tap tables of resize_math.py): every
mode, coordinate_transformation_mode, nearest_mode, exclude_outside and antialias, on a rank-4
input with every axis resized (leading axes through the workgroup id), output dims as symbols.
Tolerance 1e-5 absolute (inputs are standard normal)."""
from __future__ import annotations

import numpy as np
import pytest

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm.jit import run_kernels
from iree_py.ir.ops.resize import rt_resize_reference
from iree_py.ir.symbols import Expr
from iree_py.ir.types import DType, TensorType

COORDINATE_MODES = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_half_pixel_for_nn", "tf_crop_and_resize"]
NEAREST_MODES = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple"]
METHODS = ([("nearest", c, n, 0, 0) for c in COORDINATE_MODES for n in NEAREST_MODES]
           + [(m, c, "floor", e, 0) for m in ("linear", "cubic") for c in COORDINATE_MODES for e in (0, 1)
              if m == "cubic" or not e]
           + [(m, c, "floor", e, 1) for m in ("linear", "cubic") for c in ("half_pixel", "align_corners",
                                                                           "tf_crop_and_resize") for e in (0, 1)])
SHAPE = (2, 3, 5, 7)
SYMBOLS = [Expr.of(f"o{i}") for i in range(4)]
ROI = np.array([0, 0.1, 0.2, -0.1, 1, 0.8, 0.8, 1.2], np.float32)


def _attrs(mode: str, coordinate_mode: str, nearest_mode: str, exclude: int, antialias: int) -> dict:
    return dict(axes=[0, 1, 2, 3], coordinate_mode=coordinate_mode, cubic_coeff_a=-0.5 if exclude else -0.75,
                exclude_outside=exclude, antialias=antialias, extrapolation_value=7.0, mode=mode,
                nearest_mode=nearest_mode, scales_from_sizes=0, sizes=SYMBOLS)


def _spec(i: int, attrs: dict, dtype: DType = DType.f32) -> KernelSpec:
    inputs = (TensorType(dtype, SHAPE), TensorType(DType.f32, (4,)), TensorType(DType.f32, (8,)))
    return KernelSpec(f"resize_rt_{i}", "resize_rt", inputs, (TensorType(dtype, tuple(SYMBOLS)),), attrs)


@pytest.mark.parametrize("scales", [[1.0, 2.0, 1.6, 0.6], [0.5, 1.0, 0.45, 2.5]])
def test_every_method_matches_the_reference(scales: list[float]) -> None:
    x = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    s = np.array(scales, np.float32)
    sizes = [int(np.float32(a) * np.float32(d)) for a, d in zip(s, SHAPE)]
    attrs = [_attrs(*m) for m in METHODS]
    outputs = run_kernels([_spec(i, a) for i, a in enumerate(attrs)], [[x, s, ROI]] * len(attrs),
                          symbols={f"o{i}": d for i, d in enumerate(sizes)})
    for method, a, (y,) in zip(METHODS, attrs, outputs):
        expected = rt_resize_reference([x, s, ROI], {**a, "sizes": sizes})
        np.testing.assert_allclose(y, expected, rtol=0, atol=1e-5, err_msg=str(method))


def test_nearest_moves_int16_and_empty_output_writes_nothing() -> None:
    x = np.arange(np.prod(SHAPE), dtype=np.int16).reshape(SHAPE)
    s = np.array([1, 1, 1.5, 0.5], np.float32)
    attrs = _attrs("nearest", "tf_crop_and_resize", "round_prefer_ceil", 0, 0)
    (y,) = run_kernels([_spec(0, attrs, DType.i16)], [[x, s, ROI]],
                       symbols={"o0": 2, "o1": 3, "o2": 7, "o3": 3})[0]
    np.testing.assert_array_equal(y, rt_resize_reference([x, s, ROI], {**attrs, "sizes": [2, 3, 7, 3]}))
    (y,) = run_kernels([_spec(0, attrs, DType.i16)], [[x, s, ROI]], symbols={"o0": 2, "o1": 3, "o2": 0, "o3": 3})[0]
    assert y.shape == (2, 3, 0, 3)
