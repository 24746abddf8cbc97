"""resize, pad, argmax/argmin, cumsum and topk kernels against the numpy reference
(iree_py/ir/ops/: resize.py, pad.py, reduce.py, topk.py): pad exactly for every mode and element size, the others
within 1e-5 (argmax/topk indices exactly)."""
from __future__ import annotations

import numpy as np
import pytest

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm import build_executable
from iree_py.codegen.llvm.jit import run_kernels
from iree_py.targets import load_target
from iree_py.ir.ops import KERNELS
from iree_py.ir.resize_math import AxisResize, ResizeMethod, resize_tables
from iree_py.ir.types import DType, TensorType
from tests.codegen.conftest import assert_close

RNG = np.random.default_rng(7)


def _t(a: np.ndarray) -> TensorType:
    return TensorType(DType.from_numpy(a.dtype), a.shape)


PADS = [  # (shape, pads)
    ((3, 5), [1, 2, 2, 3]),
    ((2, 3, 6), [1, -1, 2, 0, 2, -3]),
    ((4, 7), [-1, 3, -2, 0]),
    ((2, 2, 2, 9), [0, 1, 0, 4, 1, 0, 1, 4]),
]


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int8, np.float16])
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap", "symmetric"])
def test_pad_every_mode_and_size(mode: str, dtype) -> None:
    specs, inputs, wants = [], [], []
    for k, (shape, pads) in enumerate(PADS):
        if mode == "reflect" and k == 3:
            continue  # pads wider than the axis: ONNX reflect does not allow them
        x = (RNG.integers(-60, 60, size=shape)).astype(dtype)
        attrs = {"mode": mode, "pads": pads, "value": 3}
        want = KERNELS["Pad"]([x], attrs)
        specs.append(KernelSpec(f"p{k}", "pad", (_t(x),), (_t(want),), attrs))
        inputs.append([x])
        wants.append(want)
    for spec, (got,), want in zip(specs, run_kernels(specs, inputs), wants):
        np.testing.assert_array_equal(got, want, err_msg=spec.name)


def test_pad_of_an_empty_axis_fills_with_the_value() -> None:
    x = np.zeros((2, 0), np.float32)
    attrs = {"mode": "constant", "pads": [0, 1, 1, 2], "value": 1.5}
    (got,), = run_kernels([KernelSpec("p", "pad", (_t(x),), (TensorType(DType.f32, (3, 3)),), attrs)], [[x]])
    np.testing.assert_array_equal(got, np.full((3, 3), 1.5, np.float32))


RESIZES = [  # (shape, out shape, method)
    ((1, 2, 5, 6), (1, 2, 9, 4), ResizeMethod("linear")),
    ((1, 2, 5, 6), (1, 2, 3, 11), ResizeMethod("cubic", "align_corners")),
    ((2, 7), (5, 3), ResizeMethod("nearest", "asymmetric", "floor")),
    ((1, 3, 4, 5, 6), (1, 3, 7, 2, 6), ResizeMethod("linear", "pytorch_half_pixel")),
    ((1, 1, 9, 8), (1, 1, 4, 3), ResizeMethod("cubic", antialias=True)),
    ((4, 5, 3), (7, 5, 2), ResizeMethod("linear", "tf_crop_and_resize")),
]


def test_resize_matches_the_reference() -> None:
    specs, inputs, wants = [], [], []
    for k, (shape, out_shape, method) in enumerate(RESIZES):
        axes = [AxisResize(i, o, o / i, 0.1, 1.2) for i, o in zip(shape, out_shape)]
        taps, index, weight = resize_tables(axes, method)
        x = RNG.standard_normal(shape).astype(np.float32)
        attrs = {"sizes": list(out_shape), "taps": taps, "extrapolation_value": -4.0}
        want = KERNELS["Resize"]([x, index, weight], attrs)
        specs.append(KernelSpec(f"r{k}", "resize", (_t(x), _t(index), _t(weight)), (_t(want),), attrs))
        inputs.append([x, index, weight])
        wants.append(want)
    for spec, (got,), want in zip(specs, run_kernels(specs, inputs), wants):
        assert_close(got, want, what=spec.name)


