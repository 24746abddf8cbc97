"""The quantized kernels (quantize, dequantize, qconv, qmatmul, qadd, qavgpool, integer maxpool)
against the bit-exact numpy reference (iree_py/ir/ops/quantized.py): every output byte must be
equal. On the host through jit.py; on arm64, riscv64 (+ RVV) and cortex-m4 (flat image) under
qemu-user as a whole module compiled from an IR graph built by hand (`quant_graph`)."""
from __future__ import annotations

import numpy as np
import pytest

import iree_py
from iree_py.codegen.dispatch import DIRECT_KERNELS
from iree_py.codegen.llvm import build_executable, build_kernel_objects
from iree_py.codegen.llvm.flat_image import link_flat_image
from iree_py.targets import load_target
from iree_py.compiler import build_module, deduplicate, partition, reserve_output_copies
from iree_py.ir.build import NameTable, constant, make_node
from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.reference import evaluate
from iree_py.ir.text import parse_graph, print_graph
from iree_py.module.writer import write_module
from iree_py.passes.pipeline import run_pipeline
from iree_py.vm.lowering import lower_graph
from iree_py.vm.memory_plan import plan_memory
from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm.jit import run_kernels
from iree_py.ir.ops import infer_types
from iree_py.ir.quant_math import QRANGE, quantize_multiplier
from iree_py.ir.reference import KERNELS
from iree_py.ir.types import DType, TensorType

RNG = np.random.default_rng(1234)


def _t(a: np.ndarray) -> TensorType:
    return TensorType(DType.from_numpy(a.dtype), a.shape)


def _spec(name: str, op: str, ins: list[np.ndarray], attrs: dict) -> KernelSpec:
    kind, names = DIRECT_KERNELS[op]
    out = infer_types(op, [_t(a) for a in ins], attrs)
    return KernelSpec(name, kind, tuple(_t(a) for a in ins), tuple(out), {n: attrs[n] for n in names})


def _check_all(op: str, cases: list[tuple[list[np.ndarray], dict]]) -> None:
    """Build every case into one library, run it, compare each output exactly with the reference."""
    specs = [_spec(f"{op.lower()}{i}", op, ins, attrs) for i, (ins, attrs) in enumerate(cases)]
    results = run_kernels(specs, [ins for ins, _ in cases])
    for spec, (ins, attrs), (got,) in zip(specs, cases, results):
        want = KERNELS[op](ins, attrs)
        assert got.dtype == want.dtype and got.shape == want.shape, spec.name
        wrong = np.argwhere(got != want)
        assert wrong.size == 0, (f"{spec.name} {attrs}: {len(wrong)} of {got.size} differ, first at "
                                 f"{tuple(wrong[0])}: got {got[tuple(wrong[0])]}, want {want[tuple(wrong[0])]}")


