"""Dynamic-dim matmul, softmax/logsoftmax/hardmax, reduce and lrn kernels
(iree_py/codegen/llvm/{reduce,matmul,softmax,lrn}.py): each spec has symbolic dims, is built
once for the host, and runs through jit.py at several sizes (1 and 0 included) against numpy in
float64. Tolerances: rtol 1e-5 and atol 1e-5 (matmul: atol 1e-5 × max(K, 1))."""
from __future__ import annotations

import numpy as np
import pytest

from iree_py.codegen.kernel_spec import EpilogueOp, KernelSpec
from iree_py.codegen.llvm import build_executable
from iree_py.codegen.llvm.jit import LoadedLibrary
from iree_py.targets import load_target
from iree_py.ir.symbols import call
from iree_py.ir.types import DType, TensorType
from tests.codegen.epilogue_reference import apply_epilogue
from tests.codegen.test_lrn import _lrn as lrn_reference


def f32(*shape) -> TensorType:
    return TensorType(DType.f32, tuple(shape))


def build(specs: list[KernelSpec]) -> LoadedLibrary:
    return LoadedLibrary(build_executable(specs, load_target("host")))


def assert_near(got: np.ndarray, want: np.ndarray, what: str, atol: float = 1e-5) -> None:
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    ok = np.isclose(got.astype(np.float64), want, rtol=1e-5, atol=atol, equal_nan=True)
    assert ok.all(), f"{what}: {int((~ok).sum())} of {ok.size} elements differ, e.g. got {got[~ok][:4]} " \
                     f"want {want[~ok][:4]}"


# --- matmul --------------------------------------------------------------------------------------
MATMUL_SIZES = [(1, 1, 1), (5, 7, 9), (17, 3, 33), (61, 40, 77), (0, 4, 5), (3, 0, 4), (4, 5, 0), (7, 1, 1)]


def test_matmul_symbolic_m_k_n():
    spec = KernelSpec("dmm", "matmul", (f32("m", "k"), f32("k", "n")), (f32("m", "n"),))
    lib = build([spec])
    rng = np.random.default_rng(0)
    for m, k, n in MATMUL_SIZES:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        (y,) = lib.run(spec, [a, b], symbols={"m": m, "k": k, "n": n})
        assert_near(y, a.astype(np.float64) @ b, f"m={m} k={k} n={n}", atol=1e-5 * max(k, 1))


def test_matmul_batch_broadcast_with_runtime_ones():
    """A[b, m, k] @ B[c, k, n] -> [max(b, c), m, n]; b or c is 1 at run time in some runs, and a
    static-rank-4 A against a rank-3 B broadcasts the leading dim."""
    out_batch = call("max", "b", "c")
    three = KernelSpec("dmm_b3", "matmul", (f32("b", "m", "k"), f32("c", "k", "n")), (f32(out_batch, "m", "n"),))
    four = KernelSpec("dmm_b4", "matmul", (f32(2, "b", "m", 8), f32("b", 8, "n")), (f32(2, "b", "m", "n"),))
    lib = build([three, four])
    rng = np.random.default_rng(1)
    for bb, c, m, k, n in [(3, 3, 5, 6, 7), (1, 4, 2, 9, 20), (2, 1, 13, 3, 5), (1, 1, 1, 1, 1), (0, 0, 3, 3, 3)]:
        a = rng.standard_normal((bb, m, k)).astype(np.float32)
        b = rng.standard_normal((c, k, n)).astype(np.float32)
        (y,) = lib.run(three, [a, b], symbols={"b": bb, "c": c, "m": m, "k": k, "n": n})
        assert_near(y, np.matmul(a.astype(np.float64), b), f"b={bb} c={c} m={m} k={k} n={n}", atol=1e-5 * k)
    for bb, m, n in [(3, 4, 19), (1, 30, 2), (0, 2, 2)]:
        a = rng.standard_normal((2, bb, m, 8)).astype(np.float32)
        b = rng.standard_normal((bb, 8, n)).astype(np.float32)
        (y,) = lib.run(four, [a, b], symbols={"b": bb, "m": m, "n": n})
        assert_near(y, np.matmul(a.astype(np.float64), b), f"rank 4 @ rank 3, b={bb} m={m} n={n}", atol=8e-5)


