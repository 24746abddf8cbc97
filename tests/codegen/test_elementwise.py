"""The elementwise kernel against numpy: every binary op, broadcast patterns (scalar, rank
mismatch, size-1 dims on either side), Expr DAGs that reuse steps, vector tails and tiled rows."""
from __future__ import annotations

import numpy as np
import pytest

from iree_py.codegen.kernel_spec import Expr, ExprStep, KernelSpec
from iree_py.codegen.llvm import build_executable
from iree_py.codegen.llvm.jit import run_kernels
from iree_py.targets import load_target
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
