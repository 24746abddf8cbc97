"""The "qsoftmax" kernel (TFLite's fixed-point int8/uint8 SOFTMAX) and the "qlookup" kernel (its
int8 LOGISTIC/TANH tables) against their bit-exact numpy references (ir/ops/qsoftmax.py,
ir/ops/quantized.py): on the host through jit.py, on arm64 and cortex-m4 under qemu-user as a whole
module from a TFLite model, and linked into flat images for cortex-m4 and riscv32 without libgcc
(integer arithmetic only, no compiler builtins)."""
from __future__ import annotations

import numpy as np
import pytest

import iree_py
from iree_py.codegen.dispatch import DIRECT_KERNELS
from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm.flat_image import link_flat_image
from iree_py.codegen.llvm.jit import run_kernels
from iree_py.codegen.llvm import build_kernel_objects
from iree_py.targets import load_target
from iree_py.ir.ops import infer_types
from iree_py.ir.ops.qsoftmax import qsoftmax_params
from iree_py.ir.reference import KERNELS
from iree_py.ir.types import DType, TensorType

RNG = np.random.default_rng(99)
NUMPY = {"i8": np.int8, "u8": np.uint8}


def _t(a: np.ndarray) -> TensorType:
    return TensorType(DType.from_numpy(a.dtype), a.shape)


def _spec(name: str, x: np.ndarray, attrs: dict, op: str = "QSoftmax") -> KernelSpec:
    kind, names = DIRECT_KERNELS[op]
    out = infer_types(op, [_t(x)], attrs)
    return KernelSpec(name, kind, (_t(x),), tuple(out), {n: attrs[n] for n in names})


def _case(dtype: str, shape: tuple[int, ...], scale: float, beta: float = 1.0, x: np.ndarray | None = None
          ) -> tuple[np.ndarray, dict]:
    if x is None:
        lo = -128 if dtype == "i8" else 0
        x = RNG.integers(lo, lo + 256, shape).astype(NUMPY[dtype])
    return x, {**qsoftmax_params(beta, scale), "out_dtype": dtype}


CASES = [
    _case("i8", (4, 10), 0.1),
    _case("i8", (2, 3, 37), 0.05, 0.7),
    _case("i8", (3, 9), 2.0),                       # large scale: diff_min cuts most of the row
    _case("i8", (5, 1), 0.3),                       # one element: the output is the largest value
    _case("i8", (2, 300), 0.01),                    # long rows, many terms in the sum
    _case("u8", (6, 16), 0.2),
    _case("u8", (1, 255), 0.004, 1.5),
    _case("i8", (2, 8), 0.1, x=np.full((2, 8), 7, np.int8)),          # all equal: ties everywhere
    _case("i8", (1, 4), 0.05, x=np.array([[127, -128, 127, -128]], np.int8)),
]


def test_qsoftmax_kernel_matches_reference_on_host() -> None:
    specs = [_spec(f"qsoftmax{i}", x, attrs) for i, (x, attrs) in enumerate(CASES)]
    results = run_kernels(specs, [[x] for x, _ in CASES])
    for spec, (x, attrs), (got,) in zip(specs, CASES, results):
        want = KERNELS["QSoftmax"]([x], attrs)
        assert got.dtype == want.dtype and got.shape == want.shape, spec.name
        wrong = np.argwhere(got != want)
        assert wrong.size == 0, (f"{spec.name} {attrs}: {len(wrong)} of {got.size} differ, first at "
                                 f"{tuple(wrong[0])}: got {got[tuple(wrong[0])]}, want {want[tuple(wrong[0])]}")


def test_qlookup_kernel_matches_reference_on_host() -> None:
    cases = []
    for dtype, count in (("i8", 300), ("u8", 5000), ("i8", 1)):
        table = [int(v) for v in RNG.integers(*((-128, 128) if dtype == "i8" else (0, 256)), 256)]
        lo = -128 if dtype == "i8" else 0
        cases.append((RNG.integers(lo, lo + 256, count).astype(NUMPY[dtype]), {"table": table, "out_dtype": dtype}))
    specs = [_spec(f"qlookup{i}", x, attrs, "QLookup") for i, (x, attrs) in enumerate(cases)]
    for (x, attrs), (got,) in zip(cases, run_kernels(specs, [[x] for x, _ in cases])):
        np.testing.assert_array_equal(got, KERNELS["QLookup"]([x], attrs))