def test_matmul_vector_operands():
    vm = KernelSpec("dmm_vm", "matmul", (f32("k"), f32("k", "n")), (f32("n"),))
    mv = KernelSpec("dmm_mv", "matmul", (f32("m", "k"), f32("k")), (f32("m"),))
    lib = build([vm, mv])
    rng = np.random.default_rng(2)
    for m, k, n in [(1, 1, 1), (9, 7, 20), (0, 3, 0), (4, 0, 6)]:
        a = rng.standard_normal(k).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        (y,) = lib.run(vm, [a, b], symbols={"k": k, "n": n})
        assert_near(y, a.astype(np.float64) @ b, f"vector @ matrix k={k} n={n}", atol=1e-5 * max(k, 1))
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal(k).astype(np.float32)
        (y,) = lib.run(mv, [a, b], symbols={"m": m, "k": k})
        assert_near(y, a.astype(np.float64) @ b, f"matrix @ vector m={m} k={k}", atol=1e-5 * max(k, 1))



def test_matmul_f64_symbolic_dims():
    """f64 goes through the same builder: one scalar dot product per element, dims from push constants."""
    f64 = lambda *shape: TensorType(DType.f64, tuple(shape))  # noqa: E731
    spec = KernelSpec("dmm_f64", "matmul", (f64("b", "m", "k"), f64("k", "n")), (f64("b", "m", "n"),))
    lib = build([spec])
    rng = np.random.default_rng(3)
    for bb, m, k, n in [(2, 3, 4, 5), (1, 0, 3, 2), (3, 7, 0, 2), (1, 1, 1, 1)]:
        a, b = rng.standard_normal((bb, m, k)), rng.standard_normal((k, n))
        (y,) = lib.run(spec, [a, b], symbols={"b": bb, "m": m, "k": k, "n": n})
        assert_near(y, a @ b, f"f64 b={bb} m={m} k={k} n={n}")

EPILOGUES = {
    "channel_bias_relu": ((f32("n"),), (EpilogueOp("Add", operand=2, operand_kind="channel"), EpilogueOp("Relu"))),
    "scalar_mul_sigmoid": ((f32(1),), (EpilogueOp("Mul", operand=2, operand_kind="scalar"), EpilogueOp("Sigmoid"))),
    "full_sub_first": ((f32("b", "m", "n"),), (EpilogueOp("Sub", operand=2, operand_kind="full", operand_first=True),)),
    "all_kinds_gelu": ((f32("n"), f32(1), f32("b", "m", "n")),
                       (EpilogueOp("Add", operand=2, operand_kind="channel"),
                        EpilogueOp("Max", operand=3, operand_kind="scalar"),
                        EpilogueOp("Add", operand=4, operand_kind="full"), EpilogueOp("Gelu"),
                        EpilogueOp("LeakyRelu", attrs=(("alpha", 0.1),)))),
}


def test_matmul_epilogues():
    specs = {name: KernelSpec(f"dmm_{name}", "matmul", (f32("b", "m", "k"), f32("k", "n"), *extra),
                              (f32("b", "m", "n"),), epilogue=ops)
             for name, (extra, ops) in EPILOGUES.items()}
    lib = build(list(specs.values()))
    rng = np.random.default_rng(3)
    for name, spec in specs.items():
        for bb, m, k, n in [(2, 5, 7, 9), (1, 1, 1, 1), (3, 13, 0, 30), (1, 20, 16, 45), (0, 2, 2, 2)]:
            symbols = {"b": bb, "m": m, "k": k, "n": n}
            shapes = [tuple(int(symbols.get(str(d), d)) for d in t.shape) for t in spec.inputs]
            arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
            (y,) = lib.run(spec, arrays, symbols=symbols)
            want = apply_epilogue(spec.epilogue, np.matmul(arrays[0].astype(np.float64), arrays[1]), arrays, (n,))
            assert_near(y, want, f"{name} b={bb} m={m} k={k} n={n}", atol=1e-5 * max(k, 1))


def test_matmul_dims_that_disagree_at_run_time_fail_without_touching_memory():
    """A's K and B's K are different symbols: equal they run, unequal the kernel refuses."""
    spec = KernelSpec("dmm_k2", "matmul", (f32("m", "k"), f32("k2", "n")), (f32("m", "n"),))
    lib = build([spec])
    a, b = np.ones((3, 4), np.float32), np.ones((4, 5), np.float32)
    (y,) = lib.run(spec, [a, b], symbols={"m": 3, "k": 4, "k2": 4, "n": 5})
    assert_near(y, np.full((3, 5), 4.0), "k == k2")
    with pytest.raises(RuntimeError, match="returned 1"):
        lib.run(spec, [a, np.ones((2, 5), np.float32)], symbols={"m": 3, "k": 4, "k2": 2, "n": 5})


def test_matmul_static_mismatch_is_a_build_error():
    spec = KernelSpec("dmm_bad", "matmul", (f32("m", 4), f32(5, "n")), (f32("m", "n"),))
    with pytest.raises(ValueError, match="dmm_bad.*inner dim"):
        build([spec])


