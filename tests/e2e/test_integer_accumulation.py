"""Integer products accumulate in int32 for any reduction depth, bit-exact with the ONNX
specification (harness.run_spec: onnx's reference evaluator), on every CPU target.

Each case reduces over thousands of products with the operands at the ends of their ranges
(255 - 0, -128 - 127: |x - x_zp| = |w - w_zp| = 255), so the sums leave int16 and pass 2**24 (where
float32 stops being exact: the old float path refused them); one MatMulInteger passes 2**31 and
wraps as the specification's int32 arithmetic does. A few values off the extremes keep every output
different, so a wrong index cannot hide. The kernels differ by target: x86 with VNNI (host here)
and without (x86_64: vpmaddwd), Arm (partial reductions), the generic loops on riscv64 and
cortex-m4 (qemu-user); riscv32 compiles to a flat image that needs no libgcc (the emulated board
runs the convinteger / matmulinteger cases of test_ops.py)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import iree_py
from harness import run_spec
from iree_py.codegen.llvm.flat_image import link_flat_image
from iree_py.codegen.llvm import build_kernel_objects
from iree_py.targets import load_target
from iree_py.compiler import deduplicate, partition
from iree_py.frontends.onnx import import_onnx
from iree_py.passes.pipeline import run_pipeline
from iree_py.vm.memory_plan import plan_memory

DEVICES = {"host": "local", "x86_64": "local", "arm64": "qemu", "riscv64": "qemu", "cortex-m4": "qemu-user"}
ELEM = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8,
        np.dtype(np.int32): TensorProto.INT32, np.dtype(np.float32): TensorProto.FLOAT}
RANGE = {np.dtype(np.uint8): (0, 255), np.dtype(np.int8): (-128, 127)}


def extreme(dtype, shape, value: int, seed: int, spread: float = 0.1) -> np.ndarray:
    """`value` everywhere but for a random `spread` of the entries, which take any value."""
    rng = np.random.default_rng(seed)
    lo, hi = RANGE[np.dtype(dtype)]
    a = np.full(shape, value, dtype)
    mask = rng.random(shape) < spread
    a[mask] = rng.integers(lo, hi + 1, int(mask.sum()))
    return a


def onnx_model(node: onnx.NodeProto, feeds: dict[str, np.ndarray], consts: dict[str, np.ndarray], opset: int,
               out_dtype=np.int32, dims: dict[str, list] | None = None) -> onnx.ModelProto:
    """One node; `feeds` are graph inputs (shapes from the arrays, or `dims` with symbols)."""
    dims = dims or {}
    graph = helper.make_graph(
        [node], "integer_accumulation",
        [helper.make_tensor_value_info(n, ELEM[a.dtype], dims.get(n, list(a.shape))) for n, a in feeds.items()],
        [helper.make_tensor_value_info(node.output[0], ELEM[np.dtype(out_dtype)], None)],
        [numpy_helper.from_array(a, n) for n, a in consts.items()])
    opset_id = helper.make_opsetid("", opset)
    m = helper.make_model(graph, opset_imports=[opset_id])
    m.ir_version = helper.find_min_ir_version_for([opset_id])
    return m


def conv_integer_u8() -> tuple[onnx.ModelProto, list[np.ndarray]]:
    """512 channels x 3x3 = 4608 products of 255 * -255; per-channel weight zero points at both ends."""
    x = extreme(np.uint8, (1, 512, 5, 5), 255, 1)
    w_zp = np.array([255, 0, 255, 0, 255, 128], np.uint8)
    w = np.stack([extreme(np.uint8, (512, 3, 3), 255 - int(z) if z != 128 else 0, 2 + i) for i, z in enumerate(w_zp)])
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 1, 1, 1])
    return onnx_model(node, {"x": x}, {"w": w, "xz": np.array(0, np.uint8), "wz": w_zp}, 10), [x]


def conv_integer_s8_runtime_zero_point() -> tuple[onnx.ModelProto, list[np.ndarray]]:
    """-128 - 127 times 127 - (-128), the input's zero point a graph input (as DynamicQuantizeLinear's)."""
    x = extreme(np.int8, (1, 512, 4, 6), -128, 3)
    w = extreme(np.int8, (4, 512, 3, 3), 127, 4)
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], strides=[1, 2], pads=[1, 0, 2, 1])
    return (onnx_model(node, {"x": x, "xz": np.array(127, np.int8)}, {"w": w, "wz": np.array(-128, np.int8)}, 10),
            [x, np.array(127, np.int8)])


def conv_integer_u8_s8() -> tuple[onnx.ModelProto, list[np.ndarray]]:
    """u8 x s8 with weight zero point 0 (the dot-product kernels' plain case): 255 * -128, depth 4608."""
    x = extreme(np.uint8, (2, 512, 3, 4), 255, 5)
    w = extreme(np.int8, (5, 512, 3, 3), -128, 6)
    node = helper.make_node("ConvInteger", ["x", "w"], ["y"], pads=[1, 1, 1, 1])
    return onnx_model(node, {"x": x}, {"w": w}, 10), [x]


def matmul_integer_k4096() -> tuple[onnx.ModelProto, list[np.ndarray]]:
    """K = 4096 products of 255 * -255 per output; per-column zero points of b at both ends."""
    a = extreme(np.uint8, (3, 4096), 255, 7)
    b_zp = np.array([255, 0, 255, 0, 1], np.uint8)
    b = np.stack([extreme(np.uint8, (4096,), 255 - int(z), 8 + j) for j, z in enumerate(b_zp)], axis=1)
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    return onnx_model(node, {"a": a}, {"b": b, "az": np.array(0, np.uint8), "bz": b_zp}, 10), [a]


def matmul_integer_runtime_batched() -> tuple[onnx.ModelProto, list[np.ndarray]]:
    """Every operand a graph input: batched b, per-column b zero points, s8 extremes, K = 4096."""
    a = extreme(np.int8, (2, 3, 4096), 127, 9)
    b = extreme(np.int8, (2, 4096, 4), -128, 10)
    feeds = {"a": a, "b": b, "az": np.array(-128, np.int8), "bz": np.array([127, 127, 0, -128], np.int8)}
    return onnx_model(helper.make_node("MatMulInteger", list(feeds), ["y"]), feeds, {}, 10), list(feeds.values())


def matmul_integer_wraps() -> tuple[onnx.ModelProto, list[np.ndarray]]:
    """40000 products of 255 * 255: the sums pass 2**31 and wrap, as the specification's int32 does."""
    a = extreme(np.uint8, (2, 40000), 255, 11, spread=0.01)
    b = extreme(np.uint8, (40000, 3), 0, 12, spread=0.01)
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    return onnx_model(node, {"a": a}, {"b": b, "az": np.array(0, np.uint8), "bz": np.array(255, np.uint8)}, 10), [a]


def qlinear_matmul_runtime_b() -> tuple[onnx.ModelProto, list[np.ndarray]]:
    """QLinearMatMul with a run-time b (textops: MatMulInteger, then float requantization), K = 4096;
    the output scale keeps the results inside uint8."""
    a, b = extreme(np.uint8, (2, 4096), 255, 13), extreme(np.uint8, (4096, 3), 0, 14)
    feeds = {"a": a, "a_scale": np.array(0.001, np.float32), "a_zp": np.array(0, np.uint8), "b": b,
             "b_scale": np.array(0.002, np.float32), "b_zp": np.array(255, np.uint8),
             "y_scale": np.array(5.5, np.float32), "y_zp": np.array(200, np.uint8)}
    return (onnx_model(helper.make_node("QLinearMatMul", list(feeds), ["y"]), feeds, {}, 21, np.uint8),
            list(feeds.values()))


def qlinear_conv(runtime_weight: bool) -> tuple[onnx.ModelProto, list[np.ndarray]]:
    """QLinearConv, depth 4608 at the extremes, with an int32 bias: a constant weight (QConv) or a
    run-time one (textops: ConvInteger, + bias in int32, float requantization)."""
    x, w = extreme(np.uint8, (1, 512, 4, 4), 255, 15), extreme(np.uint8, (3, 512, 3, 3), 0, 16)
    params = {"x_scale": np.array(0.001, np.float32), "x_zp": np.array(0, np.uint8), "w": w,
              "w_scale": np.array([0.002, 0.0021, 0.0019], np.float32), "w_zp": np.array([255, 255, 254], np.uint8),
              "y_scale": np.array(6.0, np.float32), "y_zp": np.array(210, np.uint8),
              "bias": np.array([40_000_000, -40_000_000, 7], np.int32)}
    node = helper.make_node("QLinearConv", ["x", *params], ["y"], pads=[1, 1, 1, 1])
    if runtime_weight:
        return onnx_model(node, {"x": x, **params}, {}, 10, np.uint8), [x, *params.values()]
    return onnx_model(node, {"x": x}, params, 10, np.uint8), [x]


CASES = {
    "conv_integer_u8": conv_integer_u8,
    "conv_integer_s8_runtime_zero_point": conv_integer_s8_runtime_zero_point,
    "conv_integer_u8_s8": conv_integer_u8_s8,
    "matmul_integer_k4096": matmul_integer_k4096,
    "matmul_integer_runtime_batched": matmul_integer_runtime_batched,
    "matmul_integer_wraps": matmul_integer_wraps,
    "qlinear_matmul_runtime_b": qlinear_matmul_runtime_b,
    "qlinear_conv_const_w": lambda: qlinear_conv(False),
    "qlinear_conv_runtime_w": lambda: qlinear_conv(True),
}


def assert_bit_exact(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, \
        f"{what}: {got.dtype}{got.shape} != {want.dtype}{want.shape}"
    wrong = np.argwhere(got != want)
    assert wrong.size == 0, (f"{what}: {len(wrong)} of {got.size} differ, first at {tuple(wrong[0])}: "
                             f"{got[tuple(wrong[0])]} != {want[tuple(wrong[0])]}")


def test_the_cases_leave_float32_and_int16():
    """The sums really are deep: past 2**24 (and int16) in each integer-output case, past 2**31 in
    the wrapping one (the exact int64 sum differs from the int32 result there)."""
    for name in ("conv_integer_u8", "conv_integer_s8_runtime_zero_point", "conv_integer_u8_s8",
                 "matmul_integer_k4096", "matmul_integer_runtime_batched"):
        m, inputs = CASES[name]()
        assert np.abs(run_spec(m, inputs)[0].astype(np.int64)).max() > 1 << 24, name
    m, (a,) = matmul_integer_wraps()
    b = numpy_helper.to_array(m.graph.initializer[0]).astype(np.int64) - 255
    exact = a.astype(np.int64) @ b
    assert np.abs(exact).max() > 1 << 31 and not np.array_equal(exact, run_spec(m, [a])[0])


@pytest.mark.parametrize("target", sorted(DEVICES))
@pytest.mark.parametrize("case", sorted(CASES))
def test_deep_integer_products_match_the_specification(case: str, target: str):
    m, inputs = CASES[case]()
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target=target), device=DEVICES[target])
    assert_bit_exact(module.main.call(*inputs)[0], run_spec(m, inputs)[0], f"{case} on {target}")