def _model(dtype: str, shape: tuple[int, ...], scale: float, beta: float, op: str = "SOFTMAX") -> bytes:
    """A TFLite model x -> SOFTMAX (or TANH) on int8 or uint8, written with our generated object API."""
    import flatbuffers

    from iree_py.frontends.tflite.schema.BuiltinOperator import BuiltinOperator
    from iree_py.frontends.tflite.schema.BuiltinOptions import BuiltinOptions
    from iree_py.frontends.tflite.schema.Buffer import BufferT
    from iree_py.frontends.tflite.schema.Model import ModelT
    from iree_py.frontends.tflite.schema.Operator import OperatorT
    from iree_py.frontends.tflite.schema.OperatorCode import OperatorCodeT
    from iree_py.frontends.tflite.schema.QuantizationParameters import QuantizationParametersT
    from iree_py.frontends.tflite.schema.SoftmaxOptions import SoftmaxOptionsT
    from iree_py.frontends.tflite.schema.SubGraph import SubGraphT
    from iree_py.frontends.tflite.schema.Tensor import TensorT
    from iree_py.frontends.tflite.schema.TensorType import TensorType as Tfl

    def tensor(name: str, s: float, zp: int) -> TensorT:
        t = TensorT()
        t.name, t.shape, t.type, t.buffer = name, list(shape), Tfl.INT8 if dtype == "i8" else Tfl.UINT8, 0
        t.quantization = QuantizationParametersT()
        t.quantization.scale, t.quantization.zeroPoint = [s], [zp]
        return t

    code = OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = getattr(BuiltinOperator, op)
    code.version = 1
    operator = OperatorT()
    operator.opcodeIndex, operator.inputs, operator.outputs = 0, [0], [1]
    if op == "SOFTMAX":
        operator.builtinOptionsType, operator.builtinOptions = BuiltinOptions.SoftmaxOptions, SoftmaxOptionsT()
        operator.builtinOptions.beta = beta
        out = tensor("y", 1 / 256, -128 if dtype == "i8" else 0)
    else:
        out = tensor("y", 1 / 128, 0 if dtype == "i8" else 128)
    sub = SubGraphT()
    sub.tensors = [tensor("x", scale, 5 if dtype == "i8" else 128), out]
    sub.inputs, sub.outputs, sub.operators = [0], [1], [operator]
    model = ModelT()
    model.version, model.operatorCodes, model.subgraphs, model.buffers = 3, [code], [sub], [BufferT()]
    builder = flatbuffers.Builder(256)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


@pytest.mark.parametrize("target,device", [("arm64", "qemu"), ("cortex-m4", "qemu-user")])
def test_qsoftmax_runs_bit_exactly_on(target: str, device: str) -> None:
    for dtype, shape, scale, beta in (("i8", (3, 21), 0.08, 1.0), ("u8", (2, 2, 9), 0.5, 0.6)):
        x, attrs = _case(dtype, shape, scale, beta)
        want = KERNELS["QSoftmax"]([x], attrs)
        (got,) = iree_py.load(iree_py.compile(_model(dtype, shape, scale, beta), target=target),
                              device=device).main.call(x)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want, err_msg=f"{dtype} softmax on {target}")
    from iree_py.frontends.tflite.importer import import_tflite
    from iree_py.ir.reference import evaluate

    tanh = _model("i8", (256,), 0.05, 1.0, "TANH")
    x = np.arange(-128, 128).astype(np.int8)
    (got,) = iree_py.load(iree_py.compile(tanh, target=target), device=device).main.call(x)
    np.testing.assert_array_equal(got, np.asarray(evaluate(import_tflite(tanh), [x])[0]), err_msg=f"tanh on {target}")


@pytest.mark.parametrize("target", ["cortex-m4", "riscv32"])
def test_qsoftmax_needs_no_compiler_builtins_on(target: str) -> None:
    t = load_target(target)
    specs = [_spec(f"qsoftmax{i}", x, attrs) for i, (x, attrs) in enumerate(CASES[:2] + CASES[5:6])]
    specs.append(_spec("qlookup", np.zeros(300, np.int8), {"table": list(range(-128, 128)), "out_dtype": "i8"},
                       "QLookup"))
    built = build_kernel_objects(specs, t)
    image = link_flat_image(list(built.objects), list(built.symbols), t, "qsoftmax")
    assert not image.used_libgcc
