"""The elementwise kernel in every dtype against the numpy reference (iree_py/ir/reference.py):
integer wrap-around, truncating Div, Mod/FloorMod signs, zero divisors (0, no trap), INT_MIN / -1,
shifts past the width, Cast between every pair (out of range, NaN, inf), f16 rounding after each
step, bool in memory, and an Expr that mixes dtypes. Integers and bools compare exactly; floats to
1e-6 relative (NaN equals NaN)."""
from __future__ import annotations

import numpy as np
import pytest

from iree_py.codegen.kernel_spec import Expr, ExprStep, KernelSpec
from iree_py.codegen.llvm.jit import run_kernels
from iree_py.ir.reference import KERNELS
from iree_py.ir.types import DType, TensorType

INTS = [DType.i8, DType.u8, DType.i16, DType.i32, DType.i64, DType.u16, DType.u32, DType.u64]
FLOATS = [DType.f32, DType.f64, DType.f16]


def _t(dtype: DType, shape: tuple[int, ...]) -> TensorType:
    return TensorType(dtype, shape)


class Cases:
    """One-step kernels and their reference results, built into one library at the end."""

    def __init__(self) -> None:
        self.specs: list[KernelSpec] = []
        self.inputs: list[list[np.ndarray]] = []
        self.wants: list[np.ndarray] = []
        self.atols: list[float] = []  # absolute tolerance, from `atol_of_max` x the largest input

    def add(self, op: str, arrays: list[np.ndarray], out: DType, attrs: tuple = (), atol_of_max: float = 0.0) -> None:
        dtypes = [DType.from_numpy(a.dtype) for a in arrays]
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        step = ExprStep(op, tuple(("in", i) for i in range(len(arrays))), attrs, out)
        name = f"{op}_{'_'.join(d.value for d in dtypes)}_{out.value}_{len(self.specs)}"
        self.specs.append(KernelSpec(name, "elementwise", tuple(_t(d, a.shape) for d, a in zip(dtypes, arrays)),
                                     (_t(out, shape),), {"expr": Expr((step,))}))
        self.inputs.append(arrays)
        ref_attrs = {"to": out.value} if op == "Cast" else dict(attrs)
        self.wants.append(np.asarray(KERNELS[op](arrays, ref_attrs)))
        finite = [np.abs(a[np.isfinite(a)].astype(np.float64)) for a in arrays]
        self.atols.append(atol_of_max * max(float(f.max(initial=0.0)) for f in finite))

    def check(self) -> None:
        for spec, (got,), want, atol in zip(self.specs, run_kernels(self.specs, self.inputs), self.wants, self.atols):
            assert got.dtype == want.dtype and got.shape == want.shape, spec.name
            if got.dtype.kind == "f":
                np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-6, atol=atol,
                                           equal_nan=True, err_msg=spec.name)
            else:
                np.testing.assert_array_equal(got, want, err_msg=spec.name)


