"""Pad on SPIR-V: an element move of any dtype (bits copied through int arrays, u8 or u16 ones for
1-/2-byte elements, compared and selected widened to u32), one invocation per output element.
Output index o on an axis reads s = o - begin; constant mode writes the value where s is outside
the input, the other modes map s into the cropped input (negative pads crop) by the mode.
"""
from __future__ import annotations

import numpy as np

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder, Value
from iree_py.codegen.spirv.indexing import Dim, dims, linear, product, unravel
from iree_py.ir.symbols import Expr, dim
from iree_py.ir.types import DType


def fill_words(value: float, dtype: DType) -> list[int]:
    """The value as the 32-bit words of one element of dtype (1, or 2 for an 8-byte dtype), signed;
    a 1- or 2-byte element's bits zero-extended into one word."""
    element = np.array([value]).astype(dtype.numpy)
    if dtype.itemsize < 4:
        return [int(element.view(np.uint8 if dtype.itemsize == 1 else np.uint16)[0])]
    return [int(w) for w in element.view(np.int32)]


def _map_into(b: KernelBuilder, t: Value, n: Value, mode: str) -> Value:
    """Position t (any int) mapped into [0, n) by the pad mode (n > 0)."""
    def modulo(x: Value, p: Value) -> Value:
        return ((x % p) + p) % p
    if mode == "edge":
        return b.max(b.min(t, n - 1), 0)
    if mode == "wrap":
        return modulo(t, n)
    if mode == "symmetric":  # period 2n, the edge repeated
        u = modulo(t, n * 2)
        return b.select(u < n, u, n * 2 - 1 - u)
    # reflect: period 2(n - 1), the edge not repeated; n == 1 reads element 0
    p = b.max(n * 2 - 2, 1)
    u = modulo(t, p)
    return b.select(u < n, u, p - u)


def build_pad(b: KernelBuilder, spec: KernelSpec) -> Dim:
    in_shape, out_shape = dims(spec.inputs[0]), dims(spec.outputs[0])
    rank = len(in_shape)
    mode, pads = spec.attrs["mode"], [int(p) for p in spec.attrs["pads"]]
    total = product(out_shape)
    with b.for_each(total) as index:
        coords = unravel(b, index, out_shape)
        source: list[Value] = []
        inside = b.bool(True)
        for a in range(rank):
            s = coords[a] - pads[a]
            if mode == "constant":
                inside = b.logical_and(inside, b.logical_and(s >= 0, s < b.dim(in_shape[a])))
                source.append(b.max(b.min(s, b.dim(in_shape[a]) - 1), 0))
            else:
                lo, hi = max(-pads[a], 0), max(-pads[rank + a], 0)
                kept = b.dim(dim(Expr.of(in_shape[a]) - lo - hi))
                source.append(_map_into(b, s - lo, kept, mode) + lo)
        value = b.load(0, linear(b, source, in_shape))
        if mode == "constant":
            words = fill_words(spec.attrs.get("value", 0), spec.attrs.get("element_dtype", spec.inputs[0].dtype))
            narrow = value.ty if value.ty in ("u8", "u16") else None  # no arithmetic on those: widened
            if narrow:
                value = b.op("OpBitcast", "i32", b.op("OpUConvert", "u32", value))
            fill = b.int(words[0])
            if len(words) == 2 and words[1] != words[0]:  # the words axis (kernels.words_spec) is the last
                fill = b.select(coords[-1].eq(0), fill, b.int(words[1]))
            value = b.select(inside, value, fill)
            if narrow:
                value = b.op("OpUConvert", narrow, b.op("OpBitcast", "u32", value))
        b.store(1, index, value)
    return total