def conv_integer_symbolic_width() -> onnx.ModelProto:
    """ConvInteger on a symbolic width (as OCR models' 1 x 1 x 64 x width input) with a run-time
    input zero point."""
    w = extreme(np.uint8, (6, 64, 3, 3), 0, 17)
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], strides=[2, 1], pads=[1, 2, 1, 0])
    feeds = {"x": np.zeros((1, 64, 7, 1), np.uint8), "xz": np.array(0, np.uint8)}
    return onnx_model(node, feeds, {"w": w, "wz": np.array(255, np.uint8)}, 10, dims={"x": [1, 64, 7, "width"]})


@pytest.mark.parametrize("target", sorted(DEVICES))
def test_conv_integer_with_a_symbolic_width(target: str):
    """One module, several widths, including an output one column wide."""
    m = conv_integer_symbolic_width()
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target=target, dim_bounds={"width": (1, 200)}),
                          device=DEVICES[target])
    for width in (1, 17, 200):
        inputs = [extreme(np.uint8, (1, 64, 7, width), 255, width), np.array(3, np.uint8)]
        assert_bit_exact(module.main.call(*inputs)[0], run_spec(m, inputs)[0], f"width {width} on {target}")


@pytest.mark.parametrize("target", sorted(DEVICES))
def test_qlinear_conv_with_a_symbolic_width(target: str):
    """QLinearConv with a constant weight (QConv: requantized in the kernel) on a symbolic width,
    depth 64 x 3 x 3 at the extremes."""
    w = extreme(np.int8, (5, 64, 3, 3), -128, 18)
    params = {"x_scale": np.array(0.001, np.float32), "x_zp": np.array(0, np.uint8), "w": w,
              "w_scale": np.array(0.002, np.float32), "w_zp": np.array(0, np.int8),
              "y_scale": np.array(0.5, np.float32), "y_zp": np.array(250, np.uint8)}
    node = helper.make_node("QLinearConv", ["x", *params], ["y"], pads=[1, 1, 1, 1])
    m = onnx_model(node, {"x": np.zeros((1, 64, 5, 1), np.uint8)}, params, 10, np.uint8,
                   dims={"x": [1, 64, 5, "width"]})
    module = iree_py.load(iree_py.compile(m.SerializeToString(), target=target, dim_bounds={"width": (1, 64)}),
                          device=DEVICES[target])
    for width in (1, 64):
        x = extreme(np.uint8, (1, 64, 5, width), 255, 19 + width)
        assert_bit_exact(module.main.call(x)[0], run_spec(m, [x])[0], f"width {width} on {target}")


@pytest.mark.parametrize("case", [*sorted(CASES), "conv_integer_symbolic_width"])
def test_riscv32_kernels_need_no_compiler_builtins(case: str):
    """The qconv / qmatmul kernels link into a riscv32 flat image without libgcc (32-bit: no i64
    division or multiplication helpers), with symbolic dims too."""
    t = load_target("riscv32")
    m = conv_integer_symbolic_width() if case == "conv_integer_symbolic_width" else CASES[case]()[0]
    graph = run_pipeline(import_onnx(m), out=lambda _: None)
    specs, _ = deduplicate([d.spec for d in partition(graph, plan_memory(graph).elided, t)
                            if d.spec.kind in ("qconv", "qmatmul")])
    assert specs, case
    built = build_kernel_objects(specs, t)
    image = link_flat_image(list(built.objects), list(built.symbols), t, case)
    assert not image.used_libgcc
