"""TopK on SPIR-V: the k largest (or smallest) elements along attrs axis, in order, ties broken by
the lower index, as the CPU kernel (codegen/llvm/topk.py): attrs result says which output this
kernel writes, "values" (the input's dtype) or "indices" (i64, stored as two words: no Int64).
Any dtype of scalars.py but bool and the narrow ones, compared as its type.

Seen as [outer, n, inner]; one invocation per column. Pass r takes the best element that comes
after pass r-1's pick in the order (value, then index), so no scratch memory is needed (O(k n) per
column). A NaN is never picked (numpy sorts it last): a column with fewer than k other elements
gets index -1 and value 0 for the rest."""
from __future__ import annotations

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder, Value
from iree_py.codegen.spirv.indexing import Dim, dims, product
from iree_py.codegen.spirv.scalars import Scalar, load, scalar, store
from iree_py.codegen.spirv.typed_math import compare
from iree_py.ir.types import DType

DTYPES = (DType.f32, DType.f64, DType.i8, DType.i16, DType.i32, DType.i64, DType.u8, DType.u16, DType.u32,
          DType.u64)


def element_types(spec: KernelSpec) -> list[str]:
    storage = scalar(spec.inputs[0].dtype).storage
    return [storage, "i32" if spec.attrs["result"] == "indices" else storage]


def _is_nan(b: KernelBuilder, x: Value, s: Scalar) -> Value:
    return b.op("OpIsNan", "bool", x) if s.is_float else b.bool(False)


def build_topk(b: KernelBuilder, spec: KernelSpec) -> Dim:
    s = scalar(spec.inputs[0].dtype)
    shape = dims(spec.inputs[0])
    axis = int(spec.attrs["axis"])
    k = dims(spec.outputs[0])[axis]
    outer, n, inner = product(shape[:axis]), shape[axis], product(shape[axis + 1:])
    better_op, worse_op = ("Greater", "Less") if int(spec.attrs.get("largest", 1)) else ("Less", "Greater")
    indices = spec.attrs["result"] == "indices"
    columns = product([outer, inner])
    with b.for_each(columns) as column:
        o, i = column / b.dim(inner), column % b.dim(inner)
        base, out_base = o * b.dim(product([n, inner])) + i, o * b.dim(product([k, inner])) + i
        zero = b.const(0, s.register)  # the picks' start (pass 0 takes any element, so never compared)
        pick, pick_index = b.variable(zero.ty, zero), b.variable("i32", -1)
        with b.loop(0, b.dim(k)) as r:
            best, best_index = b.variable(zero.ty, zero), b.variable("i32", -1)
            previous, previous_index = pick.get(), pick_index.get()
            with b.loop(0, b.dim(n)) as j:
                x = load(b, 0, base + j * b.dim(inner), s)
                after = b.logical_or(compare(b, worse_op, x, previous, s),
                                     b.logical_and(compare(b, "Equal", x, previous, s), j > previous_index))
                eligible = b.logical_and(b.logical_not(_is_nan(b, x, s)),
                                         b.logical_or(r.eq(0), after))
                wins = b.logical_or(best_index.get() < 0, compare(b, better_op, x, best.get(), s))
                take = b.logical_and(eligible, wins)
                best.set(b.select(take, x, best.get()))
                best_index.set(b.select(take, j, best_index.get()))
            found = best_index.get() >= 0
            at = out_base + r * b.dim(inner)
            if indices:
                b.store(1, at * 2, best_index.get())
                b.store(1, at * 2 + 1, b.select(found, b.int(0), b.int(-1)))
            else:
                store(b, 1, at, b.select(found, best.get(), b.const(0, best.ty)), s)
            pick.set(best.get())
            pick_index.set(best_index.get())
    return columns