# --- softmax / logsoftmax / hardmax --------------------------------------------------------------
SOFTMAX_SIZES = [(2, 3, 5), (1, 1, 1), (3, 17, 9), (2, 40, 1), (0, 3, 4), (2, 0, 3), (4, 3, 0)]


def softmax_ref(kind: str, x: np.ndarray, axis: int) -> np.ndarray:
    x = x.astype(np.float64)
    if x.size == 0:
        return x
    if kind == "hardmax":
        out = np.zeros_like(x)
        np.put_along_axis(out, np.expand_dims(x.argmax(axis), axis), 1.0, axis)
        return out
    shifted = x - x.max(axis, keepdims=True)
    log_sum = np.log(np.exp(shifted).sum(axis, keepdims=True))
    return np.exp(shifted - log_sum) if kind == "softmax" else shifted - log_sum


def test_softmax_kinds_every_axis_symbolic():
    specs = [(KernelSpec(f"dsm_{kind}_{axis}", kind, (f32("a", "b", "c"),), (f32("a", "b", "c"),),
                         attrs={"axis": axis}), kind, axis)
             for kind in ("softmax", "logsoftmax", "hardmax") for axis in (0, 1, 2)]
    lib = build([s for s, _, _ in specs])
    rng = np.random.default_rng(4)
    for spec, kind, axis in specs:
        for shape in SOFTMAX_SIZES:
            x = (rng.standard_normal(shape) * 3).astype(np.float32)
            (y,) = lib.run(spec, [x], symbols=dict(zip("abc", shape)))
            assert_near(y, softmax_ref(kind, x, axis), f"{kind} axis {axis} shape {shape}")


def test_softmax_static_inner_and_symbolic_outer():
    """inner known at build time (1, or 7) with the other dims symbolic: one code path each."""
    last = KernelSpec("dsm_last", "softmax", (f32("a", "b"),), (f32("a", "b"),), attrs={"axis": 1})
    mid = KernelSpec("dsm_mid", "logsoftmax", (f32("a", "b", 7),), (f32("a", "b", 7),), attrs={"axis": 1})
    lib = build([last, mid])
    rng = np.random.default_rng(5)
    for a, b in [(1, 1), (3, 128), (5, 13), (0, 4)]:
        x = rng.standard_normal((a, b)).astype(np.float32)
        (y,) = lib.run(last, [x], symbols={"a": a, "b": b})
        assert_near(y, softmax_ref("softmax", x, 1), f"softmax [{a}, {b}]")
        x = rng.standard_normal((a, b, 7)).astype(np.float32)
        (y,) = lib.run(mid, [x], symbols={"a": a, "b": b})
        assert_near(y, softmax_ref("logsoftmax", x, 1), f"logsoftmax [{a}, {b}, 7]")


# --- reduce --------------------------------------------------------------------------------------
REDUCE_KINDS = ("sum", "mean", "max", "min", "prod", "l1", "l2", "logsum", "logsumexp", "sumsquare")
REDUCE_SIZES = [(2, 3, 5), (1, 1, 1), (3, 17, 9), (2, 40, 1), (0, 3, 4), (2, 0, 3), (4, 3, 0)]


