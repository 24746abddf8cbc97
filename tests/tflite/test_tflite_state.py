"""Stateful TFLite models (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, CALL_ONCE): the module keeps
its variables across calls. Each model is called several times in a row, by iree-py and by the TFLite
interpreter, and every call's outputs are compared (relative tolerance 1e-4 of the largest reference
magnitude; integer state exactly)."""
from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
from tflite_harness import assert_close, interpreter
from tflite_state_writer import StatefulModel

import iree_py
from iree_py.errors import CompileError
from iree_py.frontends.tflite import import_tflite
from iree_py.frontends.tflite.schema.AddOptions import AddOptionsT
from iree_py.frontends.tflite.schema.ConcatenationOptions import ConcatenationOptionsT
from iree_py.frontends.tflite.schema.MulOptions import MulOptionsT
from iree_py.frontends.tflite.schema.ReducerOptions import ReducerOptionsT
from iree_py.ir.text import parse_graph, print_graph
from iree_py.module.dump import dump_module
from iree_py.module.reader import read_module

CALLS = 4


def opts(kind: type, **fields: object) -> object:
    o = kind()
    for name, value in fields.items():
        setattr(o, name, value)
    return o
GOLDEN = Path(__file__).parent / "golden" / "running_sum.ir"


def running_sum(initial: float = 0.5) -> StatefulModel:
    """acc starts at `initial`; each call: y = acc + x; acc = y."""
    m = StatefulModel()
    x = m.main.input("x", (1, 4))
    acc = m.variable(m.main, "acc")
    m.initialize("acc", np.full((1, 4), initial, np.float32))
    y = m.main.tensor("y", (1, 4))
    m.main.op("ADD", [m.read(acc, (1, 4)), x], [y], AddOptionsT())
    m.assign(acc, y)
    m.main.output(y)
    return m


def moving_average() -> StatefulModel:
    """s = 0.9 s + 0.1 x; outputs the previous s (a read is a graph output) and the new one."""
    m = StatefulModel()
    x = m.main.input("x", (2, 3))
    s = m.variable(m.main, "ema")
    m.initialize("ema", np.arange(6, dtype=np.float32).reshape(2, 3))
    old = m.read(s, (2, 3), name="old")
    decayed, step, new = m.main.tensor("decayed", (2, 3)), m.main.tensor("step", (2, 3)), m.main.tensor("new", (2, 3))
    m.main.op("MUL", [old, m.main.const("decay", np.float32([0.9]))], [decayed], MulOptionsT())
    m.main.op("MUL", [x, m.main.const("rate", np.float32([0.1]))], [step], MulOptionsT())
    m.main.op("ADD", [decayed, step], [new], AddOptionsT())
    m.assign(s, new)
    m.main.output(old)
    m.main.output(new)
    return m


def ring_buffer() -> StatefulModel:
    """A streaming window of the last 3 frames: frames = concat(frames[1:], x); out = sum over frames."""
    m = StatefulModel()
    x = m.main.input("x", (1, 1, 4))
    frames = m.variable(m.main, "frames")
    m.initialize("frames", np.zeros((1, 3, 4), np.float32))
    old = m.read(frames, (1, 3, 4))
    tail, new = m.main.tensor("tail", (1, 2, 4)), m.main.tensor("window", (1, 3, 4))
    total = m.main.tensor("total", (1, 4))
    begin, size = m.main.const("begin", np.int32([0, 1, 0])), m.main.const("size", np.int32([1, 2, 4]))
    m.main.op("SLICE", [old, begin, size], [tail])
    m.main.op("CONCATENATION", [tail, x], [new], opts(ConcatenationOptionsT, axis=1))
    m.main.op("SUM", [new, m.main.const("axis", np.int32([1]))], [total], opts(ReducerOptionsT, keepDims=False))
    m.assign(frames, new)
    m.main.output(total)
    m.main.output(new)
    return m


