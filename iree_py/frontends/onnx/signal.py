"""ONNX DFT (17, 20) and the window ops (HannWindow, HammingWindow, BlackmanWindow, 17) -> normalized ops.

DFT is linear in the real and imaginary parts of its input, so along one axis it is one MatMul with
a constant real matrix W [n * c_in, k * c_out] (c: 1 for real, 2 for complex values). W is built at
import by transforming each basis vector with numpy's FFT (float64, then rounded to float32), which
covers every variant at once: forward / inverse, onesided (rfft / irfft) and dft_length padding or
truncation. The axis moves next to the last (real/imaginary) axis, the two are flattened, multiplied,
and moved back.

Opset 20 takes the axis as an input. A run-time axis gives one MatMul per axis it could name and
Where picks the result, which needs the same result shape along every candidate axis.

Windows of a constant size are constants (float32 unless output_datatype says otherwise).

A window of a size given at run time: the size is read as a symbol n; the window is
sum_k (-1)^k a_k cos(2 pi k i / N) over i = iota(n), N = size (periodic) or size - 1 (symmetric),
in float32, cast to output_datatype.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np
import onnx.helper

from iree_py.frontends.onnx.compose import Converter, reshape, shape_of, transpose
from iree_py.frontends.onnx.symbolic import INDEX_DTYPES, _cast, _const, _length_symbol, _scalar, iota
from iree_py.ir.graph import Value
from iree_py.ir.types import DType

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


AXIS_DTYPES = (DType.i32, DType.i64)


def dft_matrix(n: int, c_in: int, length: int, inverse: bool, onesided: bool) -> np.ndarray:
    """W [n * c_in, k * c_out]: row j is the transform of the j-th basis input ([n, c_in] flattened)."""
    basis = np.eye(n * c_in).reshape(n * c_in, n, c_in)
    signal = basis[..., 0] + 1j * basis[..., 1] if c_in == 2 else basis[..., 0]
    if inverse and onesided:
        out = np.fft.irfft(signal, n=length, axis=1)[..., np.newaxis]
    else:
        spectrum = np.fft.ifft(signal, n=length, axis=1) if inverse else np.fft.fft(signal, n=length, axis=1)
        if onesided and not inverse:
            spectrum = spectrum[:, :length // 2 + 1]
        out = np.stack([spectrum.real, spectrum.imag], axis=-1)
    return out.reshape(n * c_in, -1).astype(np.float32)


def _dft_along(ctx: "OnnxContext", x: Value, axis: int, length: int | None, inverse: bool, onesided: bool,
               out: int | None) -> Value:
    shape = shape_of(x)
    rank, n, c_in = len(shape), shape[axis], shape[-1]
    if length is None:
        length = 2 * (n - 1) if inverse and onesided else n
    if length < 1:
        raise ctx.error(f"DFT length {length} along axis {axis} of {x.type} is empty")
    w = dft_matrix(n, c_in, length, inverse, onesided)
    c_out = 1 if inverse and onesided else 2
    perm = [a for a in range(rank - 1) if a != axis] + [axis, rank - 1]
    moved = transpose(ctx, x, perm)
    flat = reshape(ctx, moved, (*shape_of(moved)[:-2], n * c_in))
    y = ctx.emit("MatMul", [flat, ctx.const(w, "dft_matrix")])
    k = w.shape[1] // c_out
    y = reshape(ctx, y, (*shape_of(moved)[:-2], k, c_out))
    back = [perm.index(a) for a in range(rank)]
    return transpose(ctx, y, back, out=out)


def _dft_length(ctx: "OnnxContext") -> int | None:
    if not ctx.has_input(1):
        return None
    length = int(np.asarray(ctx.const_input(1, "dft_length")).reshape(-1)[0])
    if length < 1:
        raise ctx.error(f"dft_length {length} (input 1) must be positive")
    return length


def _runtime_axis(ctx: "OnnxContext", x: Value, axis_value: Value, length: int | None, inverse: bool,
                  onesided: bool) -> Value:
    rank = x.type.rank
    candidates = [_dft_along(ctx, x, a, length, inverse, onesided, None) for a in range(rank - 1)]
    shapes = {shape_of(v) for v in candidates}
    if len(shapes) != 1:
        raise ctx.error(f"axis (input 2) is computed at run time and the result shape depends on it "
                        f"({sorted(shapes)}); iree-py needs static shapes")
    dtype = axis_value.type.dtype.numpy
    axis = reshape(ctx, axis_value, ())
    negative = ctx.emit("Less", [axis, ctx.const(np.array(0, dtype), "zero")])
    axis = ctx.emit("Where", [negative, ctx.emit("Add", [axis, ctx.const(np.array(rank, dtype), "rank")]), axis])
    chosen = candidates[-1]
    for a in range(rank - 3, -1, -1):
        picked = ctx.emit("Equal", [axis, ctx.const(np.array(a, dtype), f"axis_{a}")])
        chosen = ctx.emit("Where", [picked, candidates[a], chosen], out=0 if a == 0 else None)
    if rank == 2:
        chosen = reshape(ctx, chosen, shape_of(chosen), out=0)
    return chosen


def dft(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    if x.type.dtype != DType.f32:
        raise ctx.error(f"input {x.type} is not supported; only float32")
    shape = shape_of(x)
    if len(shape) < 2 or shape[-1] not in (1, 2):
        raise ctx.error(f"input {x.type} must be [..., n, 1] (real) or [..., n, 2] (complex)")
    inverse, onesided = bool(ctx.attr("inverse", 0)), bool(ctx.attr("onesided", 0))
    if inverse and onesided and shape[-1] != 2:
        raise ctx.error(f"an inverse onesided DFT needs complex input, got {x.type}")
    length = _dft_length(ctx)
    rank = len(shape)
    if ctx.opset < 20:
        axis = int(ctx.attr("axis", 1))
    elif not ctx.has_input(2):
        axis = -2
    elif not ctx.input(2).is_const:
        axis_value = ctx.input(2)
        if axis_value.type.dtype not in AXIS_DTYPES or axis_value.type.num_elements != 1:
            raise ctx.error(f"axis (input 2) {axis_value.type} must be one int32 or int64 value")
        return [_runtime_axis(ctx, x, axis_value, length, inverse, onesided)]
    else:
        axis = int(np.asarray(ctx.input(2).const).reshape(-1)[0])
    if not -rank <= axis < rank or axis % rank == rank - 1:
        raise ctx.error(f"axis {axis} must name an axis of {x.type} other than the last (real/imaginary)")
    return [_dft_along(ctx, x, axis % rank, length, inverse, onesided, out=0)]


def _window(coefficients: tuple[float, ...]) -> Callable[["OnnxContext"], list[Value]]:
    """sum_k (-1)^k a_k cos(2 pi k i / N), N = size (periodic) or size - 1 (symmetric)."""
    def convert(ctx: "OnnxContext") -> list[Value]:
        size = int(np.asarray(ctx.const_input(0, "size")).reshape(-1)[0])
        if size < 1:
            raise ctx.error(f"size {size} (input 0) must be positive")
        periodic = bool(ctx.attr("periodic", 1))
        n = size if periodic else size - 1
        i = np.arange(size, dtype=np.float64)
        window = np.zeros(size)
        for k, a in enumerate(coefficients):
            window += (-1) ** k * a * np.cos(2 * np.pi * k * i / n) if n else (a if k == 0 else 0.0)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(int(ctx.attr("output_datatype", onnx.TensorProto.FLOAT)))
        return [ctx.const(window.astype(dtype), out=0)]
    return convert


HAMMING_ALPHA = 25.0 / 46.0


def _runtime_window(ctx: "OnnxContext", coefficients: tuple[float, ...]) -> Value:
    size = ctx.input(0)
    if size.type.dtype not in INDEX_DTYPES or size.type.num_elements != 1:
        raise ctx.error(f"size (input 0) {size.type} must be one int32 or int64 value")
    size = _cast(ctx, _scalar(ctx, size), DType.i64)
    zero = ctx.const(np.array(0, np.int64), "zero")
    n = _length_symbol(ctx, ctx.emit("Max", [size, zero]), "window size")
    periodic = bool(ctx.attr("periodic", 1))
    period = size if periodic else ctx.emit("Sub", [size, ctx.const(np.array(1, np.int64), "one")])
    phase = ctx.emit("Div", [ctx.emit("Mul", [iota(ctx, n, DType.f32), _const(ctx, 2 * np.pi, DType.f32, "two_pi")]),
                             _cast(ctx, period, DType.f32)])
    window: Value | None = None
    for k, a in enumerate(coefficients):
        if k == 0:
            term = ctx.emit("Mul", [ctx.emit("Expand", [_const(ctx, 1.0, DType.f32, "one_f")], {"shape": [n]}),
                                    _const(ctx, a, DType.f32, "a0")])
        else:
            angle = phase if k == 1 else ctx.emit("Mul", [phase, _const(ctx, float(k), DType.f32, f"k{k}")])
            term = ctx.emit("Mul", [ctx.emit("Cos", [angle]), _const(ctx, (-1) ** k * a, DType.f32, f"a{k}")])
        window = term if window is None else ctx.emit("Add", [window, term])
    assert window is not None
    out_type = int(ctx.attr("output_datatype", onnx.TensorProto.FLOAT))
    out_dtype = DType.from_numpy(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(out_type)))
    return _cast(ctx, window, out_dtype, out=0)


def runtime_window(static: Callable[["OnnxContext"], list[Value]],
                   coefficients: tuple[float, ...]) -> Callable[["OnnxContext"], list[Value]]:
    """The window converter: `static` for a constant size, else the window computed at run time."""
    def convert(ctx: "OnnxContext") -> list[Value]:
        if ctx.input(0).is_const:
            return static(ctx)
        return [_runtime_window(ctx, coefficients)]
    return convert


WINDOWS = {"HannWindow": (0.5, 0.5), "HammingWindow": (HAMMING_ALPHA, 1.0 - HAMMING_ALPHA),
           "BlackmanWindow": (0.42, 0.5, 0.08)}

CONVERTERS: dict[str, Converter] = {
    "DFT": dft,
    **{op: runtime_window(_window(a), a) for op, a in WINDOWS.items()},
}
