"""The "qlstm" kernel: the QLSTM op, the recurrence of onnxruntime's DynamicQuantizeLSTM (docs/ir.md
"QLSTM"; semantics: iree_py/ir/reference_recurrent.py `_qlstm`), all time steps in one dispatch.

Bindings: XW [dirs, seq, batch, 4H] f32 (the input projections, gates i o f c), R [dirs, H, 4H]
i8/u8, R_scale [dirs, 4H] f32, B [dirs, 8H], sequence_lens i32 [batch], initial_h, initial_c
[dirs, batch, H], P [dirs, 3H], then the one output attrs["result"] names: Y [seq, dirs, batch, H],
Y_h or Y_c [dirs, batch, H]. seq may be symbolic (an int | Expr dim, read from the push constants);
batch and H are static. One workgroup per direction: the batch entries share each step's scale.

Per step s < max(len) (len = sequence_lens clamped to [0, seq]): the previous h of every entry
(`source`: h, or 0 for an entry that has finished when attrs finished_as_zero) is quantized to u8
with the range's scale and zero point (as onnxruntime's GetQuantizationParameter and
MlasQuantizeLinear), kept as q - zero point in i32. Each entry with s < len runs row t = s (reverse:
len - 1 - s): acc[col] = sum_k hq[k] * (R[k, col] - r_zp), vectors of R's bytes widened to i32
over the columns; then per unit j the CPU LSTM's float steps in its order: gate =
f32(acc) * f32(h_scale * R_scale[col]) + XW, + c * P (peepholes), + (Wb + Rb), clipped, activation
(Sigmoid and Tanh: MLAS's rational ones), c = c * f + i * g, h = h_fn(c) * o. Stack scratch: h, c,
source (f32) and hq (i32) for the batch, acc (i32) for 4H columns.
"""
from __future__ import annotations

import math

from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import (F32, I8, I32, I64, const_f32, const_i32, const_i64, element_ptr, for_range,
                                         lanes_f32, load_f32, max_index, min_index, store_f32, vector_split)
from iree_py.codegen.llvm.dims import DynamicKernel, begin_dynamic_kernel
from iree_py.codegen.llvm.math_core import (emit_rational_sigmoid, emit_rational_tanh, fmax, fmin, integral_to_int,
                                            round_half_even)
from iree_py.codegen.llvm.recurrent import MAX_SCRATCH_FLOATS, Activation, _activation
from iree_py.targets import Target
from iree_py.ir.ops.recurrent import num_directions
from iree_py.ir.types import DType

RATIONAL: dict[str, Activation] = {"Sigmoid": emit_rational_sigmoid, "Tanh": emit_rational_tanh}


def _function(name: str, alpha: float, beta: float) -> Activation:
    """An LSTM activation as onnxruntime's CPU LSTM computes it: Sigmoid and Tanh are MLAS's."""
    return RATIONAL.get(name) or _activation(name, alpha, beta)


def _stack(b: ir.IRBuilder, ty: ir.Type, count: int, name: str) -> ir.Value:
    block = b.block
    b.position_at_start(block.function.entry_basic_block)
    slot = b.alloca(ty, size=const_i32(max(count, 1)), name=name)
    b.position_at_end(block)
    return slot


