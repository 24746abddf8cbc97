"""lstm, gru and rnn kernels against the numpy reference (iree_py/ir/ops/recurrent.py) within
1e-5 of the largest expected magnitude: every direction and result, clip, input_forget,
linear_before_reset, non-default activations, sizes on and off the vector width, and
sequence_lens values outside [0, seq] (longer, zero, negative)."""
from __future__ import annotations

import numpy as np
import pytest

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm.jit import run_kernels
from iree_py.ir.ops.recurrent import FUNCTIONS_PER_DIRECTION, GATES
from iree_py.ir.ops.recurrent import KERNELS
from iree_py.ir.types import DType, TensorType
from tests.codegen.conftest import assert_close

RNG = np.random.default_rng(5)
RESULTS = {"LSTM": ("Y", "Y_h", "Y_c"), "GRU": ("Y", "Y_h"), "RNN": ("Y", "Y_h")}
ACTIVATIONS = {"LSTM": ["Sigmoid", "Tanh", "Tanh", "HardSigmoid", "ScaledTanh", "Affine"],
               "GRU": ["Sigmoid", "Tanh", "LeakyRelu", "Elu"],
               "RNN": ["Tanh", "ThresholdedRelu"]}


def _t(a: np.ndarray) -> TensorType:
    return TensorType(DType.from_numpy(a.dtype), a.shape)


def _layer(op: str, direction: str, seq: int, batch: int, size: int, hidden: int, lens: list[int],
           variant: int) -> tuple[list[np.ndarray], dict]:
    dirs, rows = 2 if direction == "bidirectional" else 1, GATES[op] * hidden
    arrays = [RNG.standard_normal((seq, batch, size)).astype(np.float32),
              (RNG.standard_normal((dirs, rows, size)) * 0.5).astype(np.float32),
              (RNG.standard_normal((dirs, rows, hidden)) * 0.5).astype(np.float32),
              (RNG.standard_normal((dirs, 2 * rows)) * 0.5).astype(np.float32),
              np.array(lens, np.int32),
              RNG.standard_normal((dirs, batch, hidden)).astype(np.float32)]
    count = FUNCTIONS_PER_DIRECTION[op] * dirs
    names = ACTIVATIONS[op][:count] if variant else ACTIVATIONS[op][:FUNCTIONS_PER_DIRECTION[op]] * dirs
    if variant and direction != "bidirectional":
        names = ACTIVATIONS[op][-count:]
    attrs = {"direction": direction, "hidden_size": hidden, "activations": names,
             "activation_alpha": [0.3] * count, "activation_beta": [0.6] * count,
             "clip": 2.5 if variant else float("inf")}
    if op == "LSTM":
        arrays += [RNG.standard_normal((dirs, batch, hidden)).astype(np.float32),
                   RNG.standard_normal((dirs, 3 * hidden)).astype(np.float32)]
        attrs["input_forget"] = variant
    if op == "GRU":
        attrs["linear_before_reset"] = variant
    return arrays, attrs


def _transposed(arrays: list[np.ndarray], attrs: dict) -> tuple[list[np.ndarray], dict]:
    """The layer as the CPU plan step hands it over: W, R transposed to [dirs, in or H, G*H]."""
    moved = [np.ascontiguousarray(np.transpose(a, (0, 2, 1))) for a in arrays[1:3]]
    return [arrays[0], *moved, *arrays[3:]], {**attrs, "weights_transposed": True}