def test_argmax_argmin_cumsum_topk() -> None:
    x = RNG.integers(0, 6, size=(3, 7, 4)).astype(np.float32)  # many ties
    cases = []
    for axis in range(3):
        for last in (0, 1):
            for kind, fn in (("argmax", KERNELS["ArgMax"]), ("argmin", KERNELS["ArgMin"])):
                attrs = {"axis": axis, "keepdims": 0, "select_last_index": last}
                cases.append((kind, attrs, fn([x], attrs)))
        for exclusive in (0, 1):
            for reverse in (0, 1):
                attrs = {"axis": axis, "exclusive": exclusive, "reverse": reverse}
                cases.append(("cumsum", attrs, KERNELS["CumSum"]([x], attrs)))
        for largest in (0, 1):
            for result in ("values", "indices"):
                attrs = {"axis": axis, "k": 2, "largest": largest, "result": result}
                cases.append(("topk", attrs, KERNELS["TopK"]([x], attrs)))
    specs = [KernelSpec(f"k{i}", kind, (_t(x),), (_t(want),), attrs) for i, (kind, attrs, want) in enumerate(cases)]
    for spec, (got,), (_, _, want) in zip(specs, run_kernels(specs, [[x]] * len(specs)), cases):
        if want.dtype == np.int64:
            np.testing.assert_array_equal(got, want, err_msg=f"{spec.kind} {spec.attrs}")
        else:
            assert_close(got, want, what=f"{spec.kind} {spec.attrs}")


def test_bad_specs_are_rejected() -> None:
    x = TensorType(DType.f32, (2, 3))
    host = load_target("host")
    with pytest.raises(ValueError, match="do not take"):
        build_executable([KernelSpec("p", "pad", (x,), (x,), {"mode": "edge", "pads": [1, 0, 0, 0], "value": 0})],
                         host)
    with pytest.raises(ValueError, match="tables hold"):
        build_executable([KernelSpec("r", "resize", (x, TensorType(DType.i32, (3,)), TensorType(DType.f32, (3,))),
                                     (TensorType(DType.f32, (2, 4)),),
                                     {"sizes": [2, 4], "taps": [0, 1], "extrapolation_value": 0.0})], host)
    with pytest.raises(ValueError, match="wants f32 in and i64 out"):
        build_executable([KernelSpec("a", "argmax", (x,), (x,), {"axis": 1, "select_last_index": 0})], host)


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float16])
def test_nearest_resize_moves_any_element_type(dtype) -> None:
    shape, out_shape = (2, 5, 4), (2, 7, 3)
    axes = [AxisResize(i, o, o / i, -0.2, 1.1) for i, o in zip(shape, out_shape)]
    taps, index, weight = resize_tables(axes, ResizeMethod("nearest", "tf_crop_and_resize"))
    x = RNG.integers(-100, 100, size=shape).astype(dtype)
    attrs = {"sizes": list(out_shape), "taps": taps, "extrapolation_value": 9.0}
    want = KERNELS["Resize"]([x, index, weight], attrs)
    assert (want == 9).any()
    spec = KernelSpec("r", "resize", (_t(x), _t(index), _t(weight)), (_t(want),), attrs)
    (got,), = run_kernels([spec], [[x, index, weight]])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.uint8, np.int64, np.float32])
def test_topk_every_dtype_static_and_symbolic(dtype) -> None:
    """One topk builder: floats and integers, known dims and symbolic ones (k a symbol too), many
    ties (small integers), against the reference."""
    from iree_py.codegen.llvm.jit import LoadedLibrary
    from iree_py.ir.symbols import Expr

    n, k = Expr.of("n"), Expr.of("k")
    x = RNG.integers(0, 6, size=(3, 7, 4)).astype(dtype)
    dt = DType.from_numpy(np.dtype(dtype))
    specs, cases = [], []
    for largest in (0, 1):
        for result in ("values", "indices"):
            attrs = {"axis": 1, "k": 3, "largest": largest, "result": result}
            out_dtype = dt if result == "values" else DType.i64
            specs.append(KernelSpec(f"t{len(specs)}", "topk", (_t(x),), (TensorType(out_dtype, (3, 3, 4)),), attrs))
            cases.append((attrs, {}))
            symbolic = {**attrs, "k": k}
            specs.append(KernelSpec(f"t{len(specs)}", "topk", (TensorType(dt, (3, n, 4)),),
                                    (TensorType(out_dtype, (3, k, 4)),), symbolic))
            cases.append((attrs, {"n": 7, "k": 3}))
    lib = LoadedLibrary(build_executable(specs, load_target("host")))
    for spec, (attrs, symbols) in zip(specs, cases):
        (got,) = lib.run(spec, [x], symbols)
        np.testing.assert_array_equal(got, KERNELS["TopK"]([x], attrs), err_msg=f"{spec.name} {attrs} {symbols}")
