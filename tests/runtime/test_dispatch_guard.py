"""A module whose declared sizes disagree with its kernels is refused by the kernels themselves.

The runtime checks each binding against the entry point's declared minimum length, but those
minimums are module data. These modules lie consistently (the arena view and the declared minimum
shrink together, or the grid changes), which no loader check can see; the generated entry point's
guard must refuse to run rather than write past the buffer. Likewise a module that binds a constant
(used in place: the module bytes) or the caller's input where a kernel writes: the runtime marks
those bindings read-only (kernel_abi.h read_only_bindings) and the guard refuses to write them.
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


def add_constant_module(inputs: int = 1) -> bytes:
    """y = x0 + ... + c0 + ...: `inputs` caller inputs and as many constants, one kernel (Sum) whose
    bindings are the inputs, then the constants, then y."""
    names = [f"x{i}" for i in range(inputs)]
    consts = {f"c{i}": np.full((4, 64), i + 1, np.float32) for i in range(inputs)}
    node = helper.make_node("Sum" if inputs > 1 else "Add", [*names, *consts], ["y"], name="add_c")
    return iree_py.compile(model([node], {n: (4, 64) for n in names}, ["y"], consts).SerializeToString())


def rebind_output(data: bytes, pick) -> bytes:
    """The module with its dispatch's last binding (the kernel's output) replaced by
    `pick(bindings, constant_registers)`."""
    constants = [o[0] for _, op, o in decode(read_module(data).functions[0].bytecode) if op == "buffer_constant"]

    def edit(op, o):
        return [*o[:6], [*o[6][:-1], pick(o[6], constants)]] if op == "dispatch" else o

    return rewrite(data, edit)[1]


READ_ONLY = r"node 'add_c' \(op (Add|Sum)\): .*a binding it writes is read-only .*\(kernel k0_(add|sum)\w*, code 5\)"


def test_constant_bound_as_output_is_refused_and_left_alone():
    data = rebind_output(add_constant_module(), lambda bindings, constants: constants[0])
    kept = bytearray(data)
    m = iree_py.load(data)
    with pytest.raises(iree_py.IreeRuntimeError, match=READ_ONLY):
        m.main(np.ones((4, 64), np.float32))
    assert bytearray(data) == kept  # the constant is used in place: the module's bytes are unchanged


def test_input_bound_as_output_is_refused():
    data = rebind_output(add_constant_module(), lambda bindings, constants: bindings[0])
    x = np.ones((4, 64), np.float32)
    with pytest.raises(iree_py.IreeRuntimeError, match=READ_ONLY):
        iree_py.load(data).main(x)
    np.testing.assert_array_equal(x, np.ones((4, 64), np.float32))


def test_read_only_bindings_past_the_first_32():
    """24 inputs and 24 constants: 49 bindings, the constants at 24..47 in both of the bitmap's
    words. The compiled module runs (read-only constants past binding 31 are no reason to refuse its
    output, binding 48); with the last constant bound as the output it is refused."""
    inputs = 24
    data = add_constant_module(inputs)
    xs = [np.full((4, 64), 10.0 * i, np.float32) for i in range(inputs)]
    want = sum(xs) + sum(range(1, inputs + 1))
    np.testing.assert_array_equal(iree_py.load(data).main(*xs), want)
    damaged = rebind_output(data, lambda bindings, constants: constants[-1])
    with pytest.raises(iree_py.IreeRuntimeError, match=READ_ONLY):
        iree_py.load(damaged).main(*xs)
