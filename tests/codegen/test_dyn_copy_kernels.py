"""The data-movement kernels on symbolic dims (transpose, slice, expand, concat, pad, bitcast, gather
and gather_elements, whose one builder each in codegen/llvm/ takes int or Expr dims; cumsum/cumprod
and argmax/argmin): each spec is built once and run at
several sizes (a 1 and a 0 among them) through the jit harness, compared exactly with numpy.
Sizes that break a kernel's precondition make the kernel fail (it returns an error) instead of
touching memory."""
from __future__ import annotations

from typing import Callable

import numpy as np
import pytest

from iree_py.codegen.kernel_abi import STATUS_INDEX_OUT_OF_RANGE
from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm import build_executable
from iree_py.codegen.llvm.dims import is_dynamic
from iree_py.codegen.llvm.jit import LoadedLibrary
from iree_py.targets import load_target
from iree_py.ir.symbols import Expr, call, evaluate
from iree_py.ir.types import DType, TensorType

RNG = np.random.default_rng(11)
N, M, A, B = (Expr.of(s) for s in "nmab")


def t(dtype: DType, *shape) -> TensorType:
    return TensorType(dtype, tuple(shape))


def random(dtype: DType, shape: tuple[int, ...]) -> np.ndarray:
    if dtype.numpy.kind == "f":
        return RNG.standard_normal(shape).astype(dtype.numpy)
    info = np.iinfo(dtype.numpy)
    return RNG.integers(max(info.min, -100), min(info.max, 100), size=shape, endpoint=True).astype(dtype.numpy)


def shape_of(tensor: TensorType, symbols: dict[str, int]) -> tuple[int, ...]:
    return tuple(evaluate(d, symbols) for d in tensor.shape)


def numpy_gather(data: np.ndarray, idx: np.ndarray, axis: int) -> np.ndarray:
    n = data.shape[axis]
    return np.take(data, np.where(idx < 0, idx + n, idx).astype(np.int64), axis=axis)


def numpy_pad(x: np.ndarray, pads: list[int], mode: str, value: float) -> np.ndarray:
    rank = x.ndim
    crop = tuple(slice(max(-pads[a], 0), x.shape[a] - max(-pads[rank + a], 0)) for a in range(rank))
    widths = [(max(pads[a], 0), max(pads[rank + a], 0)) for a in range(rank)]
    if mode == "constant":
        return np.pad(x[crop], widths, mode="constant", constant_values=np.array(value, x.dtype))
    return np.pad(x[crop], widths, mode=mode)


def numpy_cumulative(x: np.ndarray, axis: int, exclusive: bool, reverse: bool, kind: str) -> np.ndarray:
    op = np.cumsum if kind == "cumsum" else np.cumprod
    y = np.flip(x, axis) if reverse else x
    out = op(y, axis=axis, dtype=x.dtype)
    if exclusive and x.shape[axis]:  # shift by one, the identity first
        head = (np.zeros_like if kind == "cumsum" else np.ones_like)(np.take(out, [0], axis=axis))
        out = np.concatenate([head, np.delete(out, -1, axis=axis)], axis=axis)
    return np.flip(out, axis) if reverse else out


def numpy_arg(x: np.ndarray, axis: int, kind: str, last: bool) -> np.ndarray:
    f = np.argmax if kind == "argmax" else np.argmin
    if last:
        flipped = np.flip(x, axis)
        return (x.shape[axis] - 1 - f(flipped, axis=axis, keepdims=True)).astype(np.int64)
    return f(x, axis=axis, keepdims=True).astype(np.int64)


# reference(input arrays, symbol values) -> expected output
Reference = Callable[[list[np.ndarray], dict[str, int]], np.ndarray]
# (spec, reference, sizes to run, sizes whose run must fail)
CASES: list[tuple[KernelSpec, Reference, list[dict[str, int]], list[dict[str, int]]]] = []


def case(spec: KernelSpec, reference: Reference, sizes: list[dict[str, int]],
         failing: list[dict[str, int]] | None = None) -> None:
    CASES.append((spec, reference, sizes, failing or []))


# transpose: f32 and i16
for dt in (DType.f32, DType.i16):
    case(KernelSpec(f"transpose_{dt.value}", "transpose", (t(dt, N, 3, M),), (t(dt, M, N, 3),), {"perm": (2, 0, 1)}),
         lambda a, s: a[0].transpose(2, 0, 1), [{"n": 2, "m": 5}, {"n": 1, "m": 1}, {"n": 0, "m": 4}, {"n": 3, "m": 0},
          {"n": 20000, "m": 1}])  # the last: 4 workgroups
