"""The "lstm", "gru" and "rnn" kernels for symbolic seq_length and batch: one ONNX recurrent layer,
all time steps in one dispatch (the static kernel is codegen/llvm/recurrent.py; semantics:
iree_py/ir/reference_recurrent.py).

Bindings as the static kernel: X [seq, batch, input], W, R, B, sequence_lens i32 [batch], initial_h
[dirs, batch, H] (lstm: initial_c, P), then the one output attrs["result"] names: Y [seq, dirs,
batch, H], Y_h or Y_c [dirs, batch, H]. seq and batch may be symbolic; input size, hidden size and
the weights are static.

Batch entries never interact, so the grid is (direction, batch entry): each workgroup runs every
time step of one entry in one direction and its state is H floats of stack scratch whatever the
batch (the static kernel keeps the whole batch's state, batch x H, in one workgroup per direction).
The cell arithmetic is the static kernel's (its _Layer), with the state offset 0 and the batch
stride of X and Y read from the push constants. sequence_lens is read at run time: an entry is
active at step t when t < sequence_lens[b]; an inactive step keeps the state and writes zeros to Y.
An empty batch is an empty grid; seq 0 runs no step (Y_h, Y_c: the initial state).
"""
from __future__ import annotations

import math

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (I32, I64, const_f32, const_i64, element_ptr, for_range, lanes_f32,
                                         load_f32, store_f32)
from iree_py.codegen.llvm.dynamic.common import DynamicKernel, begin_dynamic_kernel
from iree_py.codegen.llvm.recurrent import MAX_SCRATCH_FLOATS, OPS, _activation, _Layer, _scratch
from iree_py.targets import Target
from iree_py.ir.ops_recurrent import FUNCTIONS_PER_DIRECTION, GATES, num_directions
from iree_py.ir.types import DType


