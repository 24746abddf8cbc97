"""The "lstm", "gru" and "rnn" kernels: one ONNX recurrent layer, all time steps in one dispatch.

Bindings: X [seq, batch, input], W [dirs, G*H, input], R [dirs, G*H, H], B [dirs, 2*G*H],
sequence_lens i32 [batch], initial_h [dirs, batch, H] (lstm: initial_c, P [dirs, 3H]), then the
one output attrs["result"] names: Y [seq, dirs, batch, H], Y_h or Y_c [dirs, batch, H].
Semantics: iree_py/ir/reference_recurrent.py. Each direction's code is emitted separately, so its
activations and step order are constants.

seq and batch are ints or Exprs (docs/dynamic_shapes.md §3); input size, hidden size and the weights
are static. A static batch: one workgroup per direction runs the whole batch, its state batch x H
floats of stack scratch. A symbolic batch: the grid is (direction, batch entry), since entries never
interact, and each workgroup's state is H floats whatever the batch; an empty batch is an empty
grid. A seq of 0 runs no step (Y_h, Y_c: the initial state).

Per time step and batch entry, the pre-activations of every gate row at once, into a stack array:
a matrix-vector product vectorized across rows (broadcast x_t[k] or h[k], FMA into vectors of
consecutive rows, the accumulators in registers); then each hidden unit j's cell update. With
attrs["weights_transposed"] (the CPU plan step transposes constant weights: WT [dirs, input, G*H],
RT [dirs, H, G*H]) a vector of rows is one load; weights known only at run time are gathered. (A
dot product along each row, ending in a horizontal sum, took ten times as long on H = 12.) The
state lives in stack scratch (h, c, the new h until every unit has read the old one). A batch entry is active at time t when t < sequence_lens[b] (any i32 value is safe:
negative lengths never activate); an inactive step keeps its state and writes zeros to Y.
"""
from __future__ import annotations

import math
from typing import Callable

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (F32, I32, I64, as_index, const_f32, const_i32, const_i64, element_ptr,
                                         for_range, lanes_f32, load_f32, store_f32)
from iree_py.codegen.llvm.dims import DynamicKernel, begin_dynamic_kernel
from iree_py.codegen.llvm.epilogue import carried_loop, fma, gather_tile, splat, tile_type, zero
from iree_py.codegen.llvm.math import emit_unary
from iree_py.codegen.llvm.math_core import emit_tanh, fmax, fmin
from iree_py.ir.ops.recurrent import FUNCTIONS_PER_DIRECTION, GATES, num_directions
from iree_py.ir.types import DType

OPS = {"lstm": "LSTM", "gru": "GRU", "rnn": "RNN"}
MAX_SCRATCH_FLOATS = 1 << 16  # stack scratch (state): 256 KiB at most
MATVEC_ACCUMULATORS = 8       # row vectors one pass of the transposed matrix-vector product keeps
Activation = Callable[[ir.IRBuilder, ir.Value], ir.Value]


def _activation(name: str, alpha: float, beta: float) -> Activation:
    if name == "Affine":
        return lambda b, x: b.fadd(b.fmul(x, const_f32(alpha)), const_f32(beta))
    if name == "ScaledTanh":
        return lambda b, x: b.fmul(emit_tanh(b, b.fmul(x, const_f32(beta))), const_f32(alpha))
    attrs = {"HardSigmoid": {"alpha": alpha, "beta": beta}, "LeakyRelu": {"alpha": alpha},
             "ThresholdedRelu": {"alpha": alpha}, "Elu": {"alpha": alpha}}.get(name, {})
    return lambda b, x: emit_unary(b, name, attrs, x)


def _scratch(b: ir.IRBuilder, count: int, name: str) -> ir.Value:
    """A stack array of `count` floats in the entry block (a float pointer)."""
    block = b.block
    b.position_at_start(block.function.entry_basic_block)
    slot = b.alloca(F32, size=const_i32(max(count, 1)), name=name)
    b.position_at_end(block)
    return slot


