"""The elementwise kernel against numpy: every binary op, broadcast patterns (scalar, rank
mismatch, size-1 dims on either side), Expr DAGs that reuse steps, vector tails and tiled rows,
and symbolic dims (broadcast decided at run time)."""
from __future__ import annotations

import numpy as np
import pytest

from iree_py.codegen.kernel_spec import Expr, ExprStep, KernelSpec
from iree_py.codegen.llvm import build_executable
from iree_py.codegen.llvm.jit import LoadedLibrary, run_kernels
from iree_py.targets import load_target
from iree_py.ir.symbols import call, evaluate
from tests.codegen.conftest import assert_close, f32

BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}

# (lhs shape, rhs shape): output shape is their numpy broadcast.
BROADCASTS = [
    ((7,), (7,)), ((2, 3, 5), ()), ((), (4, 9)), ((2, 3, 5), (3, 1)), ((2, 1, 5), (1, 4, 1)),
    ((1, 16, 9, 9), (1, 16, 1, 1)), ((3, 1), (1, 37)), ((2, 3, 4, 5), (5,)), ((1,), (1,)),
    ((5, 1, 19), (5, 6, 19)), ((20000,), (1,)), ((3, 20001), (3, 1)),
]


def _binary_spec(name: str, op: str, a: tuple, b: tuple) -> KernelSpec:
    out = np.broadcast_shapes(a, b)
    return KernelSpec(name, "elementwise", (f32(*a), f32(*b)), (f32(*out),),
                      {"expr": Expr((ExprStep(op, (("in", 0), ("in", 1))),))})


def test_binary_ops_with_broadcasting() -> None:
    rng = np.random.default_rng(0)
    specs, inputs, wants = [], [], []
    for k, (a_shape, b_shape) in enumerate(BROADCASTS):
        for op, fn in BINARY.items():
            a = rng.standard_normal(a_shape).astype(np.float32)
            b = (rng.uniform(0.5, 2.0, b_shape) * rng.choice([-1, 1], b_shape)).astype(np.float32)
            specs.append(_binary_spec(f"{op}_{k}", op, a_shape, b_shape))
            inputs.append([a, b])
            wants.append(fn(a, b))
    for spec, (got,), want in zip(specs, run_kernels(specs, inputs), wants):
        assert_close(got, want, 1e-6, spec.name)


def test_expr_dag_reuses_steps_and_inputs() -> None:
    # y = tanh(a * b + c) * sigmoid(a) - relu(a * b + c) / clip(c, 1, 3)
    steps = (
        ExprStep("Mul", (("in", 0), ("in", 1))),
        ExprStep("Add", (("step", 0), ("in", 2))),
        ExprStep("Tanh", (("step", 1),)),
        ExprStep("Sigmoid", (("in", 0),)),
        ExprStep("Mul", (("step", 2), ("step", 3))),
        ExprStep("Relu", (("step", 1),)),
        ExprStep("Clip", (("in", 2),), (("min", 1.0), ("max", 3.0))),
        ExprStep("Div", (("step", 5), ("step", 6))),
        ExprStep("Sub", (("step", 4), ("step", 7))),
    )
    shapes = [(2, 3, 11), (3, 1), (11,)]
    spec = KernelSpec("dag", "elementwise", tuple(f32(*s) for s in shapes), (f32(2, 3, 11),), {"expr": Expr(steps)})
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(s).astype(np.float32) * 2 for s in shapes)
    ab_c = a * b + c
    want = np.tanh(ab_c) * (1 / (1 + np.exp(-a))) - np.maximum(ab_c, 0) / np.clip(c, 1, 3)
    (got,), = run_kernels([spec], [[a, b, c]])
    assert_close(got, want, 1e-5, "dag")


def test_empty_expr_copies_broadcast_input() -> None:
    spec = KernelSpec("copy", "elementwise", (f32(3, 1),), (f32(2, 3, 4),), {"expr": Expr(())})
    a = np.arange(3, dtype=np.float32).reshape(3, 1)
    (got,), = run_kernels([spec], [[a]])
    np.testing.assert_array_equal(got, np.broadcast_to(a, (2, 3, 4)))