def reduce_ref(kind: str, x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    """numpy with the reducers' start values, so empty reductions are defined (mean: 0 / 0)."""
    x = x.astype(np.float64)
    count = int(np.prod([x.shape[a] for a in axes]))
    with np.errstate(all="ignore"):
        total = {
            "sum": lambda: x.sum(axes, keepdims=keepdims),
            "mean": lambda: x.sum(axes, keepdims=keepdims) / count,
            "max": lambda: np.max(x, axes, keepdims=keepdims, initial=-np.inf),
            "min": lambda: np.min(x, axes, keepdims=keepdims, initial=np.inf),
            "prod": lambda: x.prod(axes, keepdims=keepdims),
            "l1": lambda: np.abs(x).sum(axes, keepdims=keepdims),
            "l2": lambda: np.sqrt((x * x).sum(axes, keepdims=keepdims)),
            "logsum": lambda: np.log(x.sum(axes, keepdims=keepdims)),
            "logsumexp": lambda: np.log(np.exp(x).sum(axes, keepdims=keepdims)),
            "sumsquare": lambda: (x * x).sum(axes, keepdims=keepdims),
        }[kind]()
    return np.asarray(total)


def reduce_spec(kind: str, axes: tuple[int, ...], keepdims: bool) -> KernelSpec:
    dims = ("a", "b", "c")
    out = tuple(1 if i in axes else d for i, d in enumerate(dims)) if keepdims else \
        tuple(d for i, d in enumerate(dims) if i not in axes)
    return KernelSpec(f"drd_{kind}_{''.join(map(str, axes))}_{int(keepdims)}", "reduce", (f32(*dims),), (f32(*out),),
                      attrs={"kind": kind, "axes": list(axes), "keepdims": int(keepdims)})


def test_reduce_every_kind_and_axes_symbolic():
    cases = [(kind, axes, keepdims) for kind in REDUCE_KINDS
             for axes, keepdims in (((0,), False), ((1,), True), ((2,), False), ((1, 2), False), ((0, 1, 2), True))]
    specs = [reduce_spec(*case) for case in cases]
    lib = build(specs)
    rng = np.random.default_rng(6)
    for spec, (kind, axes, keepdims) in zip(specs, cases):
        for shape in REDUCE_SIZES:
            x = (rng.random(shape) + 0.5).astype(np.float32)  # positive: logsum is defined
            (y,) = lib.run(spec, [x], symbols=dict(zip("abc", shape)))
            assert_near(y, reduce_ref(kind, x, axes, keepdims), f"{kind} axes {axes} shape {shape}")


def test_reduce_axes_around_a_static_one():
    """Axes 0 and 2 with a known 1 between them are one contiguous run; a symbolic dim there is not."""
    spec = KernelSpec("drd_gap", "reduce", (f32("a", 1, "c", "d"),), (f32("d"),),
                      attrs={"kind": "mean", "axes": [0, 2], "keepdims": 0})
    lib = build([spec])
    rng = np.random.default_rng(7)
    for a, c, d in [(3, 4, 5), (1, 1, 1), (2, 7, 0)]:
        x = rng.standard_normal((a, 1, c, d)).astype(np.float32)
        (y,) = lib.run(spec, [x], symbols={"a": a, "c": c, "d": d})
        assert_near(y, x.astype(np.float64).mean(axis=(0, 1, 2)), f"mean a={a} c={c} d={d}")
    gap = KernelSpec("drd_gap_bad", "reduce", (f32("a", "b", "c"),), (f32("b"),),
                     attrs={"kind": "sum", "axes": [0, 2], "keepdims": 0})
    with pytest.raises(ValueError, match="drd_gap_bad.*not one contiguous run"):
        build([gap])


# --- lrn -----------------------------------------------------------------------------------------
def test_lrn_symbolic_batch_channels_and_spatial():
    """X[n, c, h, w] with every dim symbolic, against the ONNX definition (tests/codegen/test_lrn.py)."""
    spec = KernelSpec("dlrn", "lrn", (f32("n", "c", "h", "w"),), (f32("n", "c", "h", "w"),),
                      {"size": 5, "alpha": 1e-2, "beta": 0.75, "bias": 2.0})
    lib = build([spec])
    rng = np.random.default_rng(8)
    for shape in [(2, 7, 5, 6), (1, 1, 1, 1), (1, 3, 13, 3), (0, 4, 2, 2), (2, 0, 3, 3), (1, 4, 0, 5)]:
        x = (rng.standard_normal(shape) * 3).astype(np.float32)
        (y,) = lib.run(spec, [x], symbols=dict(zip("nchw", shape)))
        want = lrn_reference(x, 5, 1e-2, 0.75, 2.0) if x.size else x.astype(np.float64)
        assert_near(y, want, f"lrn shape {shape}")


# --- other targets -------------------------------------------------------------------------------
def test_dynamic_linalg_kernels_build_for_arm64():
    specs = [
        KernelSpec("a_mm", "matmul", (f32("b", "m", "k"), f32("k", "n"), f32("n")), (f32("b", "m", "n"),),
                   epilogue=(EpilogueOp("Add", operand=2, operand_kind="channel"), EpilogueOp("Relu"))),
        KernelSpec("a_sm", "softmax", (f32("a", "b"),), (f32("a", "b"),), attrs={"axis": 1}),
        KernelSpec("a_hm", "hardmax", (f32("a", "b", "c"),), (f32("a", "b", "c"),), attrs={"axis": 1}),
        reduce_spec("mean", (1,), False),
        KernelSpec("a_lrn", "lrn", (f32("n", "c", "h"),), (f32("n", "c", "h"),),
                   {"size": 3, "alpha": 1e-4, "beta": 0.75, "bias": 1.0}),
    ]
    blob = build_executable(specs, load_target("arm64"))
    assert blob.arch == "aarch64"
    assert [k.name for k in blob.kernels] == [s.name for s in specs]
    assert [str(p) for p in blob.kernels[0].push_constants] == ["b", "k", "m", "n"]
