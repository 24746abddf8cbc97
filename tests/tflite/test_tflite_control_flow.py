"""TFLite WHILE and IF: imported as the IR's Loop and If, run by the C runtime on host and arm64
(qemu), compared with the TFLite interpreter (relative 1e-4). Models are built with our writer:
subgraph 0 is main, the others are the branches / cond / body."""
from __future__ import annotations

import numpy as np
import pytest
from tflite_harness import assert_close, run_iree, run_tflite
from tflite_writer import TfliteModel

from iree_py.frontends.tflite.schema.AddOptions import AddOptionsT
from iree_py.frontends.tflite.schema.IfOptions import IfOptionsT
from iree_py.frontends.tflite.schema.MulOptions import MulOptionsT
from iree_py.frontends.tflite.schema.WhileOptions import WhileOptionsT

SHAPE = (1, 4)


def if_model() -> bytes:
    """y = x * 2 if flag else x + 1 (flag: a bool model input)."""
    main = TfliteModel()
    then_g, else_g = main.subgraph(), main.subgraph()
    flag, x = main.input("flag", (), np.bool_), main.input("x", SHAPE)
    y = main.tensor("y", SHAPE)
    opts = IfOptionsT()
    opts.thenSubgraphIndex, opts.elseSubgraphIndex = 1, 2
    main.op("IF", [flag, x], [y], opts)
    main.output(y)
    for sub, code, const, options in ((then_g, "MUL", 2.0, MulOptionsT()), (else_g, "ADD", 1.0, AddOptionsT())):
        a = sub.input("a", SHAPE)
        c = sub.const("c", np.full(SHAPE, const, np.float32))
        out = sub.tensor("out", SHAPE)
        sub.op(code, [a, c], [out], options)
        sub.output(out)
    return main.build(then_g, else_g)


def while_model() -> bytes:
    """(i, acc) -> while i < n: (i + 1, acc * 0.5 + x): n and x are model inputs, i starts at 0."""
    main = TfliteModel()
    cond, body = main.subgraph(), main.subgraph()
    n, x = main.input("n", (), np.int32), main.input("x", SHAPE)
    i0 = main.const("i0", np.array(0, np.int32))
    acc0 = main.const("acc0", np.zeros(SHAPE, np.float32))
    i_out, acc_out, n_out, x_out = (main.tensor(name, shape, dtype) for name, shape, dtype in
                                    (("i_out", (), np.int32), ("acc_out", SHAPE, np.float32),
                                     ("n_out", (), np.int32), ("x_out", SHAPE, np.float32)))
    opts = WhileOptionsT()
    opts.condSubgraphIndex, opts.bodySubgraphIndex = 1, 2
    main.op("WHILE", [i0, acc0, n, x], [i_out, acc_out, n_out, x_out], opts)
    main.output(acc_out)
    main.output(i_out)

    ci, _, cn, _ = (cond.input(name, shape, dtype) for name, shape, dtype in
                    (("i", (), np.int32), ("acc", SHAPE, np.float32), ("n", (), np.int32), ("x", SHAPE, np.float32)))
    more = cond.tensor("more", (), np.bool_)
    cond.op("LESS", [ci, cn], [more])
    cond.output(more)

    bi, bacc, bn, bx = (body.input(name, shape, dtype) for name, shape, dtype in
                        (("i", (), np.int32), ("acc", SHAPE, np.float32), ("n", (), np.int32), ("x", SHAPE, np.float32)))
    one, half = body.const("one", np.array(1, np.int32)), body.const("half", np.full(SHAPE, 0.5, np.float32))
    i_next, scaled, acc_next = body.tensor("i_next", (), np.int32), body.tensor("scaled", SHAPE), body.tensor("acc_next", SHAPE)
    body.op("ADD", [bi, one], [i_next], AddOptionsT())
    body.op("MUL", [bacc, half], [scaled], MulOptionsT())
    body.op("ADD", [scaled, bx], [acc_next], AddOptionsT())
    for t in (i_next, acc_next, bn, bx):
        body.output(t)
    return main.build(cond, body)


@pytest.mark.parametrize("target", ["host", "arm64"])
def test_if_takes_each_branch(target):
    data = if_model()
    x = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    for flag in (True, False):
        inputs = [np.array(flag), x]
        assert_close(run_iree(data, inputs, target), run_tflite(data, inputs))


@pytest.mark.parametrize("target", ["host", "arm64"])
def test_while_runs_a_data_dependent_number_of_times(target):
    data = while_model()
    x = np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32)
    for n in (0, 1, 7):
        inputs = [np.array(n, np.int32), x]
        assert_close(run_iree(data, inputs, target), run_tflite(data, inputs))

