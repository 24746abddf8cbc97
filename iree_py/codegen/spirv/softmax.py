"""Softmax and log-softmax over one axis (f32): one invocation per row along the axis, three passes
(max, sum of exp(x - max), write)."""
from __future__ import annotations

import math

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder
from iree_py.codegen.spirv.indexing import Dim, dims, product


def _build(b: KernelBuilder, spec: KernelSpec, log: bool) -> Dim:
    shape = dims(spec.inputs[0])
    axis = int(spec.attrs["axis"])
    outer, length, inner = product(shape[:axis]), shape[axis], product(shape[axis + 1:])
    rows = product([outer, inner])
    with b.for_each(rows) as row:
        base = (row / b.dim(inner)) * b.dim(product([length, inner])) + row % b.dim(inner)
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
