"""The "topk" kernel: the k largest (or smallest) elements along attrs axis, in order, ties broken
by the lower index (ONNX), for floats and integers; dims and k ints or Exprs (k may be a symbol read
at run time). attrs result says which output this kernel writes: "values" (the input's dtype) or
"indices" (i64); a TopK with both outputs used is two kernels.

Seen as [outer, n, inner]; one workgroup per outer index (none when outer is 0). Each column is
scanned k times: pass r takes the best element that comes after pass r-1's pick in the order
(value, then index), so no scratch memory is needed (O(k n) per column, fine for the small k of
detection heads). The pick before the first is the value beyond every other (+inf for largest on
floats, the type's maximum on integers, and so on), so every element is eligible in the first
pass. A NaN never is (numpy sorts it last): a column with fewer than k other elements gets index -1
and value 0 for the rest, as the f32 kernel always did. A k beyond the axis makes the kernel fail
before it touches memory (the lowering's DimCheck reports it first, naming the node)."""
from __future__ import annotations

from llvmlite import ir

from iree_py.errors import CompileError
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import I64, const_i64, element_ptr, entry_alloca, for_range
from iree_py.codegen.llvm.copy_common import attr_dim, fail_unless, require_same_dims
from iree_py.codegen.llvm.dims import begin_dynamic_kernel, product
from iree_py.ir.types import DType
from iree_py.targets import Target

FLOATS = {DType.f32: ir.FloatType(), DType.f64: ir.DoubleType()}
SIGNED = (DType.i8, DType.i16, DType.i32, DType.i64)
UNSIGNED = (DType.u8, DType.u16, DType.u32, DType.u64)
DTYPES = (*FLOATS, *SIGNED, *UNSIGNED)


def _compare(b: ir.IRBuilder, dtype: DType, op: str, x: ir.Value, y: ir.Value) -> ir.Value:
    if dtype in FLOATS:
        return b.fcmp_ordered(op, x, y)
    if dtype in SIGNED:
        return b.icmp_signed(op, x, y)
    return b.icmp_unsigned(op, x, y)


def _beyond(dtype: DType, elem: ir.Type, largest: bool) -> ir.Constant:
    """The value that comes before every element in the order: above all (largest) or below all."""
    if dtype in FLOATS:
        return ir.Constant(elem, float("inf") if largest else float("-inf"))
    bits = dtype.itemsize * 8
    if dtype in SIGNED:
        return ir.Constant(elem, (1 << (bits - 1)) - 1 if largest else -(1 << (bits - 1)))
    return ir.Constant(elem, (1 << bits) - 1 if largest else 0)


def build(spec: KernelSpec, module: ir.Module, target: Target) -> KernelInfo:
    what = f"topk kernel {spec.name}"
    if len(spec.inputs) != 1 or len(spec.outputs) != 1:
        raise ValueError(f"{what}: expects 1 input and 1 output")
    in_t, out_t = spec.inputs[0], spec.outputs[0]
    result = spec.attrs.get("result")
    if in_t.dtype not in DTYPES:
        raise CompileError(f"{what}: unsupported dtype {in_t.dtype.value} (supported: "
                           f"{', '.join(d.value for d in DTYPES)})")
    want = {"values": in_t.dtype, "indices": DType.i64}.get(result)
    if want is None or out_t.dtype != want:
        raise ValueError(f"{what}: result {result!r} wants {want} out, got {in_t} -> {out_t}")
    axis = int(spec.attrs["axis"])
    if not 0 <= axis < in_t.rank:
        raise ValueError(f"{what}: axis {axis} out of range for {in_t}")
    k_d, n_d = attr_dim(spec.attrs["k"]), in_t.shape[axis]
    outer_d, inner_d = product(in_t.shape[:axis]), product(in_t.shape[axis + 1:])
    if isinstance(k_d, int) and isinstance(n_d, int) and not 0 <= k_d <= n_d:
        raise ValueError(f"{what}: k {k_d} is more than the axis size {n_d} of {in_t}")
    largest = bool(spec.attrs.get("largest", 1))
    before, after = (">", "<") if largest else ("<", ">")
    elem = FLOATS.get(in_t.dtype, ir.IntType(in_t.dtype.itemsize * 8))
    align = min(4, in_t.dtype.itemsize)

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    require_same_dims(dk, [(out_t.element_count, product((outer_d, k_d, inner_d)), "output elements")], what)
    n, k, inner = dk.dim(n_d), dk.dim(k_d), dk.dim(inner_d)
    if not (isinstance(k_d, int) and isinstance(n_d, int)):
        fail_unless(dk, b.icmp_signed("<=", k, n), "k")
    src, dst = dk.binding(0), dk.binding(1)
    prev_v, prev_i = entry_alloca(b, elem, "prev_v"), entry_alloca(b, I64, "prev_i")
    best_v, best_i = entry_alloca(b, elem, "best_v"), entry_alloca(b, I64, "best_i")
    o = dk.workgroup_id_index(0)
    base = b.mul(o, dk.dim(product((n_d, inner_d))))
    out_base = b.mul(o, dk.dim(product((k_d, inner_d))))
    if k_d != 0 and inner_d != 0:
        with for_range(b, 0, inner, name="col") as col:
            b.store(_beyond(in_t.dtype, elem, largest), prev_v)
            b.store(const_i64(-1), prev_i)
            with for_range(b, 0, k, name="r") as r:
                b.store(const_i64(-1), best_i)
                b.store(ir.Constant(elem, 0), best_v)
                with for_range(b, 0, n, name="j") as j:
                    v = b.load(element_ptr(b, src, b.add(base, b.add(b.mul(j, inner), col)), elem), typ=elem,
                               align=align)
                    pv = b.load(prev_v)
                    past = _compare(b, in_t.dtype, after, v, pv)
                    tie_later = b.and_(_compare(b, in_t.dtype, "==", v, pv), b.icmp_signed(">", j, b.load(prev_i)))
                    eligible = b.or_(past, tie_later)
                    better = b.or_(b.icmp_signed("<", b.load(best_i), const_i64(0)),
                                   _compare(b, in_t.dtype, before, v, b.load(best_v)))
                    take = b.and_(eligible, better)
                    b.store(b.select(take, v, b.load(best_v)), best_v)
                    b.store(b.select(take, j, b.load(best_i)), best_i)
                b.store(b.load(best_v), prev_v)
                b.store(b.load(best_i), prev_i)
                at = b.add(out_base, b.add(b.mul(r, inner), col))
                if result == "values":
                    b.store(b.load(best_v), element_ptr(b, dst, at, elem), align=align)
                else:
                    b.store(b.load(best_i), element_ptr(b, dst, at, I64), align=4)
    dk.finish()
    return dk.info(workgroup_count=(outer_d, 1, 1))