class _Layer:
    """The sizes, bindings and scratch of one kernel, and the emitters its loops share. seq and batch
    are ints or i64 values; `entries` is how many batch entries one workgroup runs (and keeps the
    state of): the batch when it is static, else 1."""

    def __init__(self, spec: KernelSpec, op: str, dk: DynamicKernel) -> None:
        self.spec, self.op, self.b = spec, op, dk.builder
        seq, batch, size = spec.inputs[0].shape
        self.seq, self.batch, self.size = dk.index(seq), dk.index(batch), int(size)
        self.entries = self.batch if isinstance(self.batch, int) else 1
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
        state = self.entries * self.hidden
        self.h = _scratch(self.b, state, "h")
        self.c = _scratch(self.b, state, "c") if op == "LSTM" else None
        self.h_new = _scratch(self.b, self.hidden, "h_new")
        self.gate = _scratch(self.b, self.hidden, "gate") if op == "GRU" else None
        self.transposed = bool(spec.attrs.get("weights_transposed", False))
        # Pre-activations of every gate row: input part (with both biases, but GRU's recurrent
        # part, which goes to pre_h with its bias, for the reset gate to scale).
        self.pre_x = _scratch(self.b, self.rows, "pre_x")
        self.pre_h = _scratch(self.b, self.rows, "pre_h") if op == "GRU" else None

    def state_offset(self, bi: ir.Value) -> ir.Value:
        """Where batch entry bi's state starts in the scratch."""
        return self.b.mul(bi, const_i64(self.hidden)) if isinstance(self.batch, int) else const_i64(0)

    # --- arithmetic ------------------------------------------------------------------------------
    def clipped(self, x: ir.Value) -> ir.Value:
        if self.clip is None:
            return x
        return fmin(self.b, fmax(self.b, x, const_f32(-self.clip)), const_f32(self.clip))

    # --- every gate row at once -------------------------------------------------------------------
    def x_offset(self, t: ir.Value, bi: ir.Value) -> ir.Value:
        b = self.b
        return b.mul(b.add(b.mul(t, as_index(self.batch)), bi), const_i64(self.size))

    def weight_rows(self, wt: ir.Value, d: int, n: int, k: ir.Value, r: int, width: int) -> ir.Value:
        """Column k of rows [r, r + width) of direction d's W or R (rows of n: input size or H): one
        load from the transposed layout [dirs, n, rows], a gather from [dirs, rows, n]."""
        b = self.b
        if self.transposed:
            start = b.add(b.mul(b.add(k, const_i64(d * n)), const_i64(self.rows)), const_i64(r))
            return load_f32(b, wt, start, tile_type(width))
        return gather_tile(b, wt, b.add(const_i64((d * self.rows + r) * n), k), width, n)

    def matvec(self, d: int, out: ir.Value, r0: int, r1: int, biases: tuple[int, ...],
               terms: list[tuple[ir.Value, ir.Value, ir.Value, int]]) -> None:
        """out[r] = sum of bias[b + r] for b in `biases` + sum over terms (src, src_off, wt, n) of
        sum_{k<n} src[src_off + k] * wt[d, r, k], for rows r in [r0, r1): vectors of consecutive rows
        (the tail rows one by one), MATVEC_ACCUMULATORS at a time."""
        b, v = self.b, self.lanes
        pieces = [(r, v) for r in range(r0, r1 - (r1 - r0) % v, v)] + [(r, 1) for r in range(r1 - (r1 - r0) % v, r1)]
        for first in range(0, len(pieces), MATVEC_ACCUMULATORS):
            block = pieces[first:first + MATVEC_ACCUMULATORS]
            accs = [zero(w) for _, w in block]
            for base in biases:
                accs = [b.fadd(acc, load_f32(b, self.ptr["bias"], const_i64(base + r), tile_type(w)))
                        for acc, (r, w) in zip(accs, block)]
            for src, src_off, wt, n in terms:
                def k_step(k: ir.Value, values: list[ir.Value], src=src, src_off=src_off, wt=wt,
                           n=n) -> list[ir.Value]:
                    scalar = load_f32(b, src, b.add(src_off, k))
                    return [fma(b, self.weight_rows(wt, d, n, k, r, w), splat(b, scalar, w), acc)
                            for acc, (r, w) in zip(values, block)]
                accs = carried_loop(b, const_i64(0), const_i64(n), 1, accs, k_step, "mv")
            for acc, (r, _) in zip(accs, block):
                at = element_ptr(b, out, const_i64(r))  # the scratch is a float*: a vector store needs its type
                b.store(acc, b.bitcast(at, acc.type.as_pointer()) if isinstance(acc.type, ir.VectorType) else at,
                        align=4)

    def input_terms(self, t: ir.Value, bi: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value, int]:
        return (self.ptr["x"], self.x_offset(t, bi), self.ptr["w"], self.size)

    def state_terms(self, state: ir.Value, state_off: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value, int]:
        return (state, state_off, self.ptr["r"], self.hidden)

    def pre(self, gate: int, j: ir.Value) -> ir.Value:
        """Gate `gate`'s pre-activation for unit j, x_t W^T + h R^T + both biases, as `matvec`
        left it in pre_x (and pre_h for GRU)."""
        b = self.b
        row = b.add(const_i64(gate * self.hidden), j)
        value = load_f32(b, self.pre_x, row)
        return value if self.pre_h is None else b.fadd(value, load_f32(b, self.pre_h, row))

    # --- one step of one batch entry: writes h_new[j] for every unit (and c for LSTM) -------------
    def step(self, d: int, t: ir.Value, bi: ir.Value, fns: list[Activation]) -> None:
        b = self.b
        h_off = self.state_offset(bi)
        if self.op != "GRU":
            wb, rb = d * 2 * self.rows, d * 2 * self.rows + self.rows
            self.matvec(d, self.pre_x, 0, self.rows, (wb, rb), [self.input_terms(t, bi), self.state_terms(self.h, h_off)])
        if self.op == "RNN":
            with for_range(b, 0, self.hidden, name="j") as j:
                store_f32(b, fns[0](b, self.clipped(self.pre(0, j))), self.h_new, j)
            return
        if self.op == "GRU":
            self._gru_step(d, t, bi, h_off, fns)
            return
        self._lstm_step(d, t, bi, h_off, fns)

    def _gru_step(self, d: int, t: ir.Value, bi: ir.Value, h_off: ir.Value, fns: list[Activation]) -> None:
        b = self.b
        f, g = fns
        linear_before_reset = int(self.spec.attrs["linear_before_reset"])
        hidden = self.hidden
        wb, rb = d * 2 * self.rows, d * 2 * self.rows + self.rows
        self.matvec(d, self.pre_x, 0, self.rows, (wb,), [self.input_terms(t, bi)])
        # z and r (and the candidate's, when linear before reset) from h now; the candidate's
        # otherwise from the reset-scaled state below.
        h_rows = self.rows if linear_before_reset else 2 * hidden
        self.matvec(d, self.pre_h, 0, h_rows, (rb,), [self.state_terms(self.h, h_off)])
        with for_range(b, 0, hidden, name="j") as j:  # reset gate (times h unless linear before reset)
            reset = f(b, self.clipped(self.pre(1, j)))
            store_f32(b, reset if linear_before_reset else b.fmul(reset, load_f32(b, self.h, b.add(h_off, j))),
                      self.gate, j)
        if not linear_before_reset:
            self.matvec(d, self.pre_h, 2 * hidden, self.rows, (rb,), [self.state_terms(self.gate, const_i64(0))])
        with for_range(b, 0, hidden, name="j") as j:
            z = f(b, self.clipped(self.pre(0, j)))
            row = b.add(const_i64(2 * hidden), j)
            recurrent = load_f32(b, self.pre_h, row)
            hh = b.fmul(load_f32(b, self.gate, j), recurrent) if linear_before_reset else recurrent
            cand = g(b, self.clipped(b.fadd(load_f32(b, self.pre_x, row), hh)))
            h_prev = load_f32(b, self.h, b.add(h_off, j))
            one_minus_z = b.fsub(const_f32(1.0), z)
            store_f32(b, b.fadd(b.fmul(one_minus_z, cand), b.fmul(z, h_prev)), self.h_new, j)

    def _lstm_step(self, d: int, t: ir.Value, bi: ir.Value, h_off: ir.Value, fns: list[Activation]) -> None:
        b = self.b
        f, g, h = fns
        peep, hidden = self.ptr["peep"], self.hidden
        with for_range(b, 0, hidden, name="j") as j:
            at = b.add(h_off, j)
            c_prev = load_f32(b, self.c, at)

            def peephole(k: int, c_value: ir.Value) -> ir.Value:
                return b.fmul(load_f32(b, peep, b.add(const_i64(d * 3 * hidden + k * hidden), j)), c_value)

            i = f(b, self.clipped(b.fadd(self.pre(0, j), peephole(0, c_prev))))
            if int(self.spec.attrs["input_forget"]):
                forget = b.fsub(const_f32(1.0), i)
            else:
                forget = f(b, self.clipped(b.fadd(self.pre(2, j), peephole(2, c_prev))))
            cell = g(b, self.clipped(self.pre(3, j)))
            c_new = b.fadd(b.fmul(forget, c_prev), b.fmul(i, cell))
            o = f(b, self.clipped(b.fadd(self.pre(1, j), peephole(1, c_new))))
            store_f32(b, c_new, self.c, at)  # only unit j reads c[b, j]
            store_f32(b, b.fmul(o, h(b, c_new)), self.h_new, j)

    # --- the whole direction ---------------------------------------------------------------------
    def direction(self, d: int, entry: ir.Value | None) -> None:
        """Every time step of direction d: of the whole batch (a static batch, entry None) or of
        batch entry `entry`."""
        b, hidden, batch = self.b, self.hidden, self.batch
        backward = self.spec.attrs["direction"] == "reverse" or d == 1
        per = FUNCTIONS_PER_DIRECTION[self.op]
        attrs = self.spec.attrs
        fns = [_activation(attrs["activations"][k], float(attrs["activation_alpha"][k]),
                           float(attrs["activation_beta"][k])) for k in range(d * per, (d + 1) * per)]
        result, out = attrs["result"], self.ptr["out"]
        if entry is None:
            state_base = const_i64(d * batch * hidden)
        else:  # [d, entry, 0]
            state_base = b.mul(b.add(b.mul(const_i64(d), as_index(batch)), entry), const_i64(hidden))
        with for_range(b, 0, self.entries * hidden, name="init") as k:
            at = b.add(state_base, k)
            store_f32(b, load_f32(b, self.ptr["h0"], at), self.h, k)
            if self.c is not None:
                store_f32(b, load_f32(b, self.ptr["c0"], at), self.c, k)

        def one_entry(t: ir.Value, bi: ir.Value) -> None:
            length = b.sext(b.load(element_ptr(b, self.ptr["lens"], bi, I32), typ=I32, align=4), I64)
            y_off = b.mul(b.add(b.mul(b.add(b.mul(t, const_i64(self.dirs)), const_i64(d)), as_index(batch)), bi),
                          const_i64(hidden))
            h_off = self.state_offset(bi)
            with b.if_else(b.icmp_signed("<", t, length)) as (active, inactive):
                with active:
                    self.step(d, t, bi, fns)
                    with for_range(b, 0, hidden, name="j") as j:
                        value = load_f32(b, self.h_new, j)
                        store_f32(b, value, self.h, b.add(h_off, j))
                        if result == "Y":
                            store_f32(b, value, out, b.add(y_off, j))
                with inactive:
                    if result == "Y":
                        with for_range(b, 0, hidden, name="j") as j:
                            store_f32(b, const_f32(0.0), out, b.add(y_off, j))

        with for_range(b, 0, self.seq, name="s") as s:
            if not backward:
                t = s
            elif isinstance(self.seq, int):
                t = b.sub(const_i64(self.seq - 1), s)
            else:
                t = b.sub(b.sub(self.seq, const_i64(1)), s)
            if entry is None:
                with for_range(b, 0, batch, name="bi") as bi:
                    one_entry(t, bi)
            else:
                one_entry(t, entry)
        if result != "Y":
            final = self.h if result == "Y_h" else self.c
            with for_range(b, 0, self.entries * hidden, name="fin") as k:
                store_f32(b, load_f32(b, final, k), out, b.add(state_base, k))