# slice x[1::2, m-1::-1] (an Expr start, a negative step)
for dt in (DType.f32, DType.i8):
    case(KernelSpec(f"slice_{dt.value}", "slice", (t(dt, N, M),), (t(dt, call("ceildiv", N - 1, 2), M),),
                    {"starts": (1, M - 1), "ends": (N, -1), "steps": (2, -1)}),
         lambda a, s: a[0][1::2, ::-1], [{"n": 7, "m": 3}, {"n": 2, "m": 1}, {"n": 1, "m": 4}, {"n": 6, "m": 0}])
# a slice whose output claims more than the input holds fails instead of reading past it
case(KernelSpec("slice_checked", "slice", (t(DType.f32, N),), (t(DType.f32, A),),
                {"starts": (1,), "ends": (N,), "steps": (1,)}),
     lambda a, s: a[0][1:], [{"n": 4, "a": 3}, {"n": 1, "a": 0}], [{"n": 4, "a": 4}])
# only the start is symbolic: a window of 3 at offset a
case(KernelSpec("slice_window", "slice", (t(DType.i64, 8, 2),), (t(DType.i64, 3, 2),),
                {"starts": (A, 0), "ends": (A + 3, 2), "steps": (1, 1)}),
     lambda a, s: a[0][s["a"]:s["a"] + 3], [{"a": 0}, {"a": 5}, {"a": 2}], [{"a": 6}])
# expand: [a, 1, 3] -> [b, a, m, 3] (a symbolic attrs shape), f32 and i32
for dt in (DType.f32, DType.i32):
    case(KernelSpec(f"expand_{dt.value}", "expand", (t(dt, A, 1, 3),), (t(dt, B, A, M, 3),), {"shape": (B, A, M, 3)}),
         lambda a, s: np.broadcast_to(a[0], (s["b"], s["a"], s["m"], 3)),
         [{"a": 2, "b": 3, "m": 4}, {"a": 1, "b": 1, "m": 1}, {"a": 0, "b": 2, "m": 3}, {"a": 3, "b": 2, "m": 0}])
# expand [a, 3] -> [b, 3]: a is 1 (broadcast) or b at run time; anything else fails
case(KernelSpec("expand_runtime_broadcast", "expand", (t(DType.f32, A, 3),), (t(DType.f32, B, 3),), {"shape": (B, 3)}),
     lambda a, s: np.broadcast_to(a[0], (s["b"], 3)),
     [{"a": 1, "b": 4}, {"a": 4, "b": 4}, {"a": 1, "b": 1}, {"a": 1, "b": 0}, {"a": 0, "b": 0}],
     [{"a": 2, "b": 4}, {"a": 0, "b": 3}])
# concat along a symbolic axis (f32, u8) and along axis 0
for dt in (DType.f32, DType.u8):
    case(KernelSpec(f"concat_{dt.value}", "concat", (t(dt, N, A), t(dt, N, 2), t(dt, N, B)), (t(dt, N, A + B + 2),),
                    {"axis": 1}),
         lambda a, s: np.concatenate(a, axis=1),
         [{"n": 3, "a": 1, "b": 4}, {"n": 1, "a": 0, "b": 2}, {"n": 0, "a": 3, "b": 3}, {"n": 2, "a": 5, "b": 0},
          {"n": 9000, "a": 1, "b": 1}])
case(KernelSpec("concat_axis0", "concat", (t(DType.i64, A, 3), t(DType.i64, B, 3)), (t(DType.i64, A + B, 3),),
                {"axis": 0}),
     lambda a, s: np.concatenate(a, axis=0), [{"a": 2, "b": 1}, {"a": 0, "b": 4}, {"a": 1, "b": 0}])
# gather: data [n, m] along axis 1 with i64 indices (negative ones too), and along axis 0 of i32
# data with i32 indices [a, 2]; an axis of 0 takes no index (a = 0)
case(KernelSpec("gather_axis1", "gather", (t(DType.f32, N, M), t(DType.i64, A)), (t(DType.f32, N, A),), {"axis": 1}),
     lambda a, s: numpy_gather(a[0], a[1], 1),
     [{"n": 3, "m": 5, "a": 7}, {"n": 1, "m": 1, "a": 3}, {"n": 2, "m": 0, "a": 0}, {"n": 0, "m": 3, "a": 2},
      {"n": 2, "m": 3, "a": 0}, {"n": 300, "m": 4, "a": 100}])