@pytest.mark.parametrize("transposed", [False, True], ids=["rows", "transposed"])
@pytest.mark.parametrize("op", sorted(GATES))
def test_every_direction_result_and_variant(op: str, transposed: bool) -> None:
    """Hidden sizes off and on the vector width; H = 20 gives LSTM 80 gate rows, more than one
    pass of the transposed matrix-vector product's accumulators."""
    specs, inputs, wants = [], [], []
    shapes = [(5, 3, 7, 9, [5, 2, 4]), (3, 2, 16, 8, [7, 0]), (4, 2, 3, 5, [-3, 4]),
              (3, 1, 4, 20, [3])]  # (seq, batch, in, H, lens)
    for direction in ("forward", "reverse", "bidirectional"):
        for variant, (seq, batch, size, hidden, lens) in enumerate(shapes):
            arrays, attrs = _layer(op, direction, seq, batch, size, hidden, lens, variant % 2)
            for result in RESULTS[op]:
                a = {**attrs, "result": result}
                want = KERNELS[op](arrays, a)
                given, given_attrs = _transposed(arrays, a) if transposed else (arrays, a)
                specs.append(KernelSpec(f"{op}_{direction}_{variant}_{result}_{int(transposed)}".lower(), op.lower(),
                                        tuple(_t(v) for v in given), (_t(want),), given_attrs))
                inputs.append(given)
                wants.append(want)
    for spec, (got,), want in zip(specs, run_kernels(specs, inputs), wants):
        assert_close(got, want, 1e-5, spec.name)


def test_inactive_steps_write_zeros_and_keep_the_state() -> None:
    arrays, attrs = _layer("GRU", "reverse", 4, 2, 3, 4, [0, 2], 0)
    specs = [KernelSpec(f"gru_{r}", "gru", tuple(_t(v) for v in arrays),
                        (TensorType(DType.f32, (4, 1, 2, 4) if r == "Y" else (1, 2, 4)),), {**attrs, "result": r})
             for r in ("Y", "Y_h")]
    (y,), (y_h,) = run_kernels(specs, [arrays, arrays])
    np.testing.assert_array_equal(y[:, 0, 0], 0.0)   # length 0: no step runs
    np.testing.assert_array_equal(y[2:, 0, 1], 0.0)  # length 2: only t = 1, 0
    np.testing.assert_array_equal(y_h[0, 0], arrays[5][0, 0])  # the initial state, untouched
    np.testing.assert_array_equal(y_h[0, 1], y[0, 0, 1])  # reverse: the final state is Y at t = 0


# --- qlstm: onnxruntime's DynamicQuantizeLSTM recurrence ------------------------------------------------
def _qlstm(direction: str, seq: int, batch: int, hidden: int, lens: list[int], r_dtype: type, variant: int,
           finished_as_zero: int, rng: np.random.Generator = RNG) -> tuple[list[np.ndarray], dict]:
    RNG = rng  # noqa: N806 (the module's generator unless a test needs data of its own)
    dirs, cols = 2 if direction == "bidirectional" else 1, 4 * hidden
    low, high = (-128, 128) if r_dtype == np.int8 else (0, 256)
    zero_points = [0] * dirs if r_dtype == np.int8 else [int(z) for z in RNG.integers(90, 160, dirs)]
    arrays = [RNG.standard_normal((dirs, seq, batch, cols)).astype(np.float32),
              RNG.integers(low, high, (dirs, hidden, cols)).astype(r_dtype),
              RNG.uniform(0.002, 0.02, (dirs, cols)).astype(np.float32),
              (RNG.standard_normal((dirs, 8 * hidden)) * 0.5).astype(np.float32),
              np.array(lens, np.int32),
              RNG.standard_normal((dirs, batch, hidden)).astype(np.float32),
              RNG.standard_normal((dirs, batch, hidden)).astype(np.float32),
              (RNG.standard_normal((dirs, 3 * hidden)) * 0.5).astype(np.float32)]
    names = (["HardSigmoid", "Tanh", "Relu"] if variant else ["Sigmoid", "Tanh", "Tanh"]) * dirs
    attrs = {"direction": direction, "hidden_size": hidden, "activations": names,
             "activation_alpha": [0.3] * 3 * dirs, "activation_beta": [0.6] * 3 * dirs,
             "clip": 2.5 if variant else float("inf"), "input_forget": variant, "r_zero_point": zero_points,
             "finished_as_zero": finished_as_zero}
    return arrays, attrs


