"""lstm, gru and rnn kernels against the numpy reference (iree_py/ir/reference_recurrent.py) within
1e-5 of the largest expected magnitude: every direction and result, clip, input_forget,
linear_before_reset, non-default activations, sizes on and off the vector width, and
sequence_lens values outside [0, seq] (longer, zero, negative)."""
from __future__ import annotations

import numpy as np
import pytest

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm.jit import run_kernels
from iree_py.ir.ops_recurrent import FUNCTIONS_PER_DIRECTION, GATES
from iree_py.ir.reference_recurrent import KERNELS
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


@pytest.mark.parametrize("op", sorted(GATES))
def test_every_direction_result_and_variant(op: str) -> None:
    specs, inputs, wants = [], [], []
    shapes = [(5, 3, 7, 9, [5, 2, 4]), (3, 2, 16, 8, [7, 0]), (4, 2, 3, 5, [-3, 4])]  # (seq, batch, in, H, lens)
    for direction in ("forward", "reverse", "bidirectional"):
        for variant, (seq, batch, size, hidden, lens) in enumerate(shapes):
            arrays, attrs = _layer(op, direction, seq, batch, size, hidden, lens, variant % 2)
            for result in RESULTS[op]:
                a = {**attrs, "result": result}
                want = KERNELS[op](arrays, a)
                specs.append(KernelSpec(f"{op}_{direction}_{variant}_{result}".lower(), op.lower(),
                                        tuple(_t(v) for v in arrays), (_t(want),), a))
                inputs.append(arrays)
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