class _EntryLayer(_Layer):
    """The static kernel's cell emitters over the state of one batch entry (offset 0)."""

    def __init__(self, spec: KernelSpec, op: str, dk: DynamicKernel) -> None:
        self.spec, self.op, self.kb, self.b = spec, op, dk.kb, dk.builder
        seq, batch, size = spec.inputs[0].shape
        self.seq, self.batch, self.size = dk.dim(seq), dk.dim(batch), int(size)
        self.dirs = num_directions(spec.attrs["direction"])
        self.hidden = int(spec.attrs["hidden_size"])
        self.rows = GATES[op] * self.hidden
        self.lanes = lanes_f32(dk.kb.target)
        clip = float(spec.attrs["clip"])
        self.clip = clip if math.isfinite(clip) else None
        names = ("x", "w", "r", "bias", "lens", "h0", "c0", "peep") if op == "LSTM" else ("x", "w", "r", "bias",
                                                                                          "lens", "h0")
        self.ptr = {name: dk.binding(i) for i, name in enumerate(names)}
        self.ptr["out"] = dk.binding(len(names))
        self.h = _scratch(self.b, self.hidden, "h")
        self.c = _scratch(self.b, self.hidden, "c") if op == "LSTM" else None
        self.h_new = _scratch(self.b, self.hidden, "h_new")
        self.gate = _scratch(self.b, self.hidden, "gate") if op == "GRU" else None

    def input_part(self, d: int, t: ir.Value, bi: ir.Value, row: ir.Value) -> ir.Value:
        """x_t[b] . W[d, row] + Wb[d, row], X's batch stride from the push constants."""
        b = self.b
        x_off = b.mul(b.add(b.mul(t, self.batch), bi), const_i64(self.size))
        w_off = b.mul(b.add(const_i64(d * self.rows), row), const_i64(self.size))
        wb = load_f32(b, self.ptr["bias"], b.add(const_i64(d * 2 * self.rows), row))
        return b.fadd(self.dot(self.ptr["x"], x_off, self.ptr["w"], w_off, self.size), wb)

    def pre(self, d: int, t: ir.Value, bi: ir.Value, gate: int, j: ir.Value) -> ir.Value:
        row = self.b.add(const_i64(gate * self.hidden), j)
        return self.b.fadd(self.input_part(d, t, bi, row), self.recurrent_part(d, self.h, const_i64(0), row))

    def step(self, d: int, t: ir.Value, bi: ir.Value, fns: list) -> None:
        b = self.b
        if self.op == "RNN":
            with for_range(b, 0, self.hidden, name="j") as j:
                store_f32(b, fns[0](b, self.clipped(self.pre(d, t, bi, 0, j))), self.h_new, j)
        elif self.op == "GRU":
            self._gru_step(d, t, bi, const_i64(0), fns)
        else:
            self._lstm_step(d, t, bi, const_i64(0), fns)

    def entry(self, d: int, bi: ir.Value) -> None:
        """Every time step of batch entry `bi` in direction d."""
        b, hidden = self.b, self.hidden
        backward = self.spec.attrs["direction"] == "reverse" or d == 1
        per = FUNCTIONS_PER_DIRECTION[self.op]
        attrs = self.spec.attrs
        fns = [_activation(attrs["activations"][k], float(attrs["activation_alpha"][k]),
                           float(attrs["activation_beta"][k])) for k in range(d * per, (d + 1) * per)]
        result, out = attrs["result"], self.ptr["out"]
        state_at = b.mul(b.add(b.mul(const_i64(d), self.batch), bi), const_i64(hidden))  # [d, bi, 0]
        with for_range(b, 0, hidden, name="init") as k:
            store_f32(b, load_f32(b, self.ptr["h0"], b.add(state_at, k)), self.h, k)
            if self.c is not None:
                store_f32(b, load_f32(b, self.ptr["c0"], b.add(state_at, k)), self.c, k)
        length = b.sext(b.load(element_ptr(b, self.ptr["lens"], bi, I32), typ=I32, align=4), I64)
        with for_range(b, 0, self.seq, name="s") as s:
            t = b.sub(b.sub(self.seq, const_i64(1)), s) if backward else s
            y_off = b.mul(b.add(b.mul(b.add(b.mul(t, const_i64(self.dirs)), const_i64(d)), self.batch), bi),
                          const_i64(hidden))
            with b.if_else(b.icmp_signed("<", t, length)) as (active, inactive):
                with active:
                    self.step(d, t, bi, fns)
                    with for_range(b, 0, hidden, name="j") as j:
                        value = load_f32(b, self.h_new, j)
                        store_f32(b, value, self.h, j)
                        if result == "Y":
                            store_f32(b, value, out, b.add(y_off, j))
                with inactive:
                    if result == "Y":
                        with for_range(b, 0, hidden, name="j") as j:
                            store_f32(b, const_f32(0.0), out, b.add(y_off, j))
        if result != "Y":
            final = self.h if result == "Y_h" else self.c
            with for_range(b, 0, hidden, name="fin") as k:
                store_f32(b, load_f32(b, final, k), out, b.add(state_at, k))


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"{spec.kind} kernel {spec.name}"
    op = OPS.get(spec.kind)
    if op is None:
        raise ValueError(f"{what}: kind must be one of {sorted(OPS)}")
    want_inputs = 8 if op == "LSTM" else 6
    if len(spec.inputs) != want_inputs or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects {want_inputs} inputs and 1 output, got {len(spec.inputs)} and "
                         f"{len(spec.outputs)}")
    x = spec.inputs[0]
    if x.dtype != DType.f32 or spec.inputs[4].dtype != DType.i32 or spec.outputs[0].dtype != DType.f32:
        raise ValueError(f"{what}: wants f32 X and output and i32 sequence_lens, got {x}, {spec.inputs[4]} -> "
                         f"{spec.outputs[0]}")
    if x.rank != 3 or not isinstance(x.shape[2], int):
        raise CompileError(f"{what}: X must be [seq, batch, input] with a static input size, got {x}")
    for i in (1, 2, 3) + ((7,) if op == "LSTM" else ()):
        if not spec.inputs[i].is_static:
            raise CompileError(f"{what}: input {i} (weights, biases, peepholes) must be static, got {spec.inputs[i]}")
    hidden = int(spec.attrs["hidden_size"])
    if 4 * hidden > MAX_SCRATCH_FLOATS:
        raise ValueError(f"{what}: hidden {hidden} needs more stack scratch than {MAX_SCRATCH_FLOATS} floats")
    if spec.attrs["result"] not in ("Y", "Y_h") + (("Y_c",) if op == "LSTM" else ()):
        raise ValueError(f"{what}: result {spec.attrs['result']!r} is not an output of {op}")
    dirs = num_directions(spec.attrs["direction"])
    dk = begin_dynamic_kernel(module, spec, target)
    layer = _EntryLayer(spec, op, dk)
    b = dk.builder
    bi = dk.workgroup_id_index(1)
    if dirs == 1:
        layer.entry(0, bi)
    else:
        with b.if_else(b.icmp_unsigned("==", dk.workgroup_id_index(0), const_i64(0))) as (first, second):
            with first:
                layer.entry(0, bi)
            with second:
                layer.entry(1, bi)
    dk.finish()
    return dk.info(workgroup_count=(dirs, x.shape[1], 1))
