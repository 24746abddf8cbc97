"""If / Loop / Scan with symbolic shapes (docs/control_flow.md, "Symbolic shapes"): each model is
compiled once and run at several sizes and trip counts on host (one on arm64 under qemu),
compared with onnxruntime (relative 1e-4 of the largest magnitude, harness.assert_close), and the
output shapes must match exactly."""
from __future__ import annotations

import numpy as np
import pytest

import cf_dyn_models as cfd
import iree_py
from harness import DEVICE, assert_close, run_onnxruntime
from iree_py.conformance.cases import collect_cases
from iree_py.conformance.runner import run_case
from iree_py.errors import IreePyError

_MODULES: dict[tuple[str, str], object] = {}


def _f32(rng: np.random.Generator, *shape: int, shift: float = 0.0) -> np.ndarray:
    return (rng.standard_normal(shape) + shift).astype(np.float32)


MODELS = {
    "loop_trips": cfd.loop_runtime_trips,
    "loop_trips_stop": lambda: cfd.loop_runtime_trips(stop_at=1.5),
    "loop_batch": cfd.loop_batch_carried,
    "scan_seq": cfd.scan_symbolic_seq,
    "if_same_shapes": cfd.if_symbolic,
    "if_different_shapes": lambda: cfd.if_symbolic(else_width=2),
}


def inputs_for(name: str, size: int) -> list[np.ndarray]:
    rng = np.random.default_rng(size)
    if name.startswith("loop_trips"):
        return [np.abs(_f32(rng, 1, 4)), _f32(rng, 1, 4), np.array(size, np.int64)]
    if name == "loop_batch":
        return [_f32(rng, size, 16), np.array(size % 4 + 1, np.int64)]
    if name == "scan_seq":
        return [_f32(rng, size % 3 + 1, 8), _f32(rng, size + 1, size % 3 + 1, 8)]
    return [_f32(rng, size, 4, shift=1.0 if size % 2 else -1.0)]  # both branches over the sizes


def module_for(name: str, target: str = "host"):
    key = (name, target)
    if key not in _MODULES:
        data = iree_py.compile(MODELS[name]().SerializeToString(), target=target)
        _MODULES[key] = iree_py.load(data, device=DEVICE[target]) if target != "host" else iree_py.load(data)
    return _MODULES[key]


def check(name: str, target: str, sizes: list[int]) -> None:
    m, module = MODELS[name](), module_for(name, target)
    for size in sizes:
        inputs = inputs_for(name, size)
        got, want = module.main.call(*inputs), run_onnxruntime(m, inputs)
        assert [g.shape for g in got] == [w.shape for w in want], (name, size)
        assert_close(got, want)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_one_module_serves_every_size_on_host(name: str) -> None:
    check(name, "host", [0, 1, 2, 5, 8])


def test_loop_with_runtime_trips_on_arm64() -> None:
    check("if_different_shapes", "arm64", [3, 4])
    check("loop_trips", "arm64", [0, 3])


def test_scan_outputs_have_the_length_of_the_iterations_run() -> None:
    """The condition stops the loop before the trip count: the scan output holds the slices made."""
    stopped = module_for("loop_trips_stop").main.call(*inputs_for("loop_trips_stop", 8))[1]
    full = module_for("loop_trips").main.call(*inputs_for("loop_trips", 8))[1]
    assert 0 < stopped.shape[0] < 8 and full.shape == (8, 1, 4)


def test_if_result_takes_the_shape_of_the_branch_taken() -> None:
    module = module_for("if_different_shapes")
    x = np.ones((3, 4), np.float32)
    assert module.main.call(x)[0].shape == (3, 4)
    assert module.main.call(-x)[0].shape == (3, 2)


def test_body_pool_blocks_are_freed_every_iteration() -> None:
    """Only the scan output grows with the trip count: the body's blocks are freed each time."""
    module = module_for("loop_batch")
    x = np.ones((3, 16), np.float32)
    module.main.call(x, np.array(4, np.int64))
    few = module.peak_bytes
    module.main.call(x, np.array(40, np.int64))
    assert module.peak_bytes - few == 36 * 3 * 16 * 4


def test_onnx_loop11_conformance_case_passes() -> None:
    (case,) = collect_cases("test_loop11")
    assert run_case(case, "host").status == "passed"


def test_a_carried_value_that_changes_shape_at_run_time_is_refused() -> None:
    """test_loop11's body slices x[i:i+1] of a 5-element x: from trip 6 on the slice is empty and
    the carried y would change shape; the run-time check names the node (onnxruntime fails too)."""
    (case,) = collect_cases("test_loop11")
    module = iree_py.load(iree_py.compile(case.model, target="host"))
    with pytest.raises(IreePyError, match=r"node 'Loop_0' \(op Reshape\): dim 0 of the input, which the reshape drops: .* = 0 "):
        module.main.call(np.array(7, np.int64), *case.inputs[1:])
