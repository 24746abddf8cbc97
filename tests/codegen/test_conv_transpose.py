"""The conv_transpose and lppool kernels (host, jit.py) against the numpy reference
(iree_py/ir/ops/conv.py): 1-D/2-D/3-D, strides, dilations, groups, begin and end pads
(negative end pads: bias-only positions); tolerance 1e-5 relative to the largest output.
conv_transpose also on symbolic N, C and spatial dims: one kernel built per spec, run at several
sizes (batch 0 among them)."""
from __future__ import annotations

import numpy as np

from iree_py.codegen.dispatch import DIRECT_KERNELS
from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm import build_executable
from iree_py.codegen.llvm.dims import is_dynamic
from iree_py.codegen.llvm.jit import LoadedLibrary, run_kernels
from iree_py.targets import load_target
from iree_py.ir.ops import infer_types
from iree_py.ir.reference import KERNELS
from iree_py.ir.symbols import Expr, evaluate
from iree_py.ir.types import DType, TensorType

RTOL = 1e-5

# (x shape, weight shape, strides, dilations, pads, group)
CONV_TRANSPOSE_CASES = [
    ((1, 3, 5, 5), (3, 2, 3, 3), [1, 1], [1, 1], [0, 0, 0, 0], 1),
    ((2, 4, 4, 5), (4, 3, 2, 3), [2, 2], [1, 2], [1, 0, 0, 1], 2),
    ((1, 2, 4, 4), (2, 3, 3, 3), [2, 2], [1, 1], [1, 1, 0, 0], 1),
    ((1, 2, 3, 5), (2, 2, 4, 2), [2, 3], [1, 1], [1, 0, 1, 0], 1),
    ((1, 2, 3, 4), (2, 2, 3, 3), [3, 2], [1, 1], [0, 0, -2, -1], 1),  # output_padding
    ((1, 4, 4, 3), (4, 1, 3, 3), [1, 1], [1, 1], [1, 1, 1, 1], 4),  # depthwise
    ((1, 3, 6), (3, 2, 3), [2], [1], [1, 1], 1),  # 1-D
    ((1, 2, 3, 2, 3), (2, 2, 2, 3, 2), [2, 1, 2], [1, 2, 1], [0, 1, 1, 1, 0, 0], 1),  # 3-D
    ((1, 2, 4, 4), (2, 2, 5, 5), [1, 1], [1, 1], [3, 4, 2, 1], 1),  # pads larger than the stride
    ((1, 8, 6, 17), (8, 4, 3, 3), [1, 1], [1, 1], [1, 1, 1, 1], 1),  # rows long enough to vectorize
]


def _t(a: np.ndarray) -> TensorType:
    return TensorType(DType.from_numpy(a.dtype), a.shape)


def _spec(name: str, op: str, ins: list[np.ndarray], attrs: dict) -> KernelSpec:
    kind, names = DIRECT_KERNELS[op]
    out = infer_types(op, [_t(a) for a in ins], attrs)
    return KernelSpec(name, kind, tuple(_t(a) for a in ins), tuple(out), {n: attrs[n] for n in names})


def _check_all(op: str, cases: list[tuple[list[np.ndarray], dict]]) -> None:
    specs = [_spec(f"{op.lower()}{i}", op, ins, attrs) for i, (ins, attrs) in enumerate(cases)]
    for spec, (ins, attrs), (got,) in zip(specs, cases, run_kernels(specs, [ins for ins, _ in cases])):
        want = KERNELS[op](ins, attrs)
        assert got.shape == want.shape, spec.name
        err = float(np.abs(got.astype(np.float64) - want).max()) / max(float(np.abs(want).max()), 1e-30)
        assert err <= RTOL, f"{spec.name} {attrs}: max error {err:.3g} x max|expected|"


def test_conv_transpose_matches_reference() -> None:
    rng = np.random.default_rng(0)
    cases = []
    for x_shape, w_shape, strides, dilations, pads, group in CONV_TRANSPOSE_CASES:
        x = rng.standard_normal(x_shape).astype(np.float32)
        w = rng.standard_normal(w_shape).astype(np.float32)
        attrs = {"strides": strides, "dilations": dilations, "pads": pads, "group": group}
        cases.append(([x, w], attrs))
        bias = rng.standard_normal(w_shape[1] * group).astype(np.float32)
        cases.append(([x, w, bias], attrs))
    _check_all("ConvTranspose", cases)


def _symbolic(shape: tuple[int, ...], channels: bool) -> tuple:
    """X's shape with N and every spatial dim symbolic (n, then d/h/w from the last axis back); C too
    when `channels`."""
    names = ("d", "h", "w")[3 - (len(shape) - 2):]
    return (Expr.of("n"), Expr.of("c") if channels else shape[1], *(Expr.of(a) for a in names))


def _sizes_of(shape: tuple[int, ...], grow: int, batch: int) -> dict[str, int]:
    names = ("d", "h", "w")[3 - (len(shape) - 2):]
    return {"n": batch, "c": shape[1], **{a: d + grow for a, d in zip(names, shape[2:])}}