def _ints(dtype: DType, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """a [3, 37] over the whole range with INT_MIN; b [37] with zeros and -1 (the traps)."""
    info = np.iinfo(dtype.numpy)
    a = rng.integers(info.min, info.max, (3, 37), dtype=dtype.numpy, endpoint=True)
    b = rng.integers(info.min, info.max, (37,), dtype=dtype.numpy, endpoint=True)
    b[:4] = 0
    b[4:8] = rng.integers(1, 9, 4)
    a[0, :8] = info.min
    if info.min < 0:
        b[8:12] = -1
        b[12:16] = rng.integers(-9, 0, 4)
    return a, b


# Every op on these; the other integer types share their code paths (by width and signedness).
FULLY_TESTED_INTS = (DType.i8, DType.u8, DType.i32, DType.i64)


@pytest.mark.parametrize("dtype", INTS)
def test_integer_ops(dtype: DType) -> None:
    rng = np.random.default_rng(INTS.index(dtype))
    a, b = _ints(dtype, rng)
    full = dtype in FULLY_TESTED_INTS
    cases = Cases()
    for op in ("Add", "Sub", "Mul", "Div", "Mod", "FloorMod", "Min", "Max") if full else ("Mul", "Div", "FloorMod"):
        cases.add(op, [a, b], dtype)
    for op in ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual") if full else ("Less",):
        cases.add(op, [a, b], DType.bool)
    for op in ("Abs", "Neg", "Sign", "Relu") if full else ("Sign",):
        cases.add(op, [a], dtype)
    cases.add("Clip", [a], dtype, (("min", -5.5), ("max", 100.0)))
    shift = rng.integers(-3, 70, (37,)).astype(dtype.numpy)
    cases.add("ShiftLeft", [a, shift], dtype)
    cases.add("ShiftRight", [a, shift], dtype)
    exponent = rng.integers(-2, 12, (37,)).astype(dtype.numpy)
    cases.add("Pow", [rng.integers(-3, 4, (3, 37)).astype(dtype.numpy), exponent], dtype)
    cases.check()


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_ops(dtype: DType) -> None:
    rng = np.random.default_rng(10 + FLOATS.index(dtype))
    a = (rng.standard_normal((3, 37)) * 100).astype(dtype.numpy)
    a[0, :8] = [np.nan, np.inf, -np.inf, 3e4, -3e4, 1e3, -0.0, 65519.0]
    b = (rng.standard_normal((37,)) * 10).astype(dtype.numpy)
    b[:3] = [0.0, -np.inf, np.inf]
    cases = Cases()
    for op in ("Add", "Sub", "Mul", "Div", "Min", "Max"):
        cases.add(op, [a, b], dtype)
    small = (rng.standard_normal((3, 37)) * 8).astype(dtype.numpy)
    for op in ("Mod", "FloorMod"):  # x - trunc(x / y) * y is exact only to about an ulp of x
        cases.add(op, [small, b], dtype, atol_of_max={DType.f32: 1e-6, DType.f64: 1e-15}.get(dtype, 0.0))
    for op in ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"):
        cases.add(op, [a, b], DType.bool)
    for op in ("Abs", "Neg", "Sign", "Relu", "Floor", "Ceil", "Sqrt"):
        cases.add(op, [a], dtype)
    cases.add("IsNaN", [a], DType.bool)
    cases.add("IsInf", [a], DType.bool, (("detect_negative", 1.0), ("detect_positive", 0.0)))
    cases.add("Clip", [a], dtype, (("min", -5.5), ("max", 100.0)))
    if dtype != DType.f64:
        cases.add("Exp", [small], dtype)
        cases.add("Tanh", [small], dtype)
    cases.check()


@pytest.mark.parametrize("src", [*FLOATS, *INTS, DType.bool])
def test_cast_to_every_dtype(src: DType) -> None:
    rng = np.random.default_rng(20)
    if src == DType.bool:
        x = rng.integers(0, 2, (2, 19)).astype(bool)
    elif src in FLOATS:
        x = (rng.standard_normal((2, 19)) * 3e4).astype(src.numpy)
        x[0, :6] = [np.nan, np.inf, -np.inf, 3e9 if src != DType.f16 else 6e4, -0.0, 127.9]
    else:
        x = _ints(src, rng)[0][:2, :19]
    cases = Cases()
    for to in [*FLOATS, *INTS, DType.bool]:  # the narrow types: tests/frontend/test_onnx_dtypes2.py
        if to != src:
            cases.add("Cast", [x], to)
    cases.check()


def test_logic_and_where() -> None:
    rng = np.random.default_rng(30)
    p, q = rng.integers(0, 2, (3, 17)).astype(bool), rng.integers(0, 2, (17,)).astype(bool)
    cases = Cases()
    for op in ("And", "Or", "Xor", "Equal"):
        cases.add(op, [p, q], DType.bool)
    cases.add("Not", [p], DType.bool)
    for dtype in (DType.f16, DType.i64, DType.u8, DType.bool):
        x = rng.integers(0, 100, (3, 17)).astype(dtype.numpy)
        y = rng.integers(0, 100, (1,)).astype(dtype.numpy)
        cases.add("Where", [p, x, y], dtype)
    cases.check()


def test_f16_chain_rounds_once_when_stored() -> None:
    # (a * b) + c in f16 computes in f32 and rounds once at the store, as onnxruntime's CPU provider
    # does (it runs f16 elementwise chains in f32 between two Casts).
    a = np.array([1.0009765625, 3.14, 1000.0, 0.1], np.float16)
    b = np.array([1.0009765625, 2.71, 70.0, 0.3], np.float16)
    c = np.array([-1.0, 0.5, -65000.0, 1e-4], np.float16)
    steps = (ExprStep("Mul", (("in", 0), ("in", 1))), ExprStep("Add", (("step", 0), ("in", 2))))
    spec = KernelSpec("fma_f16", "elementwise", tuple(_t(DType.f16, (4,)) for _ in range(3)),
                      (_t(DType.f16, (4,)),), {"expr": Expr(steps)})
    (got,), = run_kernels([spec], [[a, b, c]])
    f = [v.astype(np.float32) for v in (a, b, c)]
    np.testing.assert_array_equal(got, (f[0] * f[1] + f[2]).astype(np.float16))
    assert not np.array_equal(got, (a * b) + c)  # numpy rounds after each f16 op: not what we do


def test_mixed_dtype_expr() -> None:
    # y = i32(Where(x < z, x, z) * 10) + k, with the bool mask, the f32 select and the i32 math in one kernel
    steps = (ExprStep("Less", (("in", 0), ("in", 1)), (), DType.bool),
             ExprStep("Where", (("step", 0), ("in", 0), ("in", 1)), (), DType.f32),
             ExprStep("Mul", (("step", 1), ("in", 2)), (), DType.f32),
             ExprStep("Cast", (("step", 2),), (), DType.i32),
             ExprStep("Add", (("step", 3), ("in", 3)), (), DType.i32))
    shapes = [(4, 33), (33,), (), (4, 1)]
    types = [DType.f32, DType.f32, DType.f32, DType.i32]
    spec = KernelSpec("mixed", "elementwise", tuple(_t(d, s) for d, s in zip(types, shapes)), (_t(DType.i32, (4, 33)),),
                      {"expr": Expr(steps)})
    rng = np.random.default_rng(40)
    x, z = (rng.standard_normal(s).astype(np.float32) * 5 for s in shapes[:2])
    ten, k = np.array(10.0, np.float32), rng.integers(-100, 100, (4, 1)).astype(np.int32)
    (got,), = run_kernels([spec], [[x, z, ten, k]])
    want = np.trunc(np.where(x < z, x, z) * np.float32(10)).astype(np.int32) + k
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("steps, types, out, message", [
    ((ExprStep("And", (("in", 0), ("in", 1))),), [DType.i32, DType.i32], DType.i32, "takes bool operands"),
    ((ExprStep("Less", (("in", 0), ("in", 1)), (), DType.f32),), [DType.f32, DType.f32], DType.f32, "gives bool"),
    ((ExprStep("Add", (("in", 0), ("in", 1))),), [DType.f32, DType.i32], DType.f32, "differ in dtype"),
    ((ExprStep("Sin", (("in", 0),)),), [DType.f64], DType.f64, "no f64 kernel"),  # Exp/Log have one (math_f64)
    ((ExprStep("Exp", (("in", 0),)),), [DType.i32], DType.i32, "Exp is not supported on i32"),
    ((ExprStep("Where", (("in", 0), ("in", 1), ("in", 1))),), [DType.f32, DType.f32], DType.f32, "Where wants"),
    ((ExprStep("Cast", (("in", 0),), (), DType.i8),), [DType.f32], DType.f32, "the expression gives i8"),
])
def test_bad_typed_expr_is_refused(steps, types, out, message) -> None:
    spec = KernelSpec("bad", "elementwise", tuple(_t(d, (4,)) for d in types), (_t(out, (4,)),), {"expr": Expr(steps)})
    with pytest.raises(ValueError, match=message):
        run_kernels([spec], [[np.zeros(4, d.numpy) for d in types]])
