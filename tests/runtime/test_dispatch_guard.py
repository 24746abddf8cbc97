"""A module whose declared sizes disagree with its kernels is refused by the kernels themselves.

The runtime checks each binding against the entry point's declared minimum length, but those
minimums are module data. These modules lie consistently (the arena view and the declared minimum
shrink together, or the grid changes), which no loader check can see; the generated entry point's
guard must refuse to run rather than write past the buffer.
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import iree_py
from iree_py.module.reader import read_module
from iree_py.module.writer import write_module
from iree_py.vm.encoder import BytecodeBuilder, decode
from iree_py.vm.isa_generated import OPS
from tests.e2e.harness import model


def relu_module() -> bytes:
    return iree_py.compile(model([helper.make_node("Relu", ["x"], ["y"])], {"x": (4, 64)}, ["y"]).SerializeToString())


def rewrite(data: bytes, edit) -> bytes:
    """Re-encode the main function's bytecode with `edit(op, operands)` applied to each instruction."""
    module = read_module(data)
    fn = module.functions[0]
    code = BytecodeBuilder()
    for _, op, operands in decode(fn.bytecode):
        assert all(kind != "target" for _, kind in OPS[op][1]), "straight-line code expected"
        code.emit(op, *edit(op, operands))
    fn.bytecode = code.finish()
    return module, write_module(module)


def test_unchanged_module_runs():
    x = np.linspace(-1, 1, 256, dtype=np.float32).reshape(4, 64)
    np.testing.assert_array_equal(iree_py.load(relu_module()).main(x), np.maximum(x, 0))


def test_shrunk_output_binding_is_refused():
    module, _ = rewrite(relu_module(), lambda op, o: [o[0], o[1], 16] if op == "buffer_arena" else o)
    for entry in module.executables[0].entry_points:
        entry.binding_min_lengths = [16] * entry.binding_count
    m = iree_py.load(write_module(module))
    with pytest.raises(iree_py.IreeRuntimeError, match="k0_relu"):
        m.main(np.ones((4, 64), np.float32))


def test_changed_grid_is_refused():
    _, data = rewrite(relu_module(), lambda op, o: [o[0], o[1] + 1] if op == "const_i64" else o)
    with pytest.raises(iree_py.IreeRuntimeError, match="k0_relu"):
        iree_py.load(data).main(np.ones((4, 64), np.float32))