def read_after_assign() -> StatefulModel:
    """Two ASSIGNs in one call, a READ between them sees the first; only the last one is kept."""
    m = StatefulModel()
    x = m.main.input("x", (4,))
    v = m.variable(m.main, "v")
    m.initialize("v", np.ones(4, np.float32))
    a, b = m.main.tensor("a", (4,)), m.main.tensor("b", (4,))
    m.main.op("ADD", [m.read(v, (4,)), x], [a], AddOptionsT())
    m.assign(v, a)
    m.main.op("MUL", [m.read(v, (4,)), m.main.const("two", np.float32([2.0]))], [b], MulOptionsT())
    m.assign(v, b)
    m.main.output(b)
    return m


def swap() -> StatefulModel:
    """Two variables that trade values each call (p, q = q, p + x): no read may see a write."""
    m = StatefulModel()
    x = m.main.input("x", (3,))
    p, q = m.variable(m.main, "p"), m.variable(m.main, "q")
    m.initialize("p", np.float32([1, 2, 3]))
    m.initialize("q", np.float32([-1, -2, -3]))
    rp, rq, s = m.read(p, (3,), name="rp"), m.read(q, (3,), name="rq"), m.main.tensor("s", (3,))
    m.main.op("ADD", [rp, x], [s], AddOptionsT())
    m.assign(p, rq)
    m.assign(q, s)
    m.main.output(rp)
    m.main.output(rq)
    return m


def counter() -> StatefulModel:
    """An int32 call counter: n = n + step."""
    m = StatefulModel()
    step = m.main.input("step", (2,), np.int32)
    n = m.variable(m.main, "count")
    m.initialize("count", np.int32([0, 100]))
    out = m.main.tensor("n", (2,), np.int32)
    m.main.op("ADD", [m.read(n, (2,), np.int32), step], [out], AddOptionsT())
    m.assign(n, out)
    m.main.output(out)
    return m


MODELS = {"running_sum": running_sum, "moving_average": moving_average, "ring_buffer": ring_buffer,
          "read_after_assign": read_after_assign, "swap": swap, "counter": counter}


def call_inputs(data: bytes, seed: int) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    details = interpreter(data).get_input_details()
    return [[(rng.standard_normal(d["shape"]) * 4).astype(d["dtype"]) for d in details] for _ in range(CALLS)]