@pytest.mark.parametrize("steps, message", [
    ((ExprStep("BitShift", (("in", 0), ("in", 0))),), "unsupported op"),
    ((ExprStep("Add", (("in", 0),)),), "takes 2 args"),
    ((ExprStep("Neg", (("in", 3),)),), "no input 3"),
    ((ExprStep("Neg", (("step", 0),)),), "not an earlier step"),
    ((ExprStep("LeakyRelu", (("in", 0),)),), "alpha"),
])
def test_bad_expr_is_rejected_with_a_clear_message(steps, message) -> None:
    spec = KernelSpec("bad", "elementwise", (f32(4),), (f32(4),), {"expr": Expr(steps)})
    with pytest.raises(ValueError, match=message):
        build_executable([spec], load_target("host"))


def test_shapes_that_do_not_broadcast_are_rejected() -> None:
    spec = _binary_spec("bad", "Add", (3,), (3,))
    spec = KernelSpec("bad", "elementwise", (f32(3), f32(4)), (f32(3),), spec.attrs)
    with pytest.raises(ValueError, match="does not broadcast"):
        build_executable([spec], load_target("host"))


# Symbolic dims: the same builder, dims from the push constants. max(n, m) against m broadcasts
# when m is 1 at run time; sizes 0 and 1 and a row wider than one column tile included.
SYMBOLIC = [
    ((("a", "b"), ("a", "b")), ("a", "b"), [{"a": 3, "b": 5}, {"a": 1, "b": 1}, {"a": 0, "b": 4}, {"a": 2, "b": 20001}]),
    ((("a", "b", 16), ("a", "b", 1)), ("a", "b", 16), [{"a": 2, "b": 7}, {"a": 3, "b": 300}]),
    (((3, "a"), (3, 1)), (3, "a"), [{"a": 7}, {"a": 1}, {"a": 0}]),
    (((), ("a",)), ("a",), [{"a": 9}, {"a": 0}]),
    (((call("max", "n", "m"),), ("m",)), (call("max", "n", "m"),), [{"n": 5, "m": 5}, {"n": 5, "m": 1}, {"n": 1, "m": 6}]),
    ((("a", call("max", "n", "m"), 8), ("a", "m", 8)), ("a", call("max", "n", "m"), 8),
     [{"a": 2, "n": 4, "m": 4}, {"a": 3, "n": 4, "m": 1}, {"a": 2, "n": 1, "m": 3}]),
]


def test_symbolic_dims_with_run_time_broadcasting() -> None:
    sub = {"expr": Expr((ExprStep("Sub", (("in", 0), ("in", 1))),))}
    specs = [KernelSpec(f"sym{k}", "elementwise", (f32(*a), f32(*b)), (f32(*out),), sub)
             for k, ((a, b), out, _) in enumerate(SYMBOLIC)]
    lib = LoadedLibrary(build_executable(specs, load_target("host")))
    rng = np.random.default_rng(2)
    for spec, (_, _, sizes) in zip(specs, SYMBOLIC):
        for symbols in sizes:
            shapes = [tuple(evaluate(d, symbols) for d in t.shape) for t in spec.inputs]
            a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
            (got,) = lib.run(spec, [a, b], symbols=symbols)
            np.testing.assert_array_equal(got, a - b, err_msg=f"{spec.name} {symbols}")


def test_symbolic_dims_that_do_not_broadcast_refuse_the_dispatch() -> None:
    """max(n, m) against m with m neither 1 nor n: the kernel fails without touching memory."""
    out = call("max", "n", "m")
    add = {"expr": Expr((ExprStep("Add", (("in", 0), ("in", 1))),))}
    spec = KernelSpec("sym_bad", "elementwise", (f32(out), f32("m")), (f32(out),), add)
    lib = LoadedLibrary(build_executable([spec], load_target("host")))
    with pytest.raises(RuntimeError, match="returned 1"):
        lib.run(spec, [np.ones(5, np.float32), np.ones(3, np.float32)], symbols={"n": 5, "m": 3})
