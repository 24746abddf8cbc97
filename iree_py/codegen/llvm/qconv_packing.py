"""QConv weights re-laid out at compile time for the dot-product kernel (llvm/qconv_dot.py).

The kernel reduces over k = (kh, kw, c) in runs of DOT_BYTES bytes, so the weight becomes

    W[M, C, KH, KW]  ->  W'[Mp, Kp]    W'[m, (kh * KW + kw) * C + c] = W[m, c, kh, kw] + w_offset

Mp = M rounded up to a multiple of DOT_CHANNELS, Kp = K = KH*KW*C rounded up to a multiple of
the kernel's step (DOT_BYTES; WIDE_DOT_BYTES with AVX512-VNNI); the padding is zero. With the
input's zero point x_zp and the weight's w_zp[m] (w_zp' = w_zp + w_offset), over every tap k < Kp
(padded taps read x_zp, so they add nothing):

    sum_k (x[k] - x_zp) (W'[m, k] - w_zp'[m])
      = sum_k x[k] W'[m, k]  -  w_zp'[m] * sum_k x[k]  -  x_zp * (sum_k W'[m, k] - Kp * w_zp'[m])

the reference's int32 sum over the taps inside the input (modulo 2**32, as the kernel computes it).
sum_k W'[m, k] is "w_sum" (per output channel, wrapped to int32); x_zp is a constant, or read at run
time for ConvInteger, and so is w_zp; the pixel sums sum_k x[k] are computed only when some
w_zp'[m] may be non-zero. On x86 with VNNI (u8 x i8 dot products, vpdpbusd) an i8 input is moved
to u8 (x + 128, "x_offset", and x_zp + 128 takes x_zp's place) and a u8 weight to i8 (w - 128,
"w_offset" -128); elsewhere both keep their types (llvm.vector.partial.reduce.add: sdot/udot on Arm).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from iree_py.codegen.llvm import qdepthwise
from iree_py.targets import Target
from iree_py.ir.graph import Value
from iree_py.ir.types import DType, TensorType

DOT_BYTES = 16       # bytes of one dot-product step: <16 x i8> -> <4 x i32> (sdot on Arm)
WIDE_DOT_BYTES = 64  # with AVX512-VNNI: <64 x i8> -> <16 x i32> (one zmm vpdpbusd)
DOT_CHANNELS = 4     # output channels per register block
DOT_ARCHS = ("aarch64", "x86_64")   # targets with 128-bit (or wider) integer SIMD the kernel is tuned for
QDTYPES = (DType.i8, DType.u8)


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def wants_dot_kernel(spec, weight: Value, target: Target) -> bool:
    """The dot-product kernel applies: a constant 4-D weight, one group, i8/u8 operands, static
    input channels (N, H, W may be symbolic), a target with integer SIMD."""
    a = spec.attrs
    if target.arch not in DOT_ARCHS or not weight.is_const or len(weight.type.shape) != 4:
        return False
    if len(spec.inputs[0].shape) != 4 or not isinstance(spec.inputs[0].shape[1], int) or int(a["group"]) != 1:
        return False
    return spec.inputs[0].dtype in QDTYPES and weight.type.dtype in QDTYPES


def pack_dot_weight(weight: np.ndarray, step: int = DOT_BYTES, w_offset: int = 0) -> np.ndarray:
    """W[M, C, KH, KW] -> W'[Mp, Kp] (+ w_offset), Kp a multiple of `step` (see the module docstring);
    the same dtype, or int8 for a u8 weight moved by w_offset -128."""
    m, c, kh, kw = weight.shape
    k = c * kh * kw
    dtype = np.dtype(np.int8) if w_offset else weight.dtype
    packed = np.zeros((round_up(m, DOT_CHANNELS), round_up(k, step)), dtype=dtype)
    packed[:m, :k] = (np.transpose(weight, (0, 2, 3, 1)).reshape(m, k).astype(np.int16) + w_offset).astype(dtype)
    return packed


def _x86_features(target: Target) -> set[str]:
    """The x86 features the target's kernels may use (this CPU's for `host`); empty off x86."""
    if target.arch != "x86_64":
        return set()
    if target.features == "host":
        import llvmlite.binding as llvm
        return {name for name, on in llvm.get_host_cpu_features().items() if on}
    return {f[1:] for f in target.features.split(",") if f.startswith("+")}


def x86_vnni_bytes(target: Target) -> int:
    """Bytes of the target's widest u8 x i8 dot product (vpdpbusd): 64 with AVX512-VNNI, 16 with
    AVX-VNNI, 0 without (or not x86)."""
    enabled = _x86_features(target)
    if {"avx512vnni", "avx512bw"} <= enabled:
        return WIDE_DOT_BYTES
    return DOT_BYTES if "avxvnni" in enabled or {"avx512vnni", "avx512vl"} <= enabled else 0


def dot_instruction(target: Target, x_dtype: DType, w_dtype: DType) -> tuple[str, int, int, int]:
    """(how the kernel multiplies, bytes per step, the offset added to every input byte, the offset
    added to every weight byte): ("vpdpbusd", 64 or 16, 128 for i8 X, -128 for u8 W) on x86 with
    VNNI (u8 x i8: X is moved to u8, W to i8); ("pmaddwd", 16, 0, 0) on x86 with AVX2 but no VNNI
    (bytes widened to i16, exact pair sums; LLVM's generic lowering of the partial reduction there
    multiplies in 32 bits and took 13.4 ms where this takes 4.2 on a 64 -> 64 3x3 conv of 56x56);
    else ("partial_reduce", 16, 0, 0): llvm.vector.partial.reduce.add, sdot/udot on Arm."""
    vnni = x86_vnni_bytes(target)
    if vnni:
        return "vpdpbusd", vnni, 128 if x_dtype == DType.i8 else 0, -128 if w_dtype == DType.u8 else 0
    if "avx2" in _x86_features(target):
        return "pmaddwd", DOT_BYTES, 0, 0
    return "partial_reduce", DOT_BYTES, 0, 0


def weight_sums(weight: np.ndarray) -> list[int]:
    """sum_k W[m, k] per output channel, wrapped to int32."""
    sums = weight.reshape(weight.shape[0], -1).astype(np.int64).sum(axis=1)
    return [int(v) for v in ((sums + (1 << 31)) % (1 << 32) - (1 << 31))]


def wants_depthwise_kernel(spec, target: Target) -> bool:
    """A depthwise QConv (multiplier 1) for the plane-at-a-time kernel (llvm/qdepthwise.py)."""
    if target.arch not in DOT_ARCHS or len(spec.inputs[0].shape) != 4 or len(spec.inputs[1].shape) != 4:
        return False
    if not spec.inputs[0].is_static or not spec.inputs[1].is_static:
        return False
    return qdepthwise.fits(tuple(int(d) for d in spec.inputs[0].shape), tuple(int(d) for d in spec.inputs[1].shape),
                           int(spec.attrs["group"]), tuple(spec.attrs["pads"]))


def choose_qconv_kernel(dispatch, target: Target):
    """The fastest QConv kernel for the target: "qdwconv" for depthwise convs; "qconv_dot" where
    the dot-product kernel applies (its weight binding becomes the packed constant, attrs gain
    weight_shape, dot, dot_bytes, x_offset, w_offset, w_sum). Any other dispatch: unchanged ("qconv")."""
    weight = dispatch.inputs[1]
    if dispatch.spec.kind != "qconv":
        return dispatch
    if wants_depthwise_kernel(dispatch.spec, target):
        return dataclasses.replace(dispatch, spec=dataclasses.replace(dispatch.spec, kind="qdwconv"))
    if not wants_dot_kernel(dispatch.spec, weight, target):
        return dispatch
    instruction, step, x_offset, w_offset = dot_instruction(target, dispatch.spec.inputs[0].dtype, weight.type.dtype)
    packed = pack_dot_weight(weight.const, step, w_offset)
    packed_value = Value(f"{weight.name}.dot", TensorType(DType.from_numpy(packed.dtype), packed.shape), const=packed)
    m = int(weight.type.shape[0])
    inputs = [dispatch.inputs[0], packed_value, *dispatch.inputs[2:]]
    attrs = {**dispatch.spec.attrs, "weight_shape": tuple(int(d) for d in weight.type.shape), "dot": instruction,
             "dot_bytes": step, "x_offset": x_offset, "w_offset": w_offset, "w_sum": weight_sums(packed[:m])}
    spec = dataclasses.replace(dispatch.spec, kind="qconv_dot", inputs=tuple(v.type for v in inputs), attrs=attrs)
    return dataclasses.replace(dispatch, spec=spec, inputs=inputs)
