"""Reductions over one contiguous run of axes (f32; kind sum mean max min prod l1 l2 logsum
logsumexp sumsquare): the input seen as [outer, reduced, inner], one invocation per output."""
from __future__ import annotations

import math

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder
from iree_py.codegen.spirv.indexing import Dim, dims, product

KINDS = ("sum", "mean", "max", "min", "prod", "l1", "l2", "logsum", "logsumexp", "sumsquare")


def build_reduce(b: KernelBuilder, spec: KernelSpec) -> Dim:
    shape = dims(spec.inputs[0])
    axes = list(spec.attrs["axes"])
    kind = spec.attrs["kind"]
    first, last = (axes[0], axes[-1]) if axes else (len(shape), len(shape) - 1)
    outer, length, inner = product(shape[:first]), product(shape[first:last + 1]), product(shape[last + 1:])
    outputs = product([outer, inner])
    with b.for_each(outputs) as out:
        base = (out / b.dim(inner)) * b.dim(product([length, inner])) + out % b.dim(inner)
        step = b.dim(inner)
        shift = b.float(0.0)
        if kind == "logsumexp":
            top = b.variable("f32", -math.inf)
            with b.loop(0, b.dim(length)) as i:
                top.set(b.max(top.get(), b.load(0, base + i * step)))
            shift = top.get()
        initial = {"max": -math.inf, "min": math.inf, "prod": 1.0}.get(kind, 0.0)
        acc = b.variable("f32", initial)
        with b.loop(0, b.dim(length)) as i:
            x, a = b.load(0, base + i * step), acc.get()
            acc.set({"max": lambda: b.max(a, x), "min": lambda: b.min(a, x), "prod": lambda: a * x,
                     "l1": lambda: a + b.ext("FAbs", x), "l2": lambda: a + x * x, "sumsquare": lambda: a + x * x,
                     "logsumexp": lambda: a + b.ext("Exp", x - shift)}.get(kind, lambda: a + x)())
        a = acc.get()
        result = {"mean": lambda: a / b.to_f32(b.dim(length)), "l2": lambda: b.ext("Sqrt", a),
                  "logsum": lambda: b.ext("Log", a), "logsumexp": lambda: shift + b.ext("Log", a)}.get(kind,
                                                                                                   lambda: a)()
        b.store(1, out, result)
    return outputs