def tflite_calls(data: bytes, calls: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """The outputs of each call of one interpreter (its variables persist across invokes)."""
    interp = interpreter(data)
    results = []
    for inputs in calls:
        for detail, x in zip(interp.get_input_details(), inputs):
            interp.set_tensor(detail["index"], x)
        interp.invoke()
        results.append([interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()])
    return results


@pytest.mark.parametrize("name", sorted(MODELS))
def test_state_persists_across_calls(name: str) -> None:
    data = MODELS[name]().build()
    calls = call_inputs(data, seed=len(name))
    module = iree_py.load(iree_py.compile(data))
    for i, (inputs, expected) in enumerate(zip(calls, tflite_calls(data, calls))):
        got = module.main.call(*inputs)
        assert_close(got, expected)  # call i


def test_two_loaded_modules_do_not_share_state() -> None:
    data = running_sum().build()
    compiled = iree_py.compile(data)
    first, second = iree_py.load(compiled), iree_py.load(compiled)
    x = np.ones((1, 4), np.float32)
    for _ in range(3):
        first.main(x)
    np.testing.assert_array_equal(second.main(x), np.full((1, 4), 1.5, np.float32))  # its first call
    np.testing.assert_array_equal(first.main(x), np.full((1, 4), 4.5, np.float32))   # its fourth


def test_reloading_resets_state() -> None:
    compiled = iree_py.compile(running_sum(initial=2.0).build())
    x = np.ones((1, 4), np.float32)
    module = iree_py.load(compiled)
    module.main(x)
    np.testing.assert_array_equal(module.main(x), np.full((1, 4), 4.0, np.float32))
    np.testing.assert_array_equal(iree_py.load(compiled).main(x), np.full((1, 4), 3.0, np.float32))


def test_imported_graph_matches_golden() -> None:
    text = print_graph(import_tflite(running_sum().build()))
    assert print_graph(parse_graph(text)) == text
    if os.environ.get("IREE_PY_UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


def test_dump_shows_state_slots_and_init_block() -> None:
    text = dump_module(read_module(iree_py.compile(ring_buffer().build(), target="x86_64")))
    slots = re.findall(r"^  \[ *(\d+), *(\d+)\)  state (.*)$", text, flags=re.M)
    assert [name for _, _, name in slots] == ["frames: tensor<1x3x4xf32>", "initialized flag"]
    start, end = int(slots[0][0]), int(slots[0][1])
    assert end - start == 48 and int(slots[1][1]) - int(slots[1][0]) == 8
    ops = re.findall(r"^ +\d+: (\w+)", text, flags=re.M)
    assert ops[ops.index("buffer_load_i64"):][:4] == ["buffer_load_i64", "cond_br", "buffer_copy", "buffer_store_i64"]


def test_init_computed_at_run_time_is_refused() -> None:
    m = running_sum()
    assert m.init is not None
    v = m.init.input("seed", (1, 4))  # an init subgraph with an input: its ASSIGN is not a constant
    m.init.op("ASSIGN_VARIABLE", [m.variable(m.init, "acc"), v], [])
    with pytest.raises(CompileError, match="init subgraph"):
        import_tflite(m.build())


def test_variable_type_mismatch_is_refused() -> None:
    m = running_sum()
    m.read(m.variable(m.main, "acc"), (2, 4))
    message = "variable 'acc' is tensor<1x4xf32>, but READ_VARIABLE's output is tensor<2x4xf32>"
    with pytest.raises(CompileError, match=message):
        import_tflite(m.build())


def test_reset_state_starts_over() -> None:
    module = iree_py.load(iree_py.compile(running_sum(initial=2.0).build()))
    x = np.ones((1, 4), np.float32)
    module.main(x)
    module.main(x)
    module.reset_state()
    np.testing.assert_array_equal(module.main(x), np.full((1, 4), 3.0, np.float32))  # init ran again
    np.testing.assert_array_equal(module.main(x), np.full((1, 4), 4.0, np.float32))


@pytest.mark.parametrize("name", ["ring_buffer", "counter", "swap"])
def test_state_on_arm64_under_qemu(name: str) -> None:
    data = MODELS[name]().build()
    calls = call_inputs(data, seed=1)[:3]
    compiled = iree_py.compile(data, target="arm64")
    module, other = iree_py.load(compiled, device="qemu"), iree_py.load(compiled, device="qemu")
    expected = tflite_calls(data, calls)
    for inputs, want in zip(calls, expected):
        assert_close(module.main.call(*inputs), want)
    assert_close(other.main.call(*calls[0]), expected[0])  # a second load starts from the initial state
    module.reset_state()
    assert_close(module.main.call(*calls[0]), expected[0])


def test_uninitialized_variable_starts_at_zero() -> None:
    """No CALL_ONCE: the slot starts zeroed (TFLite itself refuses to read it), so y is a running sum."""
    m = StatefulModel()
    x = m.main.input("x", (3,))
    acc = m.variable(m.main, "acc")
    y = m.main.tensor("y", (3,))
    m.main.op("ADD", [m.read(acc, (3,)), x], [y], AddOptionsT())
    m.assign(acc, y)
    m.main.output(y)
    module = iree_py.load(iree_py.compile(m.build()))
    xs = np.random.default_rng(3).standard_normal((CALLS, 3)).astype(np.float32)
    got = np.stack([module.main(x) for x in xs])
    np.testing.assert_allclose(got, np.cumsum(xs, axis=0, dtype=np.float32), rtol=1e-6)
