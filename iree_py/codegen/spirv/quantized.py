"""MatMulInteger and ConvInteger on SPIR-V: the "qmatmul" and "qconv" kernels without
requantization (requant "none", the int32 sums; requantizing ones are refused by plan.py), as the
CPU kernels (codegen/llvm/qmatmul.py, qconv.py): every product (x - x_zp) * (w - w_zp) of i8/u8
operands summed in i32, wrapping modulo 2**32, plus an optional i32 bias per output channel. Zero
points are attributes (an int, or a list per channel for W) or bindings (attrs operands): X's per
tensor (MatMulInteger: or per row, element row % M), W's per tensor or per output channel.
- qmatmul: A[..., M, K] @ B[K, N] or B[..., K, N] (A's batch dims);
- qconv: X[N, C, H, W] * W[M, C/group, KH, KW] as conv2d (strides, pads, dilations, group); a
  padded position adds nothing (it holds x_zp).
One invocation per output element."""
from __future__ import annotations

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.spirv.builder import KernelBuilder, Value
from iree_py.codegen.spirv.conv import window_taps
from iree_py.codegen.spirv.indexing import Dim, dims, product, unravel
from iree_py.codegen.spirv.scalars import load, scalar
from iree_py.ir.types import DType

DEFAULT_OPERANDS = ("x", "w", "bias")  # the roles of the inputs when attrs has no operands (llvm/requant.py)
NO_REQUANT = "none"
QUANTIZED = (DType.i8, DType.u8)


def operand_roles(spec: KernelSpec) -> dict[str, int]:
    """Role ("x", "w", "bias", "x_zero_point", "w_zero_point") -> input binding."""
    roles = spec.attrs.get("operands", DEFAULT_OPERANDS[:len(spec.inputs)])
    return {role: i for i, role in enumerate(roles)}


def element_types(spec: KernelSpec) -> list[str]:
    return [scalar(t.dtype).storage for t in spec.inputs] + ["i32"]


def refusal(spec: KernelSpec) -> str | None:
    if spec.attrs.get("requant") != NO_REQUANT:
        return f"{spec.kind} with requantization (requant {spec.attrs.get('requant')!r}; it builds {NO_REQUANT!r})"
    roles = operand_roles(spec)
    if "x" not in roles or "w" not in roles:
        return f"{spec.kind} operands {tuple(roles)}"
    for role, i in roles.items():
        want = (DType.i32,) if role == "bias" else QUANTIZED
        if spec.inputs[i].dtype not in want:
            return f"{spec.kind} {role} of dtype {spec.inputs[i].dtype.value}"
    if spec.kind == "qconv" and len(spec.inputs[roles["x"]].shape) != 4:
        return f"qconv on rank {len(spec.inputs[roles['x']].shape)} (2-D windows only)"
    return None


def _zero_point(b: KernelBuilder, spec: KernelSpec, role: str, channel: Value) -> Value:
    """The zero point for a row (x) or output channel (w): its binding's element (element 0 when it holds
    one), else the attribute (an int, or a per-column list)."""
    roles = operand_roles(spec)
    if role in roles:
        t = spec.inputs[roles[role]]
        return load(b, roles[role], channel if int(t.shape[0]) > 1 else b.int(0), scalar(t.dtype))
    values = spec.attrs.get(role, 0)
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    value = b.int(int(values[0]))
    for i, v in enumerate(values[1:], start=1):  # a per-channel list: chosen by comparisons
        value = b.select(channel.eq(i), b.int(int(v)), value)
    return value


def build_qmatmul(b: KernelBuilder, spec: KernelSpec) -> Dim:
    roles = operand_roles(spec)
    x, w = roles["x"], roles["w"]
    a_shape, b_shape = dims(spec.inputs[x]), dims(spec.inputs[w])
    m, k, n = a_shape[-2], a_shape[-1], b_shape[-1]
    a_type, b_type = scalar(spec.inputs[x].dtype), scalar(spec.inputs[w].dtype)
    batched = len(b_shape) > 2
    total = product([*a_shape[:-1], n])
    with b.for_each(total) as index:
        row, col = index / b.dim(n), index % b.dim(n)
        a_zp = _zero_point(b, spec, "x_zero_point", row % b.dim(m))
        b_zp = _zero_point(b, spec, "w_zero_point", col)
        b_start = (row / b.dim(m)) * b.dim(product([k, n])) if batched else b.int(0)
        acc = b.variable("i32", b.load(roles["bias"], col) if "bias" in roles else b.int(0))
        with b.loop(0, b.dim(k)) as i:
            av = load(b, x, row * b.dim(k) + i, a_type) - a_zp
            bv = load(b, w, b_start + i * b.dim(n) + col, b_type) - b_zp
            acc.set(acc.get() + av * bv)
        b.store(len(spec.inputs), index, acc.get())
    return total


def build_qconv(b: KernelBuilder, spec: KernelSpec) -> Dim:
    roles = operand_roles(spec)
    x, w = roles["x"], roles["w"]
    x_type, w_type = scalar(spec.inputs[x].dtype), scalar(spec.inputs[w].dtype)
    out_shape = dims(spec.outputs[0])
    total = product(out_shape)
    with b.for_each(total) as index:
        n, oc, oh, ow = unravel(b, index, out_shape)
        x_zp = _zero_point(b, spec, "x_zero_point", b.int(0))
        w_zp = _zero_point(b, spec, "w_zero_point", oc)
        acc = b.variable("i32", b.load(roles["bias"], oc) if "bias" in roles else b.int(0))
        taps = window_taps(b, spec, dims(spec.inputs[x]), dims(spec.inputs[w]), n, oc, oh, ow)
        with taps as (x_at, w_at):
            acc.set(acc.get() + (load(b, x, x_at, x_type) - x_zp) * (load(b, w, w_at, w_type) - w_zp))
        b.store(len(spec.inputs), index, acc.get())
    return total
