"""The reduce, logsoftmax and hardmax kernels against numpy: every reduce kind over leading,
middle, trailing and multi-axis runs (vector bodies and tails), huge logits, hardmax ties."""
from __future__ import annotations

import numpy as np
import pytest

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm.jit import run_kernels
from iree_py.ir.ops.normalization import hardmax, log_softmax
from iree_py.ir.ops.reduce import reduce
from iree_py.ir.types import DType, TensorType
from tests.codegen.conftest import assert_close, f32

KINDS = ["sum", "mean", "max", "min", "prod", "l1", "l2", "logsum", "logsumexp", "sumsquare"]
SHAPES_AXES = [((3, 5, 19), [2]), ((3, 5, 19), [1]), ((3, 5, 19), [0, 1]), ((2, 33, 8), [1, 2]),
               ((1, 1000), [1]), ((4,), [0]), ((2, 1, 3, 4), [0, 2]), ((6, 37), [0])]


def _input(rng: np.random.Generator, shape: tuple[int, ...], kind: str) -> np.ndarray:
    x = rng.standard_normal(shape).astype(np.float32)
    if kind == "logsum":
        return np.abs(x) + 0.1
    if kind == "prod":
        return (1 + 0.05 * x).astype(np.float32)
    return x


@pytest.mark.parametrize("kind", KINDS)
def test_reduce_kind_over_axis_runs(kind: str) -> None:
    rng = np.random.default_rng(1)
    specs, inputs, wants = [], [], []
    for shape, axes in SHAPES_AXES:
        for keepdims in (0, 1):
            x = _input(rng, shape, kind)
            attrs = {"kind": kind, "axes": axes, "keepdims": keepdims}
            want = reduce([x], attrs)
            specs.append(KernelSpec(f"r_{len(specs)}", "reduce", (f32(*shape),), (f32(*want.shape),), attrs))
            inputs.append([x])
            wants.append(want)
    for spec, (got,), want in zip(specs, run_kernels(specs, inputs), wants):
        assert_close(got, want, 2e-5, f"{kind} {spec.inputs[0]} axes {spec.attrs['axes']}")


def test_reduce_logsumexp_large_values_stay_finite() -> None:
    x = np.array([[1e4, 1e4 - 1, -1e4, 80.0], [-3e38, 0.0, 88.0, 89.0]], dtype=np.float32)
    attrs = {"kind": "logsumexp", "axes": [1], "keepdims": 0}
    (got,), = run_kernels([KernelSpec("lse", "reduce", (f32(2, 4),), (f32(2),), attrs)], [[x]])
    assert np.all(np.isfinite(got))
    assert_close(got, reduce([x], attrs), 1e-6, "large logsumexp")


def test_reduce_rejects_non_contiguous_axes() -> None:
    spec = KernelSpec("bad", "reduce", (f32(2, 3, 4),), (f32(3),), {"kind": "sum", "axes": [0, 2], "keepdims": 0})
    with pytest.raises(ValueError, match="not one contiguous run"):
        run_kernels([spec], [[np.zeros((2, 3, 4), np.float32)]])


@pytest.mark.parametrize("kind,reference", [("logsoftmax", log_softmax), ("hardmax", hardmax)])
def test_softmax_variants_every_axis(kind: str, reference) -> None:
    rng = np.random.default_rng(0)
    specs, inputs, wants = [], [], []
    for shape in [(3, 5, 19), (2, 33, 8), (1, 1000), (4,), (2, 3, 1)]:
        x = (rng.standard_normal(shape) * 10).astype(np.float32)
        for axis in range(len(shape)):
            specs.append(KernelSpec(f"{kind}_{len(specs)}", kind, (f32(*shape),), (f32(*shape),), {"axis": axis}))
            inputs.append([x])
            wants.append(reference([x], {"axis": axis}))
    for spec, (got,), want in zip(specs, run_kernels(specs, inputs), wants):
        assert_close(got, want, 1e-5, f"{spec.name} {spec.inputs[0]} axis {spec.attrs['axis']}")


def test_logsoftmax_large_logits_and_hardmax_ties() -> None:
    x = np.array([[1e4, 1e4 - 1, -1e4, 3e38], [2.0, 5.0, 5.0, 1.0]], dtype=np.float32)
    specs = [KernelSpec("ls", "logsoftmax", (f32(2, 4),), (f32(2, 4),), {"axis": 1}),
             KernelSpec("hm", "hardmax", (f32(2, 4),), (f32(2, 4),), {"axis": 1})]
    (ls,), (hm,) = run_kernels(specs, [[x], [x]])
    assert np.all(np.isfinite(ls))
    assert_close(ls, log_softmax([x], {"axis": 1}), 1e-6, "large logits")
    np.testing.assert_array_equal(hm, [[0, 0, 0, 1], [0, 1, 0, 0]])  # first maximum wins a tie


def test_reduce_f64_with_symbolic_dims() -> None:
    """One builder for f32 and f64, ints and Exprs: f64 on symbolic dims, every kind, against numpy
    in float64 (empty reductions give the start values: sum 0, max -inf, mean NaN)."""
    from iree_py.codegen.llvm import build_executable
    from iree_py.codegen.llvm.jit import LoadedLibrary
    from iree_py.ir.symbols import Expr
    from iree_py.targets import load_target

    a, b = Expr.of("a"), Expr.of("b")
    f64 = lambda *shape: TensorType(DType.f64, shape)  # noqa: E731
    shape = (a, b, 3)
    specs = [KernelSpec(f"r64_{kind}_{axis}", "reduce", (f64(*shape),), (f64(*shape[:axis], *shape[axis + 1:]),),
                        {"kind": kind, "axes": [axis], "keepdims": 0})
             for kind in KINDS for axis in (1, 2)]
    lib = LoadedLibrary(build_executable(specs, load_target("host")))
    rng = np.random.default_rng(3)
    for spec in specs:
        for sizes in ({"a": 2, "b": 5}, {"a": 1, "b": 1}, {"a": 3, "b": 0}):
            x = _input(rng, (sizes["a"], sizes["b"], 3), spec.attrs["kind"]).astype(np.float64)
            (got,) = lib.run(spec, [x], sizes)
            with np.errstate(all="ignore"):
                want = reduce([x], spec.attrs) if x.shape[spec.attrs["axes"][0]] else _empty_reduction(x, spec.attrs)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300, err_msg=f"{spec.name} at {sizes}")


def _empty_reduction(x: np.ndarray, attrs: dict) -> np.ndarray:
    start = {"max": -np.inf, "min": np.inf, "prod": 1.0, "mean": np.nan, "logsum": -np.inf, "logsumexp": -np.inf}
    shape = tuple(n for k, n in enumerate(x.shape) if k not in attrs["axes"])
    return np.full(shape, start.get(attrs["kind"], 0.0))