def test_conv_transpose_on_symbolic_dims_matches_reference() -> None:
    """Every case with N and the spatial dims symbolic (and C for two of them), bias or not, at the
    case's own size, a larger one with batch 2 and an empty batch."""
    rng = np.random.default_rng(3)
    specs, cases = [], []
    for i, (x_shape, w_shape, strides, dilations, pads, group) in enumerate(CONV_TRANSPOSE_CASES):
        attrs = {"strides": strides, "dilations": dilations, "pads": pads, "group": group}
        w = rng.standard_normal(w_shape).astype(np.float32)
        bias = rng.standard_normal(w_shape[1] * group).astype(np.float32)
        for with_bias in (False, True):
            x_type = TensorType(DType.f32, _symbolic(x_shape, channels=i in (1, 7)))
            ins = [x_type, _t(w)] + ([_t(bias)] if with_bias else [])
            (out,) = infer_types("ConvTranspose", ins, attrs)
            spec = KernelSpec(f"dct{i}{'b' if with_bias else ''}", "conv_transpose", tuple(ins), (out,), attrs)
            assert is_dynamic(spec), spec
            specs.append(spec)
            cases.append((x_shape, [w] + ([bias] if with_bias else []), attrs))
    lib = LoadedLibrary(build_executable(specs, load_target("host")))
    for spec, (x_shape, params, attrs) in zip(specs, cases):
        for symbols in (_sizes_of(x_shape, 0, 1), _sizes_of(x_shape, 3, 2), _sizes_of(x_shape, 1, 0)):
            x = rng.standard_normal(tuple(evaluate(d, symbols) for d in spec.inputs[0].shape)).astype(np.float32)
            (got,) = lib.run(spec, [x, *params], symbols)
            want = KERNELS["ConvTranspose"]([x, *params], attrs)
            assert got.shape == want.shape, (spec.name, symbols)
            if not want.size:
                continue
            err = float(np.abs(got.astype(np.float64) - want).max()) / max(float(np.abs(want).max()), 1e-30)
            assert err <= RTOL, f"{spec.name} at {symbols}: max error {err:.3g} x max|expected|"


def test_lp_pool_matches_reference() -> None:
    rng = np.random.default_rng(1)
    cases = []
    for p in (1, 2, 3):
        for kernel, strides, pads, dilations, ceil_mode in [
                ((3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 0), ((2, 3), (2, 2), (1, 0, 0, 1), (1, 1), 0),
                ((2, 2), (1, 1), (0, 0, 0, 0), (2, 2), 0), ((3, 3), (2, 2), (1, 1, 0, 0), (1, 1), 1)]:
            x = rng.standard_normal((2, 3, 7, 8)).astype(np.float32)
            attrs = {"kernel": list(kernel), "strides": list(strides), "pads": list(pads),
                     "dilations": list(dilations), "ceil_mode": ceil_mode, "p": p}
            cases.append(([x], attrs))
    _check_all("LpPool", cases)


def test_qconv_transpose_is_bit_exact() -> None:
    """i8/u8 with per-channel and per-tensor weights, fixed and float requantization: every byte equal."""
    rng = np.random.default_rng(2)
    cases = []
    for dtype, x_shape, w_shape, strides, dilations, pads, group, requant in [
            (np.int8, (1, 3, 4, 5), (3, 2, 3, 3), [2, 2], [1, 1], [1, 1, 0, 0], 1, "fixed"),
            (np.int8, (2, 4, 3, 3), (4, 3, 2, 3), [1, 2], [2, 1], [0, 1, 1, -1], 2, "fixed"),
            (np.uint8, (1, 2, 5, 4), (2, 2, 3, 3), [1, 1], [1, 1], [1, 1, 1, 1], 1, "float"),
            (np.int8, (1, 4, 6, 20), (4, 1, 3, 3), [1, 1], [1, 1], [1, 1, 1, 1], 4, "fixed")]:
        lo, hi = (-128, 128) if dtype == np.int8 else (0, 256)
        x = rng.integers(lo, hi, x_shape).astype(dtype)
        w = rng.integers(lo, hi, w_shape).astype(dtype)
        m = w_shape[1] * group
        bias = rng.integers(-5000, 5000, m).astype(np.int32)
        y_zp = int(rng.integers(lo // 4, hi // 4))
        attrs = {"strides": strides, "dilations": dilations, "pads": pads, "group": group,
                 "x_zero_point": int(rng.integers(lo // 2, hi // 2)), "w_zero_point": [0] if requant == "fixed" else
                 [int(z) for z in rng.integers(lo // 2, hi // 2, m)], "y_zero_point": y_zp,
                 "out_dtype": "i8" if dtype == np.int8 else "u8", "act_min": lo + 3, "act_max": hi - 5,
                 "requant": requant}
        if requant == "fixed":
            attrs.update(multiplier=[int(v) for v in rng.integers(2**30, 2**31 - 1, m)],
                         shift=[int(v) for v in rng.integers(-12, -8, m)], scale=[])
        else:
            attrs.update(multiplier=[], shift=[], scale=[float(np.float32(s)) for s in rng.uniform(1e-4, 1e-3, m)])
        cases.append(([x, w, bias], attrs))
        cases.append(([x, w], attrs))
    specs = [_spec(f"qct{i}", "QConvTranspose", ins, attrs) for i, (ins, attrs) in enumerate(cases)]
    for spec, (ins, attrs), (got,) in zip(specs, cases, run_kernels(specs, [ins for ins, _ in cases])):
        want = KERNELS["QConvTranspose"](ins, attrs)
        assert got.dtype == want.dtype and got.shape == want.shape, spec.name
        assert np.array_equal(got, want), f"{spec.name}: {int((got != want).sum())} of {got.size} differ"
        assert len(np.unique(got)) > 8, f"{spec.name}: output saturated, the case tests little"