def test_qlstm_matches_its_reference_bit_for_bit() -> None:
    """qlstm against ir/ops/recurrent.py's float32 twin of onnxruntime's arithmetic: the same
    values exactly, for every direction and result, i8 and u8 R (zero points), both ways of counting
    a finished entry, lengths outside [0, seq], and 4H on and off the vector width."""
    specs, inputs, wants = [], [], []
    shapes = [(5, 3, 5, [5, 2, 4]), (3, 2, 8, [7, 0]), (4, 1, 16, [-3]), (6, 2, 4, [6, 3])]  # (seq, batch, H, lens)
    for k, direction in enumerate(("forward", "reverse", "bidirectional")):
        for variant, (seq, batch, hidden, lens) in enumerate(shapes):
            arrays, attrs = _qlstm(direction, seq, batch, hidden, lens, (np.int8, np.uint8)[(k + variant) % 2],
                                   variant % 2, (k + variant // 2) % 2)
            for result in ("Y", "Y_h", "Y_c"):
                a = {**attrs, "result": result}
                want = KERNELS["QLSTM"](arrays, a)
                specs.append(KernelSpec(f"qlstm_{direction}_{variant}_{result}".lower(), "qlstm",
                                        tuple(_t(v) for v in arrays), (_t(want),), a))
                inputs.append(arrays)
                wants.append(want)
    for spec, (got,), want in zip(specs, run_kernels(specs, inputs), wants):
        np.testing.assert_array_equal(got, want, err_msg=spec.name)


def test_qlstm_finished_entries_count_as_zero_or_as_their_last_state() -> None:
    """An entry that has finished still takes part in the batch's range: as 0 (onnxruntime reads h
    back from Y, whose rows past the length are 0) or as its last h (read from Y_h); that changes
    the longer entry's result."""
    # Data of its own: whether the difference shows depends on the draw, not on which tests ran first.
    arrays, attrs = _qlstm("forward", 6, 2, 4, [6, 1], np.int8, 0, 1, np.random.default_rng(4))
    arrays[5][0, 1] = 40.0  # the finished entry's state dominates the range while it counts
    specs = [KernelSpec(f"qlstm_finished_{z}", "qlstm", tuple(_t(v) for v in arrays), (TensorType(DType.f32, (1, 2, 4)),),
                        {**attrs, "finished_as_zero": z, "result": "Y_h"}) for z in (0, 1)]
    (kept,), (zeroed,) = run_kernels(specs, [arrays, arrays])
    assert not np.array_equal(kept[0, 0], zeroed[0, 0])
    np.testing.assert_array_equal(kept[0, 1], zeroed[0, 1])  # the short entry ran one step either way
    for spec, got in zip(specs, (kept, zeroed)):
        np.testing.assert_array_equal(got, KERNELS["QLSTM"](arrays, spec.attrs))


def test_qlstm_with_a_symbolic_sequence_length() -> None:
    from iree_py.codegen.llvm import build_executable
    from iree_py.codegen.llvm.jit import LoadedLibrary
    from iree_py.targets import load_target
    from iree_py.ir.symbols import Expr

    seq = Expr.of("seq")
    arrays, attrs = _qlstm("bidirectional", 5, 2, 4, [5, 3], np.uint8, 0, 1)
    types = [_t(v) for v in arrays]
    types[0] = TensorType(DType.f32, (2, seq, 2, 16))
    specs = [KernelSpec(f"qlstm_dyn_{r}", "qlstm", tuple(types),
                        (TensorType(DType.f32, (seq, 2, 2, 4) if r == "Y" else (2, 2, 4)),), {**attrs, "result": r})
             for r in ("Y", "Y_c")]
    lib = LoadedLibrary(build_executable(specs, load_target("host")))
    for steps in (5, 2, 0):
        xw = RNG.standard_normal((2, steps, 2, 16)).astype(np.float32)
        run = [xw, *arrays[1:4], np.array([steps, min(steps, 3)], np.int32), *arrays[5:]]
        for spec in specs:
            (got,) = lib.run(spec, run, {"seq": steps})
            np.testing.assert_array_equal(got, KERNELS["QLSTM"](run, spec.attrs), err_msg=f"{spec.name} seq {steps}")
