"""Softmax, log-softmax and hardmax over one axis (f32): one invocation per row along the axis;
softmax and log-softmax in three passes (max, sum of exp(x - max), write), hardmax in two (the first
maximum's index, as the CPU backend's: a later element replaces it only where it compares greater,
ordered, so a NaN never does; then 1.0 there and 0.0 elsewhere)."""
from __future__ import annotations

import math

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder, Value
from iree_py.codegen.spirv.indexing import Dim, dims, product


def _rows(b: KernelBuilder, spec: KernelSpec) -> tuple[Dim, Dim, Dim]:
    """The rows along attrs axis (outer x inner), the axis length and the stride along it."""
    shape = dims(spec.inputs[0])
    axis = int(spec.attrs["axis"])
    outer, length, inner = product(shape[:axis]), shape[axis], product(shape[axis + 1:])
    return product([outer, inner]), length, inner


def _row_start(b: KernelBuilder, row: Value, length: Dim, inner: Dim) -> Value:
    return (row / b.dim(inner)) * b.dim(product([length, inner])) + row % b.dim(inner)


def _build(b: KernelBuilder, spec: KernelSpec, log: bool) -> Dim:
    rows, length, inner = _rows(b, spec)
    with b.for_each(rows) as row:
        base = _row_start(b, row, length, inner)
        step = b.dim(inner)
        top = b.variable("f32", -math.inf)
        with b.loop(0, b.dim(length)) as i:
            top.set(b.max(top.get(), b.load(0, base + i * step)))
        m = top.get()
        total = b.variable("f32", 0.0)
        with b.loop(0, b.dim(length)) as i:
            total.set(total.get() + b.ext("Exp", b.load(0, base + i * step) - m))
        s = total.get()
        log_s = b.ext("Log", s)
        with b.loop(0, b.dim(length)) as i:
            at = base + i * step
            shifted = b.load(0, at) - m
            b.store(1, at, shifted - log_s if log else b.ext("Exp", shifted) / s)
    return rows


def build_softmax(b: KernelBuilder, spec: KernelSpec) -> Dim:
    return _build(b, spec, log=False)


def build_logsoftmax(b: KernelBuilder, spec: KernelSpec) -> Dim:
    return _build(b, spec, log=True)


def build_hardmax(b: KernelBuilder, spec: KernelSpec) -> Dim:
    rows, length, inner = _rows(b, spec)
    with b.for_each(rows) as row:
        base = _row_start(b, row, length, inner)
        step = b.dim(inner)
        with b.if_(b.dim(length) > 0):  # an empty axis: nothing to read or write
            best, where = b.variable("f32", b.load(0, base)), b.variable("i32", 0)
            with b.loop(1, b.dim(length)) as i:
                x = b.load(0, base + i * step)
                greater = x > best.get()
                best.set(b.select(greater, x, best.get()))
                where.set(b.select(greater, i, where.get()))
            chosen = where.get()
            with b.loop(0, b.dim(length)) as i:
                b.store(1, base + i * step, b.select(i.eq(chosen), b.float(1.0), b.float(0.0)))
    return rows
