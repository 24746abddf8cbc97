"""Ops over random shapes and attributes (seeded, so a failure reproduces), through the whole
toolchain, against onnxruntime, on this host and on arm64 and riscv64 under qemu."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from harness import TARGETS, check_against_reference, model

SEEDS = range(10)


def random_conv(rng: np.random.Generator):
    group = int(rng.choice([1, 1, 2, 3]))
    c = group * int(rng.integers(1, 6))
    m = group * int(rng.integers(1, 7))
    kh, kw = (int(k) for k in rng.integers(1, 5, size=2))
    sh, sw = (int(s) for s in rng.integers(1, 3, size=2))
    dh, dw = (int(d) for d in rng.integers(1, 3, size=2))
    pads = [int(p) for p in rng.integers(0, 3, size=4)]
    h = int(rng.integers((kh - 1) * dh + 1, 20))
    w = int(rng.integers((kw - 1) * dw + 1, 40))
    weights = {"W": rng.standard_normal((m, c // group, kh, kw)).astype(np.float32),
               "B": rng.standard_normal(m).astype(np.float32)}
    node = helper.make_node("Conv", ["x", "W", "B"], ["c"], group=group, strides=[sh, sw], dilations=[dh, dw], pads=pads)
    relu = helper.make_node("Relu", ["c"], ["y"])
    return model([node, relu], {"x": (int(rng.integers(1, 3)), c, h, w)}, ["y"], weights)


def random_matmul(rng: np.random.Generator):
    m, k, n = (int(d) for d in rng.integers(1, 70, size=3))
    batch = [int(d) for d in rng.integers(1, 4, size=int(rng.integers(0, 3)))]
    return model([helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": (*batch, m, k)}, ["y"],
                 {"b": rng.standard_normal((k, n)).astype(np.float32)})


def random_pool(rng: np.random.Generator):
    op = str(rng.choice(["MaxPool", "AveragePool"]))
    k = [int(d) for d in rng.integers(1, 4, size=2)]
    pads = [int(rng.integers(0, k[0])), int(rng.integers(0, k[1])), int(rng.integers(0, k[0])), int(rng.integers(0, k[1]))]
    attrs = dict(kernel_shape=k, strides=[int(s) for s in rng.integers(1, 4, size=2)], pads=pads,
                 ceil_mode=int(rng.integers(0, 2)))
    if op == "AveragePool":
        attrs["count_include_pad"] = int(rng.integers(0, 2))
    shape = (1, int(rng.integers(1, 5)), int(rng.integers(k[0], 16)), int(rng.integers(k[1], 16)))
    return model([helper.make_node(op, ["x"], ["y"], **attrs)], {"x": shape}, ["y"])


def random_broadcast(rng: np.random.Generator):
    rank = int(rng.integers(1, 5))
    shape = [int(d) for d in rng.integers(1, 9, size=rank)]
    other = [d if rng.random() < 0.5 else 1 for d in shape][int(rng.integers(0, rank)):]
    op = str(rng.choice(["Add", "Sub", "Mul", "Div"]))
    act = str(rng.choice(["Relu", "Sigmoid", "Tanh"]))
    nodes = [helper.make_node(op, ["a", "b"], ["t"]), helper.make_node(act, ["t"], ["y"])]
    b = rng.standard_normal(other).astype(np.float32)
    if op == "Div":
        b = np.where(np.abs(b) < 0.1, 1.0, b).astype(np.float32)  # keep the quotient finite
    return model(nodes, {"a": tuple(shape)}, ["y"], {"b": b})


def random_softmax_transpose(rng: np.random.Generator):
    shape = tuple(int(d) for d in rng.integers(1, 8, size=int(rng.integers(2, 5))))
    perm = [int(p) for p in rng.permutation(len(shape))]
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=perm),
             helper.make_node("Softmax", ["t"], ["y"], axis=int(rng.integers(-len(shape), len(shape))))]
    return model(nodes, {"x": shape}, ["y"])


GENERATORS = {"conv": random_conv, "matmul": random_matmul, "pool": random_pool, "broadcast": random_broadcast,
              "softmax_transpose": random_softmax_transpose}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", sorted(GENERATORS))
def test_random_configuration(kind: str, seed: int, target: str):
    rng = np.random.default_rng(1000 * seed + sorted(GENERATORS).index(kind))
    check_against_reference(GENERATORS[kind](rng), target, seed=seed)