def _q(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    lo, hi = QRANGE[dtype]
    return RNG.integers(lo, hi + 1, shape).astype(np.int8 if dtype == "i8" else np.uint8)


def requant_attrs(mode: str, channels: int, out_dtype: str = "i8", x_zp: int = 0, w_zp: list[int] | None = None,
                  y_zp: int = 0, act: tuple[int, int] | None = None, scale_range: tuple[float, float] = (2e-4, 2e-3)
                  ) -> dict:
    """Requantization attributes with random per-channel scales (channels = 1: per tensor)."""
    scales = [float(s) for s in RNG.uniform(*scale_range, channels)]
    lo, hi = act if act is not None else QRANGE[out_dtype]
    attrs = {"x_zero_point": x_zp, "w_zero_point": w_zp or [0], "y_zero_point": y_zp, "out_dtype": out_dtype,
             "act_min": lo, "act_max": hi, "requant": mode, "multiplier": [], "shift": [], "scale": []}
    if mode == "fixed":
        pairs = [quantize_multiplier(s) for s in scales]
        attrs["multiplier"], attrs["shift"] = [m for m, _ in pairs], [s for _, s in pairs]
    else:
        attrs["scale"] = scales
    return attrs


CONV_CASES = [  # x shape, w shape, group, strides, pads, dilations, per-channel, x dtype, w dtype, bias, out dtype
    ((1, 3, 9, 10), (4, 3, 3, 3), 1, [1, 1], [1, 1, 1, 1], [1, 1], False, "i8", "i8", True, "i8"),
    ((2, 4, 8, 7), (6, 4, 3, 3), 1, [2, 2], [1, 0, 2, 1], [1, 1], True, "i8", "i8", True, "i8"),
    ((1, 6, 7, 9), (6, 1, 3, 3), 6, [1, 1], [1, 1, 1, 1], [1, 1], True, "i8", "i8", True, "i8"),     # depthwise
    ((1, 4, 10, 10), (8, 1, 5, 5), 4, [2, 2], [2, 2, 2, 2], [1, 1], True, "u8", "u8", False, "u8"),  # depthwise x2
    ((1, 4, 9, 9), (4, 2, 3, 2), 2, [1, 2], [0, 3, 1, 0], [2, 1], False, "u8", "i8", True, "i8"),    # grouped, dilated
    ((1, 8, 5, 5), (3, 8, 1, 1), 1, [1, 1], [0, 0, 0, 0], [1, 1], True, "i8", "i8", True, "u8"),     # pointwise
    ((1, 2, 3, 140), (2, 2, 1, 3), 1, [1, 1], [0, 1, 0, 1], [1, 1], False, "i8", "i8", True, "i8"),  # OW > one tile
]


@pytest.mark.parametrize("mode", ["fixed", "float"])
def test_qconv_matches_reference(mode: str) -> None:
    cases = []
    for k, (xs, ws, group, strides, pads, dil, per_channel, xd, wd, has_bias, od) in enumerate(CONV_CASES):
        m = ws[0]
        channels = m if per_channel else 1
        w_zp = [0] * channels if wd == "i8" else [int(z) for z in RNG.integers(100, 156, channels)]
        attrs = requant_attrs(mode, channels, od, x_zp=int(RNG.integers(*QRANGE[xd])) if k % 2 else 0, w_zp=w_zp,
                              y_zp=int(RNG.integers(QRANGE[od][0], QRANGE[od][1] // 2)),
                              act=(QRANGE[od][0] + 10, QRANGE[od][1] - 20) if k % 3 == 0 else None)
        attrs.update(group=group, strides=strides, pads=pads, dilations=dil)
        ins = [_q(xd, xs), _q(wd, ws)]
        if has_bias:
            ins.append(RNG.integers(-20000, 20000, m).astype(np.int32))
        cases.append((ins, attrs))
    _check_all("QConv", cases)


def test_qconv_accumulator_edges() -> None:
    """Every product at its extreme (-128 * -128, 127 * -128) with large biases, and a multiplier
    that puts many results exactly on rounding ties."""
    x = np.full((1, 16, 3, 3), -128, np.int8)
    w = np.where(np.arange(16 * 9).reshape(1, 16, 3, 3) % 2, -128, 127).astype(np.int8).repeat(2, axis=0)
    bias = np.array([2**30, -2**30], np.int32)
    attrs = requant_attrs("fixed", 1)
    attrs.update(group=1, strides=[1, 1], pads=[1, 1, 1, 1], dilations=[1, 1], multiplier=[1 << 30], shift=[-20])
    ties = [np.arange(-40, 41, dtype=np.int8).reshape(1, 1, 9, 9), np.ones((1, 1, 1, 1), np.int8)]
    tie_attrs = dict(attrs, pads=[0, 0, 0, 0], shift=[-2])  # x * 2**-3: every 4th value a tie
    _check_all("QConv", [([x, w, bias], attrs), (ties, tie_attrs)])


@pytest.mark.parametrize("mode", ["fixed", "float"])
def test_qmatmul_matches_reference(mode: str) -> None:
    cases = []
    for a_shape, n, per_channel, ad, bd, bias, od in [
            ((5, 17), 9, True, "i8", "i8", True, "i8"),
            ((2, 3, 40), 300, False, "u8", "u8", True, "u8"),   # batch dims, N over one tile
            ((1, 64), 10, True, "u8", "i8", False, "i8"),
            ((11, 3), 1, False, "i8", "u8", True, "i8")]:
        channels = n if per_channel else 1
        attrs = requant_attrs(mode, channels, od, x_zp=int(RNG.integers(*QRANGE[ad])),
                              w_zp=[int(z) for z in RNG.integers(*QRANGE[bd], channels)],
                              y_zp=int(RNG.integers(*QRANGE[od])), scale_range=(5e-5, 5e-4))
        ins = [_q(ad, a_shape), _q(bd, (a_shape[-1], n))]
        if bias:
            ins.append(RNG.integers(-50000, 50000, n).astype(np.int32))
        cases.append((ins, attrs))
    _check_all("QMatMul", cases)


def test_quantize_matches_reference() -> None:
    ties = (np.arange(-300, 301, dtype=np.float32) * 0.5).reshape(1, 601)   # x / 1.0: every other one a tie
    x = (RNG.standard_normal((2, 3, 5, 7)) * 4).astype(np.float32)
    x[0, 0, 0, :3] = [1e30, -1e30, 0.0]
    cases = []
    for rounding in ("half_even", "half_away"):
        cases.append(([ties], {"axis": -1, "scale": [1.0], "zero_point": [3], "dtype": "i8", "rounding": rounding}))
        cases.append(([ties], {"axis": -1, "scale": [0.5], "zero_point": [128], "dtype": "u8", "rounding": rounding}))
        cases.append(([x], {"axis": 1, "scale": [0.05, 0.1, 0.03], "zero_point": [-3, 0, 7], "dtype": "i8",
                            "rounding": rounding}))
        cases.append(([x], {"axis": 3, "scale": [float(s) for s in RNG.uniform(0.01, 0.1, 7)],
                            "zero_point": [int(z) for z in RNG.integers(0, 255, 7)], "dtype": "u8",
                            "rounding": rounding}))
    _check_all("Quantize", cases)


def test_dequantize_matches_reference() -> None:
    cases = [
        ([_q("i8", (3, 50))], {"axis": -1, "scale": [0.02], "zero_point": [-5]}),
        ([_q("u8", (2, 4, 3))], {"axis": 1, "scale": [0.5, 0.25, 0.1, 3.0], "zero_point": [0, 128, 255, 7]}),
        ([RNG.integers(-2**20, 2**20, (4, 6)).astype(np.int32)],
         {"axis": 1, "scale": [float(s) for s in RNG.uniform(1e-4, 1e-2, 6)], "zero_point": [0] * 6}),
    ]
    _check_all("Dequantize", cases)


def _qadd_attrs(out_dtype: str, act: tuple[int, int] | None = None) -> dict:
    """TFLite's parameters for input scales 0.05, 0.08 and output scale 0.1 (left_shift 20)."""
    a_s, b_s, y_s = 0.05, 0.08, 0.1
    twice_max = 2 * max(a_s, b_s)
    (am, ash), (bm, bsh) = quantize_multiplier(a_s / twice_max), quantize_multiplier(b_s / twice_max)
    ym, ysh = quantize_multiplier(twice_max / ((1 << 20) * y_s))
    lo, hi = act or QRANGE[out_dtype]
    return {"a_zero_point": 5, "b_zero_point": -9 if out_dtype == "i8" else 140, "y_zero_point": 3, "left_shift": 20,
            "a_multiplier": am, "a_shift": ash, "b_multiplier": bm, "b_shift": bsh, "y_multiplier": ym,
            "y_shift": ysh, "act_min": lo, "act_max": hi, "out_dtype": out_dtype}


def test_qadd_matches_reference() -> None:
    cases = [
        ([_q("i8", (2, 3, 4, 5)), _q("i8", (2, 3, 4, 5))], _qadd_attrs("i8")),
        ([_q("i8", (2, 3, 4, 5)), _q("i8", (3, 1, 1))], _qadd_attrs("i8", (-20, 100))),   # broadcast per channel
        ([_q("i8", (1, 7)), _q("i8", (6, 1))], _qadd_attrs("i8")),                         # both broadcast
        ([_q("u8", (4, 33)), _q("u8", (33,))], dict(_qadd_attrs("u8"), a_zero_point=128)),
    ]
    _check_all("QAdd", cases)


def test_integer_pooling_matches_reference() -> None:
    x8, xu = _q("i8", (2, 3, 9, 8)), _q("u8", (1, 2, 7, 7))
    pool = {"kernel": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 0}
    _check_all("MaxPool", [([x8], dict(pool, dilations=[1, 1])),
                           ([xu], dict(pool, dilations=[2, 1], ceil_mode=1, pads=[0, 0, 0, 0]))])
    _check_all("QAveragePool", [
        ([x8], dict(pool, count_include_pad=0, act_min=-128, act_max=127)),
        ([x8], dict(pool, count_include_pad=1, act_min=-50, act_max=60, kernel=[2, 3], ceil_mode=1)),
        ([xu], dict(pool, count_include_pad=0, act_min=0, act_max=255, strides=[1, 1])),
        ([np.full((1, 1, 4, 4), -3, np.int8)], dict(pool, count_include_pad=1, act_min=-128, act_max=127)),  # ties
    ])


def quant_graph() -> Graph:
    """f32 image -> Quantize -> QConv (per-channel, fixed) -> MaxPool -> depthwise QConv (float) ->
    QAdd (with the MaxPool result) -> QAveragePool -> Reshape -> QMatMul -> Dequantize, and the int8
    QAdd result as a second output."""
    names = NameTable()
    nodes: list[Node] = []
    x = Value("x", TensorType(DType.f32, (1, 3, 10, 10)))

    def add(op: str, inputs: list[Value], attrs: dict) -> Value:
        node = make_node(names, op, inputs, attrs, name=f"{op.lower()}_{len(nodes)}")
        nodes.append(node)
        return node.outputs[0]

    def const(hint: str, array: np.ndarray) -> Value:
        return constant(names, hint, array)

    q = add("Quantize", [x], {"axis": -1, "scale": [0.02], "zero_point": [-4], "dtype": "i8", "rounding": "half_away"})
    conv_attrs = dict(requant_attrs("fixed", 4, x_zp=-4, y_zp=2), group=1, strides=[1, 1], pads=[1, 1, 1, 1],
                      dilations=[1, 1])
    c1 = add("QConv", [q, const("w1", _q("i8", (4, 3, 3, 3))),
                       const("b1", RNG.integers(-3000, 3000, 4).astype(np.int32))], conv_attrs)
    p1 = add("MaxPool", [c1], {"kernel": [2, 2], "strides": [2, 2], "pads": [0, 0, 0, 0], "dilations": [1, 1],
                               "ceil_mode": 0})
    dw_attrs = dict(requant_attrs("float", 4, x_zp=2, y_zp=-1, act=(-100, 127), scale_range=(2e-3, 5e-3)), group=4,
                    strides=[1, 1], pads=[1, 1, 1, 1], dilations=[1, 1])
    c2 = add("QConv", [p1, const("w2", _q("i8", (4, 1, 3, 3))),
                       const("b2", RNG.integers(-300, 300, 4).astype(np.int32))], dw_attrs)
    s = add("QAdd", [c2, p1], dict(_qadd_attrs("i8"), a_zero_point=-1, b_zero_point=2))
    p2 = add("QAveragePool", [s], {"kernel": [2, 2], "strides": [2, 2], "pads": [0, 0, 0, 0], "ceil_mode": 0,
                                   "count_include_pad": 0, "act_min": -128, "act_max": 127})
    flat = add("Reshape", [p2], {"shape": [1, 4 * 2 * 2]})
    fc = add("QMatMul", [flat, const("w3", _q("i8", (16, 5))),
                         const("b3", RNG.integers(-500, 500, 5).astype(np.int32))],
             requant_attrs("fixed", 5, x_zp=3, y_zp=0, scale_range=(5e-3, 1e-2)))
    y = add("Dequantize", [fc], {"axis": -1, "scale": [0.1], "zero_point": [0]})
    return Graph("main", [x], [y, s], nodes, ["y", "sum"])


def compile_graph(graph: Graph, target: str) -> bytes:
    """compile_model's stages after import (iree_py/compiler.py), for a graph built by hand."""
    t = load_target(target)
    graph = run_pipeline(graph, out=lambda _: None)
    plan = plan_memory(graph)
    arena_size, output_copies = reserve_output_copies(graph, plan)
    dispatches = partition(graph, plan.elided, t)
    specs, entry_of = deduplicate([d.spec for d in dispatches])
    blob = build_executable(specs, t)
    program = lower_graph(graph, dispatches, entry_of, list(blob.kernels), plan, output_copies)
    return write_module(build_module(graph, t, specs, blob, plan, arena_size, program, True))


def quant_graph_copy(graph: Graph) -> Graph:
    """The pipeline rewrites graphs in place: compile a parsed copy, keep the original for evaluate."""
    return parse_graph(print_graph(graph))


@pytest.mark.parametrize("target,device", [("host", "local"), ("arm64", "qemu"), ("riscv64", "qemu"),
                                           ("riscv64-rvv", "qemu"), ("cortex-m4", "qemu-user")])
def test_quantized_graph_runs_bit_exactly_on(target: str, device: str) -> None:
    graph = quant_graph()
    x = (np.random.default_rng(7).standard_normal((1, 3, 10, 10)) * 1.5).astype(np.float32)
    want = evaluate(graph, [x])
    got = iree_py.load(compile_graph(quant_graph_copy(graph), target), device=device).main.call(x)
    for name, g, w in zip(["y", "sum"], got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, name
        np.testing.assert_array_equal(g, w, err_msg=f"{name} on {target}")


@pytest.mark.parametrize("target", ["cortex-m4", "riscv32"])
def test_quantized_kernels_need_no_compiler_builtins_on(target: str) -> None:
    """The i32 x i32 -> i64 products, shifts and divisions of every quantized kernel stay inline on
    32-bit targets: the flat image links without libgcc."""
    t = load_target(target)
    graph = run_pipeline(quant_graph(), out=lambda _: None)
    specs, _ = deduplicate([d.spec for d in partition(graph, plan_memory(graph).elided, t)])
    assert {s.kind for s in specs} >= {"quantize", "qconv", "maxpool", "qadd", "qavgpool", "qmatmul", "dequantize"}
    built = build_kernel_objects(specs, t)
    image = link_flat_image(list(built.objects), list(built.symbols), t, "quant_graph")
    assert not image.used_libgcc