def build(spec: KernelSpec, module: ir.Module, target) -> KernelInfo:
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
        raise ValueError(f"{what}: wants f32 X and output and i32 sequence_lens, got {x}, "
                         f"{spec.inputs[4]} -> {spec.outputs[0]}")
    if x.rank != 3 or not isinstance(x.shape[2], int):
        raise CompileError(f"{what}: X must be [seq, batch, input] with a static input size, got {x}")
    for i in (1, 2, 3) + ((7,) if op == "LSTM" else ()):
        if not spec.inputs[i].is_static:
            raise CompileError(f"{what}: input {i} (weights, biases, peepholes) must be static, got {spec.inputs[i]}")
    if spec.attrs["result"] not in ("Y", "Y_h") + (("Y_c",) if op == "LSTM" else ()):
        raise ValueError(f"{what}: result {spec.attrs['result']!r} is not an output of {op}")
    batch = x.shape[1]
    entries = batch if isinstance(batch, int) else 1
    hidden = int(spec.attrs["hidden_size"])
    pre_activations = (2 if op == "GRU" else 1) * GATES[op] * hidden
    if (2 * entries + 2) * hidden + pre_activations > MAX_SCRATCH_FLOATS:
        raise ValueError(f"{what}: batch {entries} x hidden {hidden} needs more stack scratch than "
                         f"{MAX_SCRATCH_FLOATS} floats")
    dirs = num_directions(spec.attrs["direction"])
    dk = begin_dynamic_kernel(module, spec, target)
    layer = _Layer(spec, op, dk)
    b = dk.builder
    entry = None if isinstance(batch, int) else dk.workgroup_id_index(1)
    if dirs == 1:
        layer.direction(0, entry)
    else:
        with b.if_else(b.icmp_unsigned("==", dk.kb.workgroup_id(0), const_i32(0))) as (first, second):
            with first:
                layer.direction(0, entry)
            with second:
                layer.direction(1, entry)
    dk.finish()
    return dk.info(workgroup_count=(dirs, 1 if isinstance(batch, int) else batch, 1))