case(KernelSpec("gather_axis0", "gather", (t(DType.i32, N, 4), t(DType.i32, A, 2)), (t(DType.i32, A, 2, 4),),
                {"axis": 0}),
     lambda a, s: numpy_gather(a[0], a[1], 0), [{"n": 5, "a": 3}, {"n": 1, "a": 1}, {"n": 0, "a": 0}, {"n": 4, "a": 0}])
# gather_elements: along a symbolic axis 0 of i64 data [n, m] with indices [a, m]; along axis 1 with
# indices [a, b] of data [n, m], which needs a <= n (the kernel checks it: a = 3 > n = 2 fails)
case(KernelSpec("gather_elements_axis0", "gather_elements", (t(DType.i64, N, M), t(DType.i64, A, M)),
                (t(DType.i64, A, M),), {"axis": 0}),
     lambda a, s: np.take_along_axis(a[0], a[1], axis=0),
     [{"n": 3, "m": 4, "a": 5}, {"n": 1, "m": 1, "a": 1}, {"n": 2, "m": 0, "a": 3}, {"n": 4, "m": 2, "a": 0}])
case(KernelSpec("gather_elements_axis1", "gather_elements", (t(DType.f32, N, M), t(DType.i32, A, B)),
                (t(DType.f32, A, B),), {"axis": 1}),
     lambda a, s: np.take_along_axis(a[0][:a[1].shape[0]], a[1].astype(np.int64), axis=1),
     [{"n": 3, "m": 4, "a": 2, "b": 6}, {"n": 2, "m": 1, "a": 2, "b": 1}, {"n": 5, "m": 3, "a": 0, "b": 2}],
     [{"n": 2, "m": 3, "a": 3, "b": 1}])
# pad: constant (with crops; f32 and i16), reflect and edge
PAD_CROP = [1, -1, 2, 2]
for dt in (DType.f32, DType.i16):
    case(KernelSpec(f"pad_constant_{dt.value}", "pad", (t(dt, N, M),), (t(dt, N + 3, M + 1),),
                    {"mode": "constant", "pads": PAD_CROP, "value": 7}),
         lambda a, s: numpy_pad(a[0], PAD_CROP, "constant", 7),
         [{"n": 3, "m": 4}, {"n": 1, "m": 1}, {"n": 0, "m": 3}, {"n": 2, "m": 1}, {"n": 5000, "m": 2}],
         [{"n": 2, "m": 0}])  # the crop of 1 is more than the axis holds
PAD_MIRROR = [2, 1, 1, 3]
for mode in ("reflect", "edge", "wrap", "symmetric"):
    case(KernelSpec(f"pad_{mode}", "pad", (t(DType.f32, N, M),), (t(DType.f32, N + 3, M + 4),),
                    {"mode": mode, "pads": PAD_MIRROR}),
         lambda a, s, mode=mode: numpy_pad(a[0], PAD_MIRROR, mode, 0),
         [{"n": 3, "m": 4}, {"n": 1, "m": 1}, {"n": 2, "m": 2}, {"n": 5, "m": 3}],
         [{"n": 0, "m": 2}])  # nothing to mirror or repeat
# cumsum / cumprod along a symbolic axis: f32, i64, i32
for name, dt, kind, exclusive, reverse in (("cumsum_f32", DType.f32, "cumsum", 0, 0),
                                           ("cumsum_i64_excl_rev", DType.i64, "cumsum", 1, 1),
                                           ("cumprod_i32_rev", DType.i32, "cumprod", 0, 1)):
    case(KernelSpec(name, kind, (t(dt, N, M, 2),), (t(dt, N, M, 2),),
                    {"axis": 1, "exclusive": exclusive, "reverse": reverse}),
         lambda a, s, kind=kind, ex=exclusive, rev=reverse: numpy_cumulative(a[0], 1, bool(ex), bool(rev), kind),
         [{"n": 2, "m": 5}, {"n": 1, "m": 1}, {"n": 3, "m": 0}, {"n": 0, "m": 4}])
