"""The dispatch guard refuses a dispatch in which a binding its kernel writes is marked read-only
(kernel_abi.h read_only_bindings) and runs one whose read-only bindings are all inputs, wherever
they lie in the bitmap. The runtime's side: tests/runtime/test_dispatch_guard.py."""
from __future__ import annotations

import numpy as np
import pytest

from iree_py.codegen.kernel_abi import STATUS_READ_ONLY_BINDING
from iree_py.codegen.kernel_spec import Expr, ExprStep, KernelSpec
from iree_py.codegen.llvm import build_executable
from iree_py.codegen.llvm.dispatch_guard import written_words
from iree_py.codegen.llvm.jit import LoadedLibrary
from iree_py.targets import load_target
from tests.codegen.conftest import f32


def _sum(inputs: int) -> KernelSpec:
    """out = in0 + ... : bindings 0..inputs-1, then the output at `inputs`."""
    steps = [ExprStep("Add", (("in", 0), ("in", 1)))]
    steps += [ExprStep("Add", (("step", i - 2), ("in", i))) for i in range(2, inputs)]
    return KernelSpec(f"k_sum{inputs}", "elementwise", (f32(8),) * inputs, (f32(8),), {"expr": Expr(tuple(steps))})


@pytest.mark.parametrize("inputs", [2, 31, 40, 70])
def test_read_only_inputs_run_and_a_read_only_output_is_refused(inputs: int) -> None:
    spec = _sum(inputs)
    lib = LoadedLibrary(build_executable([spec], load_target("host")))
    xs = [np.full(8, i, np.float32) for i in range(inputs)]
    out = lib.run(spec, xs)[0]  # every input marked read-only (the default)
    np.testing.assert_array_equal(out, np.full(8, sum(range(inputs)), np.float32))
    with pytest.raises(RuntimeError, match=f"returned {STATUS_READ_ONLY_BINDING} at workgroup"):
        lib.run(spec, xs, read_only=[inputs])
    with pytest.raises(RuntimeError, match=f"returned {STATUS_READ_ONLY_BINDING} at workgroup"):
        lib.run(spec, xs, read_only=range(inputs + 1))
    np.testing.assert_array_equal(lib.run(spec, xs, read_only=[])[0], out)


def test_written_words_are_i32_masks() -> None:
    assert written_words(range(2, 3)) == {0: 4}
    assert written_words([31, 32, 65]) == {0: -(1 << 31), 1: 1, 2: 2}
    assert written_words([]) == {}