class _QLayer:
    """One kernel's sizes, bindings and scratch, and the emitters of a direction."""

    NAMES = ("xw", "r", "r_scale", "bias", "lens", "h0", "c0", "peep")

    def __init__(self, spec: KernelSpec, dk: DynamicKernel) -> None:
        self.spec, self.dk, self.b = spec, dk, dk.builder
        _, seq, batch, _ = spec.inputs[0].shape
        self.seq, self.batch = dk.dim(seq), int(batch)
        self.hidden = int(spec.attrs["hidden_size"])
        self.cols = 4 * self.hidden
        self.dirs = num_directions(spec.attrs["direction"])
        self.r_dtype = spec.inputs[1].dtype
        self.lanes = lanes_f32(dk.kb.target)
        clip = float(spec.attrs["clip"])
        self.clip = clip if math.isfinite(clip) else None
        self.ptr = {name: dk.binding(i) for i, name in enumerate(self.NAMES)}
        self.ptr["out"] = dk.binding(len(self.NAMES))
        state = self.batch * self.hidden
        self.h = _stack(self.b, F32, state, "h")
        self.c = _stack(self.b, F32, state, "c")
        self.source = _stack(self.b, F32, state, "source")
        self.hq = _stack(self.b, I32, state, "hq")
        self.acc = _stack(self.b, I32, self.cols, "acc")
        self.lo, self.hi = _stack(self.b, F32, 1, "lo"), _stack(self.b, F32, 1, "hi")
        self.steps = _stack(self.b, I64, 1, "steps")

    # --- helpers ---------------------------------------------------------------------------------
    def length(self, bi: ir.Value) -> ir.Value:
        """sequence_lens[bi] clamped to [0, seq], as i64."""
        b = self.b
        raw = b.sext(b.load(element_ptr(b, self.ptr["lens"], bi, I32), typ=I32, align=4), I64)
        return min_index(b, max_index(b, raw, const_i64(0)), self.seq)

    def clipped(self, x: ir.Value) -> ir.Value:
        if self.clip is None:
            return x
        return fmin(self.b, fmax(self.b, x, const_f32(-self.clip)), const_f32(self.clip))

    # --- one step's quantization of `source` ----------------------------------------------------
    def quantize_source(self) -> ir.Value:
        """hq = u8(source) - zero point over the whole batch; returns the scale."""
        b, n = self.b, self.batch * self.hidden
        lo_slot, hi_slot = self.lo, self.hi
        b.store(const_f32(0.0), lo_slot)
        b.store(const_f32(0.0), hi_slot)
        with for_range(b, 0, n, name="range") as k:
            v = load_f32(b, self.source, k)
            lo, hi = b.load(lo_slot), b.load(hi_slot)
            b.store(b.select(b.fcmp_ordered("<", v, lo), v, lo), lo_slot)
            b.store(b.select(b.fcmp_ordered(">", v, hi), v, hi), hi_slot)
        lo, hi = b.load(lo_slot), b.load(hi_slot)
        scale = b.select(b.fcmp_ordered("==", hi, lo), const_f32(1.0), b.fdiv(b.fsub(hi, lo), const_f32(255.0)))
        zp = round_half_even(b, fmin(b, fmax(b, b.fsub(const_f32(0.0), b.fdiv(lo, scale)), const_f32(0.0)),
                                     const_f32(255.0)))
        with for_range(b, 0, n, name="quant") as k:
            q = b.fadd(round_half_even(b, b.fdiv(load_f32(b, self.source, k), scale)), zp)
            q = fmin(b, fmax(b, q, const_f32(0.0)), const_f32(255.0))
            b.store(b.sub(integral_to_int(b, q), integral_to_int(b, zp)), element_ptr(b, self.hq, k, I32), align=4)
        return scale

    # --- acc[col] = sum_k hq[bi, k] * (R[d, k, col] - r_zp) ---------------------------------------
    def recurrent_sums(self, d: int, bi: ir.Value) -> None:
        b, cols, lanes = self.b, self.cols, self.lanes
        vec, tail = vector_split(cols, lanes)
        zp = int(self.spec.attrs["r_zero_point"][d])
        widen = b.sext if self.r_dtype == DType.i8 else b.zext
        with for_range(b, 0, cols, name="zero") as j:
            b.store(const_i32(0), element_ptr(b, self.acc, j, I32), align=4)
        r_base = const_i64(d * self.hidden * cols)
        with for_range(b, 0, self.hidden, name="k") as k:
            a = b.load(element_ptr(b, self.hq, b.add(b.mul(bi, const_i64(self.hidden)), k), I32), typ=I32, align=4)
            row = b.add(r_base, b.mul(k, const_i64(cols)))
            if vec:
                i8v, i32v = ir.VectorType(I8, lanes), ir.VectorType(I32, lanes)
                av = b.shuffle_vector(b.insert_element(ir.Constant(i32v, ir.Undefined), a, const_i32(0)),
                                      ir.Constant(i32v, ir.Undefined), ir.Constant(i32v, [0] * lanes))
                zpv = ir.Constant(i32v, [zp] * lanes)
                with for_range(b, 0, vec, lanes, name="col") as j:
                    w = widen(b.load(element_ptr(b, self.ptr["r"], b.add(row, j), I8), typ=i8v, align=1), i32v)
                    at = b.bitcast(element_ptr(b, self.acc, j, I32), i32v.as_pointer())
                    b.store(b.add(b.load(at, typ=i32v, align=4), b.mul(av, b.sub(w, zpv))), at, align=4)
            for j in range(vec, vec + tail):
                w = widen(b.load(element_ptr(b, self.ptr["r"], b.add(row, const_i64(j)), I8), typ=I8, align=1), I32)
                at = element_ptr(b, self.acc, const_i64(j), I32)
                b.store(b.add(b.load(at, typ=I32, align=4), b.mul(a, b.sub(w, const_i32(zp)))), at, align=4)

    # --- the gates of one entry at row t ---------------------------------------------------------
    def gates(self, d: int, t: ir.Value, bi: ir.Value, scale: ir.Value, fns: list[Activation]) -> None:
        b, hidden, cols = self.b, self.hidden, self.cols
        f, g, h_fn = fns
        xw_row = b.mul(b.add(b.mul(b.add(b.mul(const_i64(d), self.seq), t), const_i64(self.batch)), bi),
                       const_i64(cols))
        state_row = b.mul(bi, const_i64(hidden))
        result, out = self.spec.attrs["result"], self.ptr["out"]
        with for_range(b, 0, hidden, name="j") as j:
            def pre(gate: int) -> ir.Value:
                col = b.add(const_i64(gate * hidden), j)
                acc = b.sitofp(b.load(element_ptr(b, self.acc, col, I32), typ=I32, align=4), F32)
                multiplier = b.fmul(scale, load_f32(b, self.ptr["r_scale"], b.add(const_i64(d * cols), col)))
                return b.fadd(b.fmul(acc, multiplier), load_f32(b, self.ptr["xw"], b.add(xw_row, col)))

            def bias(gate: int) -> ir.Value:
                at = b.add(const_i64(d * 2 * cols + gate * hidden), j)
                return b.fadd(load_f32(b, self.ptr["bias"], at), load_f32(b, self.ptr["bias"], b.add(at, const_i64(cols))))

            def peephole(k: int, c_value: ir.Value) -> ir.Value:
                return b.fmul(c_value, load_f32(b, self.ptr["peep"], b.add(const_i64(d * 3 * hidden + k * hidden), j)))

            at = b.add(state_row, j)
            c_prev = load_f32(b, self.c, at)
            i = f(b, self.clipped(b.fadd(b.fadd(pre(0), peephole(0, c_prev)), bias(0))))
            if int(self.spec.attrs["input_forget"]):
                forget = b.fsub(const_f32(1.0), i)
            else:
                forget = f(b, self.clipped(b.fadd(b.fadd(pre(2), peephole(2, c_prev)), bias(2))))
            cell = g(b, self.clipped(b.fadd(pre(3), bias(3))))
            c_new = b.fadd(b.fmul(c_prev, forget), b.fmul(i, cell))
            o = f(b, self.clipped(b.fadd(b.fadd(pre(1), peephole(1, c_new)), bias(1))))
            h_new = b.fmul(h_fn(b, c_new), o)
            store_f32(b, c_new, self.c, at)
            store_f32(b, h_new, self.h, at)
            store_f32(b, h_new, self.source, at)  # hq already holds this step's quantized source
            if result == "Y":
                y_at = b.add(b.mul(b.add(b.mul(b.add(b.mul(t, const_i64(self.dirs)), const_i64(d)),
                                                   const_i64(self.batch)), bi), const_i64(hidden)), j)
                store_f32(b, h_new, out, y_at)

    # --- the whole direction ---------------------------------------------------------------------
    def direction(self, d: int) -> None:
        b, hidden, batch = self.b, self.hidden, self.batch
        attrs = self.spec.attrs
        backward = attrs["direction"] == "reverse" or d == 1
        fns = [_function(attrs["activations"][k], float(attrs["activation_alpha"][k]),
                         float(attrs["activation_beta"][k])) for k in range(3 * d, 3 * d + 3)]
        result, out = attrs["result"], self.ptr["out"]
        state_base = const_i64(d * batch * hidden)
        with for_range(b, 0, batch * hidden, name="init") as k:
            h0 = load_f32(b, self.ptr["h0"], b.add(state_base, k))
            store_f32(b, h0, self.h, k)
            store_f32(b, h0, self.source, k)
            store_f32(b, load_f32(b, self.ptr["c0"], b.add(state_base, k)), self.c, k)
        if result == "Y":  # rows no step writes are zeros
            with for_range(b, 0, self.seq, name="ty") as t:
                row = b.mul(b.add(b.mul(t, const_i64(self.dirs)), const_i64(d)), const_i64(batch * hidden))
                with for_range(b, 0, batch * hidden, name="yz") as k:
                    store_f32(b, const_f32(0.0), out, b.add(row, k))
        steps_slot = self.steps
        b.store(const_i64(0), steps_slot)
        with for_range(b, 0, batch, name="bl") as bi:
            b.store(max_index(b, b.load(steps_slot), self.length(bi)), steps_slot)
        with for_range(b, 0, b.load(steps_slot), name="s") as s:
            scale = self.quantize_source()
            with for_range(b, 0, batch, name="bi") as bi:
                length = self.length(bi)
                with b.if_else(b.icmp_signed("<", s, length)) as (active, finished):
                    with active:
                        t = b.sub(b.sub(length, const_i64(1)), s) if backward else s
                        self.recurrent_sums(d, bi)
                        self.gates(d, t, bi, scale, fns)
                    with finished:
                        if int(attrs["finished_as_zero"]):
                            with for_range(b, 0, hidden, name="fz") as j:
                                store_f32(b, const_f32(0.0), self.source, b.add(b.mul(bi, const_i64(hidden)), j))
        if result != "Y":
            final = self.h if result == "Y_h" else self.c
            with for_range(b, 0, batch, name="fb") as bi:
                ran = b.icmp_signed(">", self.length(bi), const_i64(0))
                with for_range(b, 0, hidden, name="fin") as j:
                    at = b.add(b.mul(bi, const_i64(hidden)), j)
                    store_f32(b, b.select(ran, load_f32(b, final, at), const_f32(0.0)), out, b.add(state_base, at))


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"qlstm kernel {spec.name}"
    if len(spec.inputs) != 8 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 8 inputs and 1 output, got {len(spec.inputs)} and {len(spec.outputs)}")
    xw, r = spec.inputs[0], spec.inputs[1]
    if xw.dtype != DType.f32 or xw.rank != 4 or r.dtype not in (DType.i8, DType.u8) or spec.inputs[4].dtype != DType.i32:
        raise ValueError(f"{what}: wants f32 XW [dirs, seq, batch, 4H], i8/u8 R and i32 sequence_lens, got {xw}, "
                         f"{r}, {spec.inputs[4]}")
    if not isinstance(xw.shape[2], int) or not all(spec.inputs[i].is_static for i in (1, 2, 3, 7)):
        raise ValueError(f"{what}: batch, R, R_scale, B and P must be static, got {xw}, {spec.inputs[1:4]}, "
                         f"{spec.inputs[7]}")
    hidden, batch = int(spec.attrs["hidden_size"]), int(xw.shape[2])
    if 4 * batch * hidden + 4 * hidden > MAX_SCRATCH_FLOATS:
        raise ValueError(f"{what}: batch {batch} x hidden {hidden} needs more stack scratch than "
                         f"{MAX_SCRATCH_FLOATS} words")
    dirs = num_directions(spec.attrs["direction"])
    dk = begin_dynamic_kernel(module, spec, target)
    layer = _QLayer(spec, dk)
    b = dk.builder
    if dirs == 1:
        layer.direction(0)
    else:
        with b.if_else(b.icmp_unsigned("==", dk.workgroup_id_index(0), const_i64(0))) as (first, second):
            with first:
                layer.direction(0)
            with second:
                layer.direction(1)
    dk.finish()
    return dk.info(workgroup_count=(dirs, 1, 1))
