"""Pad: the modes constant, reflect, edge, wrap and symmetric (TFLite MIRROR_PAD); negative pads crop.
Shape rule and numpy reference."""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.ir.dim_checks import at_least
from iree_py.ir.opdef import ANY_DTYPE, Kernel, OpDef
from iree_py.ir.symbols import Expr, dim, dim_text
from iree_py.ir.types import Dim, TensorType


PAD_MODES = ("constant", "reflect", "edge", "wrap", "symmetric")  # symmetric: TFLite MIRROR_PAD, edge repeated


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


def pad(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """Negative pads crop first; then numpy's pad modes (ONNX reflect = numpy reflect, symmetric,
    edge = edge, wrap = wrap)."""
    x = ins[0]
    rank = x.ndim
    pads = [int(p) for p in attrs["pads"]]
    crop = tuple(slice(max(-pads[i], 0), x.shape[i] - max(-pads[rank + i], 0)) for i in range(rank))
    x = x[crop]
    widths = [(max(pads[i], 0), max(pads[rank + i], 0)) for i in range(rank)]
    if attrs["mode"] == "constant":
        return np.pad(x, widths, mode="constant", constant_values=np.array(attrs["value"]).astype(x.dtype))
    return np.pad(x, widths, mode=attrs["mode"])


OP_DEFS = [
    OpDef("Pad", ("mode", "pads", "value"), 1, 1, _pad, dtypes=ANY_DTYPE),
]

KERNELS: dict[str, Kernel] = {"Pad": pad}
