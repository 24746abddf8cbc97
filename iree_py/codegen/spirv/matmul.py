"""Matrix multiply A[..., M, K] x B[..., K, N] (f32, batch dims broadcast, an epilogue): one
invocation per output element."""
from __future__ import annotations

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder
from iree_py.codegen.spirv.epilogue import apply_epilogue
from iree_py.codegen.spirv.indexing import Dim, broadcast_index, dims, product, unravel


def build_matmul(b: KernelBuilder, spec: KernelSpec) -> Dim:
    a_shape, b_shape, out_shape = dims(spec.inputs[0]), dims(spec.inputs[1]), dims(spec.outputs[0])
    k = a_shape[-1]
    total = product(out_shape)
    with b.for_each(total) as index:
        coords = unravel(b, index, out_shape)
        batch, row, col = coords[:-2], coords[-2], coords[-1]
        zero = b.int(0)
        # The first element of this row of A and this column of B in their (broadcast) batches.
        a_base = broadcast_index(b, [*batch, zero, zero], [*a_shape[:-2], 1, 1]) * b.dim(product(a_shape[-2:])) \
            + row * b.dim(k)
        b_base = broadcast_index(b, [*batch, zero, zero], [*b_shape[:-2], 1, 1]) * b.dim(product(b_shape[-2:])) + col
        acc = b.variable("f32", 0.0)
        with b.loop(0, b.dim(k)) as i:
            acc.set(acc.get() + b.load(0, a_base + i) * b.load(1, b_base + i * b.dim(b_shape[-1])))
        b.store(len(spec.inputs), index, apply_epilogue(b, spec, acc.get(), index, col))
    return total