# argmax / argmin (f32 in, i64 out; ties in the data: small integers as floats)
for kind, last in (("argmax", 0), ("argmin", 1)):
    case(KernelSpec(f"{kind}_{last}", kind, (t(DType.f32, N, M, 2),), (t(DType.i64, N, 1, 2),),
                    {"axis": 1, "select_last_index": last}),
         lambda a, s, kind=kind, last=last: numpy_arg(a[0], 1, kind, bool(last)),
         [{"n": 2, "m": 5}, {"n": 1, "m": 1}, {"n": 0, "m": 3}, {"n": 3, "m": 7}],
         [{"n": 2, "m": 0}])  # no element to pick

# bitcast f32 -> i32: the bytes unchanged
case(KernelSpec("bitcast", "bitcast", (t(DType.f32, N, 3),), (t(DType.i32, N, 3),), {"to": DType.i32}),
     lambda a, s: a[0].view(np.int32), [{"n": 4}, {"n": 1}, {"n": 0}])


def inputs_for(spec: KernelSpec, symbols: dict[str, int]) -> list[np.ndarray]:
    arrays = []
    for tensor in spec.inputs:
        shape = shape_of(tensor, symbols)
        if spec.kind in ("gather", "gather_elements") and tensor is spec.inputs[1]:  # in range, negative ones too
            axis_size = shape_of(spec.inputs[0], symbols)[spec.attrs["axis"]]
            arrays.append(RNG.integers(-axis_size, max(axis_size, 1), size=shape).astype(tensor.dtype.numpy)
                          if axis_size else np.zeros(shape, tensor.dtype.numpy))
        elif spec.kind in ("argmax", "argmin", "cumprod"):
            arrays.append(RNG.integers(-3, 3, size=shape, endpoint=True).astype(tensor.dtype.numpy))
        else:
            arrays.append(random(tensor.dtype, shape))
    return arrays


@pytest.fixture(scope="module")
def library() -> LoadedLibrary:
    return LoadedLibrary(build_executable([spec for spec, *_ in CASES], load_target("host")))


@pytest.mark.parametrize("index", range(len(CASES)), ids=[spec.name for spec, *_ in CASES])
def test_dynamic_copy_kernel_matches_numpy(library: LoadedLibrary, index: int) -> None:
    spec, reference, sizes, _ = CASES[index]
    assert is_dynamic(spec)
    for symbols in sizes:
        arrays = inputs_for(spec, symbols)
        (got,) = library.run(spec, arrays, symbols)
        want = reference(arrays, symbols)
        assert got.dtype == want.dtype and got.shape == want.shape, f"{spec.name} at {symbols}"
        np.testing.assert_array_equal(got, want, err_msg=f"{spec.name} at {symbols}")


@pytest.mark.parametrize("index", [i for i, c in enumerate(CASES) if c[3]],
                         ids=[spec.name for spec, _, _, failing in CASES if failing])
def test_dynamic_copy_kernel_fails_on_inconsistent_sizes(library: LoadedLibrary, index: int) -> None:
    spec, _, _, failing = CASES[index]
    for symbols in failing:
        with pytest.raises(RuntimeError, match="returned 1"):
            library.run(spec, inputs_for(spec, symbols), symbols)


@pytest.mark.parametrize("name", ["gather_axis1", "gather_axis0", "gather_elements_axis0"])
def test_dynamic_gather_fails_on_an_index_out_of_range(library: LoadedLibrary, name: str) -> None:
    """The index checks use the run-time axis size: at n = 3 (axis 0) or m = 3 (axis 1), 3 and -4 fail;
    -3 and 2 (the last in range) are what the numpy reference reads."""
    spec, reference, _, _ = next(c for c in CASES if c[0].name == name)
    symbols = {"n": 3, "m": 3, "a": 2, "b": 2}
    arrays = inputs_for(spec, symbols)
    for bad in (3, -4):
        for good in (-3, 2):
            idx = np.full_like(arrays[1], good)
            idx.flat[-1] = bad
            with pytest.raises(RuntimeError, match=f"returned {STATUS_INDEX_OUT_OF_RANGE}"):
                library.run(spec, [arrays[0], idx], symbols)
            idx.flat[-1] = good
            (got,) = library.run(spec, [arrays[0], idx], symbols)
            np.testing.assert_array_equal(got, reference([arrays[0], idx], symbols))


def test_dynamic_copy_kernels_build_for_arm64() -> None:
    blob = build_executable([spec for spec, *_ in CASES], load_target("arm64"))
    assert blob.arch == "aarch64" and len(blob.kernels) == len(CASES)
