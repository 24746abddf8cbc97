"""Shape rules of Resize, Pad, ArgMax/ArgMin and TopK (ops.py's table
takes RESIZE_PAD_OP_DEFS)."""
from __future__ import annotations

from typing import Any

from iree_py.ir.dim_checks import at_least
from iree_py.ir.opdef import ANY_DTYPE, OpDef, static_shape
from iree_py.ir.symbols import Expr, dim, dim_text
from iree_py.ir.types import Dim, DType, TensorType

PAD_MODES = ("constant", "reflect", "edge", "wrap", "symmetric")  # symmetric: TFLite MIRROR_PAD, edge repeated


_static = static_shape


def _resize(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x, index, weight = inputs
    shape = _static(x)
    sizes, taps = [int(d) for d in attrs["sizes"]], [int(n) for n in attrs["taps"]]
    if len(sizes) != len(shape) or len(taps) != len(shape):
        raise ValueError(f"Resize sizes {sizes} and taps {taps} need one entry per axis of {x}")
    if index.dtype != DType.i32 or weight.dtype != DType.f32:
        raise ValueError(f"Resize tables must be i32 indices and f32 weights, got {index} and {weight}")
    if x.dtype != DType.f32 and any(n > 1 for n in taps):
        raise ValueError(f"Resize of {x} blends several taps; only f32 does (other dtypes: nearest only)")
    for axis, (n, size, dim) in enumerate(zip(taps, sizes, shape)):
        if n < 0 or size < 0 or (n == 0 and size != dim):
            raise ValueError(f"Resize axis {axis}: {n} taps for {dim} -> {size}")
    entries = sum(n * size for n, size in zip(taps, sizes))
    if _static(index) != (entries,) or _static(weight) != (entries,):
        raise ValueError(f"Resize tables {index} and {weight} should have {entries} entries")
    return [TensorType(x.dtype, tuple(sizes))]


def pad_output_shape(shape: tuple[Dim, ...], pads: list[int]) -> tuple[Dim, ...]:
    """Each axis grown by its pads (negative pads crop); a symbolic axis gets a run-time check that
    it is not cropped below 0."""
    rank = len(shape)
    if len(pads) != 2 * rank:
        raise ValueError(f"pads {pads} need {2 * rank} values for rank {rank}")
    out = tuple(dim(Expr.of(d) + pads[i] + pads[rank + i]) for i, d in enumerate(shape))
    if any(isinstance(d, int) and d < 0 for d in out):
        raise ValueError(f"pads {pads} crop more than shape {list(shape)} holds")
    for axis, d in enumerate(out):
        if isinstance(d, Expr):
            at_least(d, 0, f"Pad axis {axis} ({shape[axis]}) cropped by pads {pads}")
    return out


def _pad(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    shape = inputs[0].shape
    if attrs["mode"] not in PAD_MODES:
        raise ValueError(f"Pad mode {attrs['mode']!r} is not one of {list(PAD_MODES)}")
    pads = [int(p) for p in attrs["pads"]]
    out = pad_output_shape(shape, pads)
    kept = [dim(Expr.of(d) - max(-pads[i], 0) - max(-pads[len(shape) + i], 0)) for i, d in enumerate(shape)]
    if attrs["mode"] != "constant":
        if any(isinstance(k, int) and k <= 0 for k in kept):
            raise ValueError(f"Pad mode {attrs['mode']} cannot pad an axis of {inputs[0]} cropped to nothing by {pads}")
        for axis, k in enumerate(kept):
            if isinstance(k, Expr):
                at_least(k, 1, f"Pad mode {attrs['mode']} keeps a non-empty axis {axis}")
    if attrs["mode"] == "reflect":
        rank = len(shape)
        for axis, k in enumerate(kept):
            for side, p in (("begin", pads[axis]), ("end", pads[rank + axis])):
                cropped = f" cropped to {dim_text(k)}" if k != shape[axis] else ""
                _reflect_fits(p, k, f"Pad mode reflect needs axis {axis} ({dim_text(shape[axis])}{cropped}) longer "
                                    f"than its {side} pad {p}")
    return [TensorType(inputs[0].dtype, out)]


def _reflect_fits(pad: int, kept: Dim, what: str) -> None:
    """reflect mirrors without the edge, so a pad must stay below the (cropped) axis (ONNX and
    TFLite MIRROR_PAD allow no more): refused for an int axis, a run-time check for a symbolic one."""
    if pad <= 0:
        return
    if isinstance(kept, int):
        if pad > kept - 1:
            raise ValueError(what)
        return
    at_least(kept, pad + 1, what)


def _arg(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    shape = inputs[0].shape
    axis = attrs["axis"]
    if not 0 <= axis < len(shape) or shape[axis] == 0:
        raise ValueError(f"axis {axis} out of range (or empty) for {inputs[0]}")
    if isinstance(shape[axis], Expr):
        at_least(shape[axis], 1, f"reduced axis {axis} is not empty")
    if attrs["keepdims"] not in (0, 1) or attrs["select_last_index"] not in (0, 1):
        raise ValueError(f"keepdims {attrs['keepdims']} and select_last_index {attrs['select_last_index']} must be 0/1")
    out = tuple(1 if i == axis else d for i, d in enumerate(shape)) if attrs["keepdims"] else \
        tuple(d for i, d in enumerate(shape) if i != axis)
    return [TensorType(DType.i64, out)]


def _topk(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    shape = inputs[0].shape
    axis, k = attrs["axis"], attrs["k"]
    k = dim(k) if isinstance(k, Expr) else int(k)
    if not 0 <= axis < len(shape):
        raise ValueError(f"TopK axis {axis} / k {k} out of range for {inputs[0]}")
    try:
        if isinstance(k, int) and k < 0:
            raise ValueError("k < 0")
        at_least(shape[axis], k, f"TopK k {k} <= axis {axis}")
    except ValueError:
        raise ValueError(f"TopK axis {axis} / k {k} out of range for {inputs[0]}") from None
    if attrs["result"] not in ("values", "indices") or attrs["largest"] not in (0, 1):
        raise ValueError(f"TopK result {attrs['result']!r} must be values/indices, largest 0/1")
    out = tuple(k if i == axis else d for i, d in enumerate(shape))
    return [TensorType(inputs[0].dtype if attrs["result"] == "values" else DType.i64, out)]


RESIZE_PAD_OP_DEFS = [
    OpDef("Resize", ("extrapolation_value", "sizes", "taps"), 3, 3, _resize, dtypes=ANY_DTYPE),
    OpDef("Pad", ("mode", "pads", "value"), 1, 1, _pad, dtypes=ANY_DTYPE),
    OpDef("ArgMax", ("axis", "keepdims", "select_last_index"), 1, 1, _arg),
    OpDef("ArgMin", ("axis", "keepdims", "select_last_index"), 1, 1, _arg),
    # ONNX TopK's two outputs are two single-output nodes; result says which one.
    OpDef("TopK", ("axis", "k", "largest", "result"), 1, 1, _topk,
          dtypes=frozenset({DType.f32, DType.f64, DType.i8, DType.i16, DType.i32, DType.i64,  # rt_datadep
                            DType.u8, DType.u16, DType.u32, DType.u64})),
]
