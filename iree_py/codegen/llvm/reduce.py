"""Reductions over a contiguous row of floats with a vector accumulator and a scalar tail."""
from __future__ import annotations

from llvmlite import ir

from iree_py.codegen.llvm.common import (F32, const_i64, entry_alloca, float_vector, for_range, horizontal, load_f32, splat,
                                         vector_split)


def reduce_row(b: ir.IRBuilder, src: ir.Value, base: ir.Value, length: int | ir.Value, lanes: int, init: float,
               combine, value_of) -> ir.Value:
    """Fold value_of(loaded x, index) over a contiguous row of `length` floats at `base`: a vector
    accumulator over the whole vectors, then a scalar tail. `length` is a static int or a run-time
    i64 (dynamic kernels): the vector part then ends at the largest multiple of `lanes` <= length."""
    if isinstance(length, int):
        vec_len: int | ir.Value = vector_split(length, lanes)[0]
        vectors = bool(vec_len)
    else:
        vectors = lanes > 1
        vec_len = b.mul(b.udiv(length, const_i64(lanes)), const_i64(lanes)) if vectors else const_i64(0)
    acc = entry_alloca(b, F32)
    b.store(splat(init, F32), acc)
    if vectors:
        vty = float_vector(lanes)
        vacc = entry_alloca(b, vty)
        b.store(splat(init, vty), vacc)
        with for_range(b, 0, vec_len, step=lanes, name="v") as j:
            idx = b.add(base, j)
            b.store(combine(b, b.load(vacc), value_of(load_f32(b, src, idx, vty), idx)), vacc)
        b.store(horizontal(b, b.load(vacc), combine), acc)
    with for_range(b, vec_len, length, name="t") as j:
        idx = b.add(base, j)
        b.store(combine(b, b.load(acc), value_of(load_f32(b, src, idx), idx)), acc)
    return b.load(acc)
